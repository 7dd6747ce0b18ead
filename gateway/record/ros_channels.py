"""The recording's own channels in a ros2 bag: their ROS 2 topics, message types and plain values.

A ros2 recording keeps what the JSON one keeps (`gateway.record.channels`) on hidden ROS topics
(a leading `_` hides them from `ros2 topic list`, not from `ros2 bag info` or `play`):

- `/_gateway/device`, `hwgateway/msg/DeviceEvent`: every availability or lock change;
- `/_gateway/command`, `hwgateway/msg/CommandRecord`: each command when the gateway receives it;
- `/_gateway/command_result`, `hwgateway/msg/CommandResultRecord`: its answer.

ROS has no null and no free-form field: an absent `locked_by` or error is "", and a command's or
result's `data` is its JSON text (`data_json`). `to_ros(topic, json_value)` gives the plain ROS value
of a record, `from_ros(topic, ros_value)` the JSON value back (as the JSON recording holds it).
"""

from __future__ import annotations

from typing import Annotated, Any

import orjson

from gateway.messages.schema import Bool, Float, Int, Str, structure
from gateway.record.channels import COMMAND_TOPIC, DEVICE_TOPIC, RESULT_TOPIC
from gateway.ros.typesupport import TypeSupport, for_class

_STR = Str()
_F64 = Float(64)


@structure
class DeviceEvent:
    """hwgateway/msg/DeviceEvent: a device's availability; `stamp` in s since the epoch, `locked_by` "" when none."""

    device: Annotated[str, _STR] = ""
    kind: Annotated[str, _STR] = ""
    status: Annotated[str, _STR] = ""
    detail: Annotated[str, _STR] = ""
    stamp: Annotated[float, _F64] = 0.0
    locked_by: Annotated[str, _STR] = ""


@structure
class CommandRecord:
    """hwgateway/msg/CommandRecord: a command as received; `data_json` its data as JSON, `stamp` s since the epoch."""

    command: Annotated[int, Int(64, False)] = 0
    client: Annotated[str, _STR] = ""
    device: Annotated[str, _STR] = ""
    type: Annotated[str, _STR] = ""
    data_json: Annotated[str, _STR] = ""
    stamp: Annotated[float, _F64] = 0.0


@structure
class CommandResultRecord:
    """hwgateway/msg/CommandResultRecord: a command's answer; `latency_s` receipt to answer, s; "" error when ok."""

    command: Annotated[int, Int(64, False)] = 0
    client: Annotated[str, _STR] = ""
    device: Annotated[str, _STR] = ""
    type: Annotated[str, _STR] = ""
    ok: Annotated[bool, Bool()] = False
    data_json: Annotated[str, _STR] = ""
    error_code: Annotated[str, _STR] = ""
    error_message: Annotated[str, _STR] = ""
    latency_s: Annotated[float, _F64] = 0.0
    stamp: Annotated[float, _F64] = 0.0


#: The ROS 2 topic of each own channel (the bus topic with a leading `/`).
ROS_TOPICS = {DEVICE_TOPIC: "/" + DEVICE_TOPIC, COMMAND_TOPIC: "/" + COMMAND_TOPIC, RESULT_TOPIC: "/" + RESULT_TOPIC}
#: The type support of each own channel, by bus topic.
SUPPORTS: dict[str, TypeSupport] = {
    DEVICE_TOPIC: for_class(DeviceEvent),
    COMMAND_TOPIC: for_class(CommandRecord),
    RESULT_TOPIC: for_class(CommandResultRecord),
}
#: The bus topic of each own channel's ROS topic.
BUS_TOPICS = {ros: bus for bus, ros in ROS_TOPICS.items()}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _json(value: object) -> str:
    return orjson.dumps(value, default=str).decode()


def to_ros(topic: str, value: dict[str, Any]) -> dict[str, Any]:
    """The plain ROS value of an own channel's record (`value` as the JSON recording holds it)."""
    if topic == DEVICE_TOPIC:
        return {key: _text(value.get(key)) for key in ("device", "kind", "status", "detail", "locked_by")} | {
            "stamp": _number(value.get("stamp"))
        }
    common = {
        "command": int(value.get("command") or 0) & 0xFFFFFFFFFFFFFFFF,
        "client": _text(value.get("client")),
        "device": _text(value.get("device")),
        "type": _text(value.get("type")),
        "data_json": _json(value.get("data")),
        "stamp": _number(value.get("stamp")),
    }
    if topic == COMMAND_TOPIC:
        return common
    found = value.get("error")
    error: dict[str, Any] = found if isinstance(found, dict) else {}
    return common | {
        "ok": bool(value.get("ok")),
        "error_code": _text(error.get("code")),
        "error_message": _text(error.get("message")),
        "latency_s": _number(value.get("latency_s")),
    }


def from_ros(topic: str, value: dict[str, Any]) -> dict[str, Any]:
    """The JSON recording's value of an own channel's ROS value (the inverse of `to_ros`)."""
    if topic == DEVICE_TOPIC:
        return value | {"locked_by": value["locked_by"] or None}
    out = {key: item for key, item in value.items() if key not in ("data_json", "error_code", "error_message")}
    try:
        out["data"] = orjson.loads(value["data_json"])
    except orjson.JSONDecodeError:
        out["data"] = value["data_json"]
    if topic == RESULT_TOPIC:
        code = value["error_code"]
        out["error"] = {"code": code, "message": value["error_message"]} if code else None
    return out
