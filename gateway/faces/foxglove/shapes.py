"""The Foxglove form of our JSON Schemas and messages: what the apps' schema parser accepts.

Foxglove Studio and Lichtblick read a `jsonschema` channel or service with `parseJsonSchema`, which
knows objects (with `properties`), booleans, strings, numbers and arrays of those, but no array of
arrays ("Unsupported type "array" for array item ..."). Two of our types hold one
(`hwgateway/SimOutputs.leds`, `hwgateway/MicrobitLeds.rows`). On this face each inner array becomes an
object with one field, `values`: `{"rows": [[true, false], ...]}` is `{"rows": [{"values": [true,
false]}, ...]}`. Messages of those types are reshaped on the way out and requests on the way in;
every other type goes through as it is. An object with no declared fields gets `"properties": {}`,
which the parser needs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: The field an inner array is wrapped in.
FIELD = "values"

Reshape = Callable[[Any], Any]


def foxglove_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with each array of arrays made an array of `{values: [...]}` objects."""
    schema = dict(schema)
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        schema["properties"] = {name: foxglove_schema(field) for name, field in properties.items()}
    elif kind == "array" and isinstance(schema.get("items"), dict):
        items = foxglove_schema(schema["items"])
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
    """Our message of `schema` → its Foxglove form (None: the same)."""
    return _converter(schema, True)


def inward(schema: dict[str, Any]) -> Reshape | None:
    """A Foxglove client's value for `schema` (our form) → our form (None: the same).

    An inner array a client sends as it is (not wrapped) is taken too.
    """
    return _converter(schema, False)
