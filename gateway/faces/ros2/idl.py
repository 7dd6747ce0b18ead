"""Cyclone's declaration of a ROS 2 message type, made from the shared type layer's description.

Cyclone checks every raw sample a writer is given against the topic's type (a sample that does not
fit is refused with BAD_PARAMETER) and announces the type's XTypes description to the other
participants, so each topic gets the real layout: `idl_type(msg)` declares it from
`gateway.ros.types.MsgType` (the same description the CDR encoder and the RIHS01 hash come from).
It declares only; the bytes still come from the layer's encoder.

Classes are declared at run time (`declare`, through Cyclone's `make_idl_struct`), with their
annotations as objects: Cyclone reads them when a topic is made.
"""

from typing import Any, cast

from cyclonedds.idl import make_idl_struct
from cyclonedds.idl import types as idl

from gateway.ros.types import EMPTY_MEMBER, FieldType, MsgType
from gateway.ros.typesupport import dds_type_name

_PRIMITIVES: dict[str, Any] = {
    "bool": bool,
    "int8": idl.int8,
    "uint8": idl.uint8,
    "int16": idl.int16,
    "uint16": idl.uint16,
    "int32": idl.int32,
    "uint32": idl.uint32,
    "int64": idl.int64,
    "uint64": idl.uint64,
    "float32": idl.float32,
    "float64": idl.float64,
    "string": str,
}

_DECLARED: dict[str, type[Any]] = {}


def fixed(element: Any, length: int) -> Any:
    """Cyclone's `T[length]` (its type classes are indexed at run time; their stubs do not say so)."""
    return cast(Any, idl.array)[element, length]


def sequence(element: Any) -> Any:
    """Cyclone's unbounded `sequence<T>`."""
    return cast(Any, idl.sequence)[element]


def bounded_string(length: int) -> Any:
    """Cyclone's `string<length>`."""
    return cast(Any, idl.bounded_str)[length]


def declare(python_name: str, dds_name: str, fields: dict[str, Any]) -> type[Any]:
    """A Cyclone struct (an `IdlStruct` dataclass) named `dds_name` with `fields` (name -> Cyclone type) in order.

    Cyclone's own factory: its metaclass prepares the namespace the annotations must go in, and the
    dataclass gives the constructor (a class body made otherwise has neither). Typed `type[Any]`: its
    fields exist at run time only.
    """
    return cast(type[Any], make_idl_struct(python_name, dds_name, fields))


def _field(field_type: FieldType) -> Any:
    nested = field_type.nested
    element = idl_type(nested) if nested is not None else _PRIMITIVES[field_type.base]
    if field_type.array == "fixed":
        return fixed(element, field_type.length)
    if field_type.array == "sequence":
        return sequence(element)
    return element


def idl_type(msg: MsgType) -> type[Any]:
    """The Cyclone struct of `msg` named `pkg::msg::dds_::Type_`, with its fields in order (made once per type)."""
    known = _DECLARED.get(msg.name)
    if known is not None:
        return known
    fields: dict[str, Any] = {field.name: _field(field.type) for field in msg.fields}
    if msg.empty:
        fields[EMPTY_MEMBER] = idl.uint8

    declared = declare("Idl_" + msg.name.replace("/", "_"), dds_type_name(msg.name), fields)
    _DECLARED[msg.name] = declared
    return declared
