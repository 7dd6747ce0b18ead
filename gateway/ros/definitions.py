"""ROS 2 `.msg` text of a type, and the full `ros2msg` schema text rosbag2 and MCAP write.

`msg_text(msg)` is one `.msg` file: the constants (`int32 INVALID=-1`), then one `type name` line
per field, nested types written `pkg/Type`. `schema_text(msg)` is what rosbag2's MCAP storage puts
in a schema record of encoding `ros2msg`: the root's `.msg` text, then each type it depends on
(depth first, each once) after a line of 80 `=` and a line `MSG: pkg/Type`.
"""

from __future__ import annotations

from gateway.ros.types import MsgType

#: What separates one definition from the next in a schema text (rosbag2, gendeps, rosbags).
SEPARATOR = "=" * 80


def _constant_value(value: int | float) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def msg_text(msg: MsgType) -> str:
    """The `.msg` definition of `msg`: its constants, then its fields, a line each (empty for an empty message).

    rosidl adds `EMPTY_MEMBER` to a message without fields when it generates code, not to its text.
    """
    lines = [f"{constant.type} {constant.name}={_constant_value(constant.value)}" for constant in msg.constants]
    lines.extend(f"{field.type.text()} {field.name}" for field in msg.fields)
    return "".join(line + "\n" for line in lines)


def schema_text(msg: MsgType) -> str:
    """The `ros2msg` schema of `msg` with every type it depends on, as rosbag2 writes it into MCAP."""
    parts = [msg_text(msg)]
    parts.extend(f"{SEPARATOR}\nMSG: {nested.short_name}\n{msg_text(nested)}" for nested in msg.dependencies())
    return "".join(parts)
