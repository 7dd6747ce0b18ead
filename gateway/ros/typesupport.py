"""Type support of one ROS 2 message type: everything a ROS 2 face or recording needs of it, made once.

`for_bus_type("wiimote/State")` or `for_class(cls)` gives a `TypeSupport`: the ROS 2 name, the
`.msg` text, the `ros2msg` schema text, the RIHS01 hash, and the CDR encoder and decoder. `JOY` is
`sensor_msgs/msg/Joy` (`gateway.ros.joy`). There is one of each per type: a face and a recording
share it ("never two encoders for one type").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gateway.messages import REGISTRY
from gateway.ros import cdr, definitions, rihs
from gateway.ros.joy import Joy
from gateway.ros.types import MsgType, msg_type


@dataclass(frozen=True, eq=False, slots=True)
class TypeSupport:
    """One ROS 2 message type.

    `name`: `pkg/msg/Type` (a service request `pkg/srv/Type_Request`); `dds_name`: the DDS type name
    rmw uses (`pkg::msg::dds_::Type_`); `definition`: its `.msg` text; `schema`: the `ros2msg` text
    with its dependencies; `hash`: `RIHS01_<hex>`; `encode(plain dict or dataclass) -> bytes` and
    `decode(bytes) -> plain dict`, CDR with its 4-byte header (both raise `gateway.ros.cdr.CdrError`).
    """

    msg: MsgType
    name: str
    dds_name: str
    definition: str
    schema: str
    hash: str
    encode: Callable[[Any], bytes]
    decode: Callable[[bytes], dict[str, Any]]


_SUPPORT: dict[type[Any], TypeSupport] = {}


def dds_type_name(name: str) -> str:
    """The DDS type name of a ROS 2 type (`std_msgs/msg/String` -> `std_msgs::msg::dds_::String_`)."""
    package, kind, type_name = name.split("/")
    return f"{package}::{kind}::dds_::{type_name}_"


def for_class(cls: type[Any]) -> TypeSupport:
    """The type support of a message class (a bus type, a nested structure or `Joy`), made once."""
    known = _SUPPORT.get(cls)
    if known is None:
        msg = msg_type(cls)
        known = _SUPPORT[cls] = TypeSupport(
            msg=msg,
            name=msg.name,
            dds_name=dds_type_name(msg.name),
            definition=definitions.msg_text(msg),
            schema=definitions.schema_text(msg),
            hash=rihs.type_hash(msg),
            encode=cdr.encoder(msg),
            decode=cdr.decoder(msg),
        )
    return known


def for_bus_type(bus_type: str) -> TypeSupport:
    """The type support of a bus type (`wiimote/State`); KeyError when no such type is registered."""
    return for_class(REGISTRY[bus_type].cls)


JOY = for_class(Joy)
