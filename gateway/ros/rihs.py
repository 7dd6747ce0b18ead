"""RIHS01 type hashes, computed as rosidl computes them (`rosidl_generator_type_description`).

The hash is `RIHS01_` + the hex SHA-256 of the type description's JSON: `{"type_description":
{"type_name", "fields"}, "referenced_type_descriptions": [...]}`, the referenced types (every type
nested at any depth) sorted by name, each field `{"name", "type": {"type_id", "capacity",
"string_capacity", "nested_type_name"}}` (default values left out), dumped with `", "` and `": "`
separators in that key order. Constants are not part of it. ROS 2 Iron and later put it in bag
metadata, MCAP channel metadata and DDS endpoint USER_DATA (`typehash=RIHS01_<hex>;`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from gateway.ros.types import EMPTY_MEMBER, FieldType, MsgType

PREFIX = "RIHS01_"

#: rosidl's `type_description_interfaces/FieldType` ids of the primitives.
_TYPE_IDS = {
    "int8": 2, "uint8": 3, "int16": 4, "uint16": 5, "int32": 6, "uint32": 7, "int64": 8, "uint64": 9,
    "float32": 10, "float64": 11, "bool": 15, "string": 17,
}  # fmt: skip
_NESTED_TYPE_ID = 1
#: Added to a type id for a fixed array, a bounded sequence and an unbounded sequence.
_ARRAY_OFFSET, _SEQUENCE_OFFSET = 48, 144

_cache: dict[str, str] = {}


def _field_type(field_type: FieldType) -> dict[str, Any]:
    type_id = _NESTED_TYPE_ID if field_type.nested is not None else _TYPE_IDS[field_type.base]
    if field_type.array == "fixed":
        type_id += _ARRAY_OFFSET
    elif field_type.array == "sequence":
        type_id += _SEQUENCE_OFFSET
    return {
        "type_id": type_id,
        "capacity": field_type.length if field_type.array == "fixed" else 0,
        "string_capacity": 0,
        "nested_type_name": field_type.nested.name if field_type.nested is not None else "",
    }


def _description(msg: MsgType) -> dict[str, Any]:
    fields = [{"name": field.name, "type": _field_type(field.type)} for field in msg.fields]
    if msg.empty:
        fields.append({"name": EMPTY_MEMBER, "type": _field_type(FieldType("uint8"))})
    return {"type_name": msg.name, "fields": fields}


def type_description(msg: MsgType) -> dict[str, Any]:
    """The hashed form of `msg`'s type description (rosidl's, default values left out)."""
    referenced = sorted(msg.dependencies(), key=lambda nested: nested.name)
    return {
        "type_description": _description(msg),
        "referenced_type_descriptions": [_description(nested) for nested in referenced],
    }


def type_hash(msg: MsgType) -> str:
    """`RIHS01_<64 hex digits>` of `msg`, as rosidl computes it."""
    known = _cache.get(msg.name)
    if known is None:
        text = json.dumps(type_description(msg), ensure_ascii=True, allow_nan=False, separators=(", ", ": "))
        known = _cache[msg.name] = PREFIX + hashlib.sha256(text.encode()).hexdigest()
    return known
