"""The viewer form of our JSON Schemas and messages: what the Foxglove and Lichtblick apps' schema parser accepts.

Foxglove Studio and Lichtblick read a `jsonschema` channel or service with `parseJsonSchema`, which
knows objects (with `properties`), booleans, strings, numbers and arrays of those, but no array of
arrays ("Unsupported type "array" for array item ..."). Two of our types hold one
(`hwgateway/SimOutputs.leds`, `hwgateway/MicrobitLeds.rows`). In the viewer form each inner array
becomes an object with one field, `values`: `{"rows": [[true, false], ...]}` is `{"rows": [{"values":
[true, false]}, ...]}`. The Foxglove face sends messages in this form and takes requests in either;
recordings (`gateway.record.sink`) store messages and schemas in it, and the replay reads both forms
back (`inward`), so files written before the form was used play as they are. Every other type goes
through as it is. An object with no declared fields gets `"properties": {}`, which the parser needs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: The field an inner array is wrapped in.
FIELD = "values"

Reshape = Callable[[Any], Any]


def viewer_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with each array of arrays made an array of `{values: [...]}` objects."""
    schema = dict(schema)
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        schema["properties"] = {name: viewer_schema(field) for name, field in properties.items()}
    elif kind == "array" and isinstance(schema.get("items"), dict):
        items = viewer_schema(schema["items"])
        if items.get("type") == "array":
            items = {
                "type": "object",
                "additionalProperties": False,
                "required": [FIELD],
                "properties": {FIELD: items},
            }
        schema["items"] = items
    return schema


def _converter(schema: dict[str, Any], outward: bool) -> Reshape | None:
    """A function reshaping a value of `schema` (None: the value needs no change)."""
    kind = schema.get("type")
    if kind == "object":
        fields = {
            name: convert
            for name, field in schema.get("properties", {}).items()
            if (convert := _converter(field, outward)) is not None
        }
        if not fields:
            return None

        def reshape_object(value: Any) -> Any:
            if not isinstance(value, dict):
                return value  # not ours to judge here: the command's own check reports it
            return {name: fields[name](item) if name in fields else item for name, item in value.items()}

        return reshape_object
    if kind == "array" and isinstance(schema.get("items"), dict):
        items = schema["items"]
        inner = _converter(items, outward)
        nested = items.get("type") == "array"
        if inner is None and not nested:
            return None

        def reshape_item(item: Any) -> Any:
            if outward:
                item = inner(item) if inner is not None else item
                return {FIELD: item} if nested else item
            if nested and isinstance(item, dict) and set(item) == {FIELD}:
                item = item[FIELD]
            return inner(item) if inner is not None else item

        def reshape_array(value: Any) -> Any:
            return [reshape_item(item) for item in value] if isinstance(value, list) else value

        return reshape_array
    return None


def outward(schema: dict[str, Any]) -> Reshape | None:
    """Our message of `schema` → its viewer form (None: the same)."""
    return _converter(schema, True)


def inward(schema: dict[str, Any]) -> Reshape | None:
    """A value for `schema` in the viewer form or ours → ours (None: the same).

    Either form is taken: an inner array wrapped in `{values: ...}` is unwrapped, one sent (or
    recorded) as it is stays. Our form never holds such an object where an inner array belongs, so
    the two cannot be mistaken.
    """
    return _converter(schema, False)
