"""Example plain values of ROS 2 message types, and conversions to and from `rosbags`' message objects.

The values exercise every field (signed and unsigned extremes, float32-exact floats, non-ASCII
strings, two-item sequences, rows of flattened arrays) so that CDR alignment and lengths are tested.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gateway.ros.types import FieldType, MsgType

_INTS = {
    "int8": -128, "uint8": 255, "int16": -32768, "uint16": 65535, "int32": -(2**31), "uint32": 2**32 - 1,
    "int64": -(2**63), "uint64": 2**64 - 1,
}  # fmt: skip
_NUMPY = {
    "bool": np.bool_, "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16,
    "int32": np.int32, "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64,
    "float32": np.float32, "float64": np.float64,
}  # fmt: skip


def _item(field_type: FieldType, index: int) -> Any:
    if field_type.nested is not None:
        return example(field_type.nested, index)
    base = field_type.base
    if base == "bool":
        return index % 2 == 0
    if base == "string":
        return f"é✓ {index}" if index % 2 else ""
    if base in ("float32", "float64"):
        return -1.25 * (index + 1) if base == "float32" else 1e-300 * (index + 1)
    extreme = _INTS[base]
    return extreme if index % 2 == 0 else (extreme // 3 if extreme > 0 else 1)


def _value(field_type: FieldType, index: int) -> Any:
    if field_type.array == "fixed":
        return [_item(field_type, index + i) for i in range(field_type.length)]
    if field_type.array == "sequence":
        count = index % 3  # 0 too: an empty sequence still aligns what follows
        if field_type.inner:
            rows = [[_item(field_type, index + r + c) for c in range(field_type.inner[-1])] for r in range(count)]
            for length in reversed(field_type.inner[:-1]):
                rows = [rows] * length
            return rows
        return [_item(field_type, index + i) for i in range(count)]
    return _item(field_type, index)


def example(msg: MsgType, seed: int = 0) -> dict[str, Any]:
    """A plain value of `msg` with every field set (`seed` varies it)."""
    return {field.key: _value(field.type, seed + number) for number, field in enumerate(msg.fields)}


def from_rosbags(msg: MsgType, value: Any) -> dict[str, Any]:
    """A `rosbags` message object as the plain dict our decoder gives (arrays as lists, rows folded)."""
    plain: dict[str, Any] = {}
    for field in msg.fields:
        item = getattr(value, field.name)
        nested = field.type.nested
        if field.type.array:
            items = item.tolist() if isinstance(item, np.ndarray) else list(item)
            if nested is not None:
                items = [from_rosbags(nested, element) for element in items]
            for length in reversed(field.type.inner):
                items = [items[start : start + length] for start in range(0, len(items), length)]
            plain[field.key] = items
        elif nested is not None:
            plain[field.key] = from_rosbags(nested, item)
        else:
            plain[field.key] = item.item() if isinstance(item, np.generic) else item
    return plain


def _flat(rows: Any, depth: int) -> list[Any]:
    items = list(rows)
    for _ in range(depth):
        items = [element for row in items for element in row]
    return items


def to_rosbags(msg: MsgType, plain: dict[str, Any], types: dict[str, Any]) -> Any:
    """A plain dict as a `rosbags` message object of the typestore's `types` (numeric arrays as numpy)."""
    fields: dict[str, Any] = {}
    for field in msg.fields:
        value = plain[field.key]
        nested = field.type.nested
        if field.type.array:
            items = _flat(value, len(field.type.inner))
            if nested is not None:
                fields[field.name] = [to_rosbags(nested, element, types) for element in items]
            elif field.type.base == "string":
                fields[field.name] = items
            else:
                fields[field.name] = np.array(items, dtype=_NUMPY[field.type.base])
        elif nested is not None:
            fields[field.name] = to_rosbags(nested, value, types)
        else:
            fields[field.name] = value
    if msg.empty:
        fields["structure_needs_at_least_one_member"] = 0
    return types[msg.name](**fields)
