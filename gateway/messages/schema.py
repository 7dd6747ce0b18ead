"""Field specs behind every bus message: validation from plain data, conversion to it, JSON Schema.

A message is a frozen, slotted dataclass whose fields are annotated with a spec, e.g.
``x: Annotated[float, F64] = 0.0``. The `message` decorator reads those specs once and registers the
class under its ecosystem name (``wiimote/State``). JSON and msgpack share the one conversion here.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from gateway.errors import InvalidArgument

#: Upper bound on any variable-length array accepted from a client.
MAX_ARRAY_LENGTH = 4096
#: Upper bound on any string accepted from a client, in characters.
MAX_STRING_LENGTH = 4096

Kind = Literal["message", "command", "service"]


class Spec(Protocol):
    """How one field is checked, converted and described."""

    def parse(self, value: object, path: str) -> Any:
        """Validate plain data and return the Python value; raise `InvalidArgument` naming `path`."""

    def plain(self, value: Any) -> Any:
        """Convert the Python value to plain data (dicts, lists, numbers, strings, bools)."""

    def json_schema(self) -> dict[str, Any]:
        """Describe the plain data as JSON Schema."""

    def default(self) -> Any:
        """The value a missing field takes."""


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


@dataclass(frozen=True, slots=True)
class Int:
    """A fixed-width integer, optionally narrowed to a range or a set of allowed values."""

    bits: int
    signed: bool = True
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[int, ...] | None = None
    _bounds: tuple[int, int] = dataclasses.field(init=False, repr=False, compare=False, default=(0, 0))

    def __post_init__(self) -> None:
        bits = self.bits
        low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if self.signed else (0, (1 << bits) - 1)
        bounds = (low if self.minimum is None else self.minimum, high if self.maximum is None else self.maximum)
        object.__setattr__(self, "_bounds", bounds)  # parse runs per element of arrays of thousands

    def bounds(self) -> tuple[int, int]:
        """The inclusive range the value must lie in."""
        return self._bounds

    def parse(self, value: object, path: str) -> int:
        """Validate an integer."""
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise InvalidArgument(f"{path}: expected an integer, got {_type_name(value)}")
        if self.choices is not None:
            if value not in self.choices:
                raise InvalidArgument(f"{path}: {value} is not one of {list(self.choices)}")
            return value
        low, high = self._bounds
        if not low <= value <= high:
            raise InvalidArgument(f"{path}: {value} is outside [{low}, {high}]")
        return value

    def plain(self, value: Any) -> Any:
        """Integers are plain already."""
        return value

    def json_schema(self) -> dict[str, Any]:
        """Integer schema with its range."""
        if self.choices is not None:
            return {"type": "integer", "enum": list(self.choices)}
        low, high = self.bounds()
        return {"type": "integer", "minimum": low, "maximum": high}

    def default(self) -> int:
        """Zero, or the first allowed value."""
        return 0 if self.choices is None or 0 in self.choices else self.choices[0]


_FLOAT32_MAX = 3.4028234663852886e38


@dataclass(frozen=True, slots=True)
class Float:
    """A finite IEEE float of 32 or 64 bits, optionally narrowed to a range."""

    bits: int = 64
    minimum: float | None = None
    maximum: float | None = None

    def parse(self, value: object, path: str) -> float:
        """Validate a finite number within range."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidArgument(f"{path}: expected a number, got {_type_name(value)}")
        try:
            number = float(value)
        except OverflowError:
            raise InvalidArgument(f"{path}: {value} does not fit a float{self.bits}") from None
        if not math.isfinite(number):
            raise InvalidArgument(f"{path}: must be finite")
        if self.bits == 32 and abs(number) > _FLOAT32_MAX:
            raise InvalidArgument(f"{path}: {number} does not fit a float32")
        if self.minimum is not None and number < self.minimum:
            raise InvalidArgument(f"{path}: {number} is below the minimum {self.minimum}")
        if self.maximum is not None and number > self.maximum:
            raise InvalidArgument(f"{path}: {number} is above the maximum {self.maximum}")
        return number

    def plain(self, value: Any) -> Any:
        """Floats are plain already."""
        return value

    def json_schema(self) -> dict[str, Any]:
        """Number schema with its range."""
        schema: dict[str, Any] = {"type": "number"}
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        return schema

    def default(self) -> float:
        """Zero, or the minimum when zero is out of range."""
        return 0.0 if self.minimum is None or self.minimum <= 0.0 else self.minimum


@dataclass(frozen=True, slots=True)
class Bool:
    """A boolean (JSON true/false; 0 and 1 are not accepted)."""

    def parse(self, value: object, path: str) -> bool:
        """Validate a boolean."""
        if not isinstance(value, bool):
            raise InvalidArgument(f"{path}: expected a boolean, got {_type_name(value)}")
        return value

    def plain(self, value: Any) -> Any:
        """Booleans are plain already."""
        return value

    def json_schema(self) -> dict[str, Any]:
        """Boolean schema."""
        return {"type": "boolean"}

    def default(self) -> bool:
        """False."""
        return False


@dataclass(frozen=True, slots=True)
class Str:
    """A text string of bounded length."""

    max_length: int = MAX_STRING_LENGTH

    def parse(self, value: object, path: str) -> str:
        """Validate a string."""
        if not isinstance(value, str):
            raise InvalidArgument(f"{path}: expected a string, got {_type_name(value)}")
        if len(value) > self.max_length:
            raise InvalidArgument(f"{path}: longer than {self.max_length} characters")
        return value

    def plain(self, value: Any) -> Any:
        """Strings are plain already."""
        return value

    def json_schema(self) -> dict[str, Any]:
        """String schema."""
        return {"type": "string", "maxLength": self.max_length}

    def default(self) -> str:
        """The empty string."""
        return ""


@dataclass(frozen=True, slots=True)
class Array:
    """A fixed-length (`length`) or bounded variable-length array of one spec, held as a tuple."""

    item: Spec
    length: int | None = None
    max_length: int = MAX_ARRAY_LENGTH

    def parse(self, value: object, path: str) -> tuple[Any, ...]:
        """Validate every element and the length."""
        if not isinstance(value, list | tuple):
            raise InvalidArgument(f"{path}: expected an array, got {_type_name(value)}")
        if self.length is not None and len(value) != self.length:
            raise InvalidArgument(f"{path}: expected {self.length} elements, got {len(value)}")
        if len(value) > self.max_length:
            raise InvalidArgument(f"{path}: more than {self.max_length} elements")
        fast = _parse_numbers(self.item, value, path)
        if fast is not None:
            return fast
        parse = self.item.parse
        parsed: list[Any] = []
        append = parsed.append
        try:
            # The element's path is only built for the element that fails (tens of thousands otherwise).
            for element in value:
                append(parse(element, path))
        except InvalidArgument as error:
            index = len(parsed)
            raise _repath(error, path, f"{path}[{index}]", functools.partial(parse, value[index])) from None
        return tuple(parsed)

    def plain(self, value: Any) -> Any:
        """A list of plain elements."""
        return [self.item.plain(element) for element in value]

    def json_schema(self) -> dict[str, Any]:
        """Array schema with its length bounds."""
        schema: dict[str, Any] = {"type": "array", "items": self.item.json_schema()}
        if self.length is not None:
            schema["minItems"] = schema["maxItems"] = self.length
        else:
            schema["maxItems"] = self.max_length
        return schema

    def default(self) -> tuple[Any, ...]:
        """Zeros of the fixed length, or the empty tuple."""
        return tuple(self.item.default() for _ in range(self.length or 0))


def _parse_numbers(item: Spec, value: list[Any] | tuple[Any, ...], path: str) -> tuple[Any, ...] | None:
    """Arrays of plain ints (or numbers, for a float spec) checked in C loops: type set, min and max.

    Raises for an all-int array with an element out of range (naming the first); None when the fast
    path cannot decide (mixed types, a float out of range, not a number spec): the element-wise path
    then gives the exact error and its element's path.
    """
    if not value or type(item) not in (Int, Float):
        return None
    types = set(map(type, value))
    if not types <= {float, int}:
        # The first element that is no number fails, unless one before it does: check those first.
        index = next(i for i, element in enumerate(value) if type(element) not in (float, int))
        if index and _parse_numbers(item, value[:index], path) is None:
            return None  # the prefix needs the element-wise path (which will name its first bad element)
        item.parse(value[index], f"{path}[{index}]")  # raises, naming it
        return None
    if isinstance(item, Int):
        if item.choices is not None:
            return None
        if float in types:  # integral floats are integers, as element-wise (nan and inf are not integral)
            if not all(map(float.is_integer, [v for v in value if type(v) is float])):
                return None
            value = list(map(int, value))
        low, high = item.bounds()
        if low <= min(value) and max(value) <= high:
            return tuple(value)
        index = next(i for i, element in enumerate(value) if not low <= element <= high)
        item.parse(value[index], f"{path}[{index}]")  # raises, naming the first element out of range
        return None
    assert isinstance(item, Float)
    try:
        numbers = tuple(map(float, value))
    except OverflowError:  # an int beyond any float: the element-wise path names it
        return None
    if not math.isfinite(sum(numbers)):  # an inf or nan (or an overflowing sum: decided element-wise)
        return None
    smallest, largest = min(numbers), max(numbers)
    if item.bits == 32 and max(-smallest, largest) > _FLOAT32_MAX:
        return None
    if (item.minimum is not None and smallest < item.minimum) or (item.maximum is not None and largest > item.maximum):
        return None
    return numbers


@dataclass(frozen=True, slots=True)
class Nested:
    """A field holding another message."""

    cls: type[Any]

    def parse(self, value: object, path: str) -> Any:
        """Validate the nested message."""
        return from_plain(self.cls, value, path)

    def plain(self, value: Any) -> Any:
        """The nested message as a dict."""
        return to_plain(value)

    def json_schema(self) -> dict[str, Any]:
        """The nested message's schema, inline."""
        return schema_of(self.cls)

    def default(self) -> Any:
        """The nested message with its defaults."""
        return self.cls()


I8, I16, I32, I64 = Int(8), Int(16), Int(32), Int(64)
U8, U16, U32, U64 = Int(8, False), Int(16, False), Int(32, False), Int(64, False)
F32, F64 = Float(32), Float(64)
BOOL, STR = Bool(), Str()


@dataclass(frozen=True, slots=True)
class MessageInfo:
    """What the registry knows about one message type."""

    name: str
    kind: Kind
    cls: type[Any]
    fields: tuple[tuple[str, Spec], ...]
    constants: Mapping[str, int | float]
    doc: str
    response: type[Any] | None = None


REGISTRY: dict[str, MessageInfo] = {}
_INFO_ATTR = "__message_info__"

T = TypeVar("T")


def _collect_fields(cls: type[Any]) -> tuple[tuple[str, Spec], ...]:
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = []
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        specs = [meta for meta in getattr(hint, "__metadata__", ()) if hasattr(meta, "parse")]
        if len(specs) != 1:
            raise TypeError(f"{cls.__name__}.{field.name} needs exactly one field spec in Annotated[...]")
        fields.append((field.name, specs[0]))
    return tuple(fields)


def _collect_constants(cls: type[Any]) -> dict[str, int | float]:
    return {
        name: value
        for name, value in vars(cls).items()
        if not name.startswith("_") and isinstance(value, int | float) and not isinstance(value, bool)
    }


@typing.dataclass_transform(frozen_default=True)
def message(name: str, kind: Kind = "message", response: type[Any] | None = None) -> Callable[[type[T]], type[T]]:
    """Make `cls` a frozen slotted dataclass and register it as bus type `name` (message/command/service)."""

    def register(cls: type[T]) -> type[T]:
        cls = dataclasses.dataclass(frozen=True, slots=True)(cls)
        if name in REGISTRY:
            raise TypeError(f"message type {name!r} registered twice")
        info = MessageInfo(
            name=name,
            kind=kind,
            cls=cls,
            fields=_collect_fields(cls),
            constants=_collect_constants(cls),
            doc=(cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else "",
            response=response,
        )
        setattr(cls, _INFO_ATTR, info)
        REGISTRY[name] = info
        return cls

    return register


@typing.dataclass_transform(frozen_default=True)
def structure(cls: type[T]) -> type[T]:
    """Make `cls` a frozen slotted dataclass usable as a nested field (e.g. `Vector3`), not a bus type."""
    cls = dataclasses.dataclass(frozen=True, slots=True)(cls)
    setattr(cls, _INFO_ATTR, MessageInfo(cls.__name__, "message", cls, _collect_fields(cls), {}, ""))
    return cls


def info_of(cls: type[Any]) -> MessageInfo:
    """The registration of a message class."""
    info: MessageInfo = getattr(cls, _INFO_ATTR)
    return info


def type_name(value: object) -> str:
    """The bus type name of a message instance."""
    return info_of(type(value)).name


def from_plain(cls: type[T], data: object, path: str = "data") -> T:
    """Build a message from plain data; missing fields take defaults, unknown fields are refused."""
    if type(data) is not dict and not isinstance(data, Mapping):  # the ABC check is slow: dicts first
        raise InvalidArgument(f"{path}: expected an object, got {_type_name(data)}")
    info = info_of(cls)
    known = _field_names(info)
    if not known.issuperset(data):
        for key in data:
            if key not in known:
                raise InvalidArgument(f"{path}: unknown field {key!r} (fields: {', '.join(sorted(known))})")
    values = {}
    for name, spec in info.fields:
        if name in data:
            try:
                # The path is built only when a field fails (nested in a long array, thousands otherwise).
                values[name] = spec.parse(data[name], path)
            except InvalidArgument as error:
                raise _repath(error, path, f"{path}.{name}", functools.partial(spec.parse, data[name])) from None
    return cls(**values)


def _repath(error: InvalidArgument, given: str, actual: str, parse_again: Callable[[str], object]) -> InvalidArgument:
    """`error`, raised under the cheap path `given`, as if raised under `actual` (parsing again if need be)."""
    if type(error) is InvalidArgument and error.message.startswith(given):
        return InvalidArgument(actual + error.message[len(given) :])
    try:
        parse_again(actual)
    except InvalidArgument as again:
        return again
    return error


#: Nested maps and arrays (with their map entries) beyond which validation runs off the event loop.
LARGE_PAYLOAD_ELEMENTS = 1024


def is_large(data: object, budget: int = LARGE_PAYLOAD_ELEMENTS) -> bool:
    """True when `data` holds more than `budget` maps, arrays and map entries (stops counting there).

    Arrays of plain numbers are not counted: their fast path checks 32768 of them in about 2 ms.
    """
    pending = [data]
    while pending:
        value = pending.pop()
        if type(value) is dict:
            budget -= 1 + len(value)
            items: Any = value.values()
        elif type(value) in (list, tuple):
            budget -= 1
            items = value
        else:
            continue
        if budget < 0:
            return True
        if not _CONTAINERS.isdisjoint(map(type, items)):  # one C loop for an array of 65536 numbers
            pending.extend(item for item in items if type(item) in _CONTAINERS)
    return False


#: What decoded JSON and msgpack nest values in.
_CONTAINERS = frozenset({dict, list, tuple})


_FIELD_NAMES: dict[type[Any], frozenset[str]] = {}


def _field_names(info: MessageInfo) -> frozenset[str]:
    names = _FIELD_NAMES.get(info.cls)
    if names is None:
        names = _FIELD_NAMES[info.cls] = frozenset(name for name, _ in info.fields)
    return names


def to_plain(value: Any) -> dict[str, Any]:
    """Convert a message to a dict of plain data."""
    info = info_of(type(value))
    return {name: spec.plain(getattr(value, name)) for name, spec in info.fields}


def schema_of(cls: type[Any]) -> dict[str, Any]:
    """JSON Schema of a message's plain form."""
    info = info_of(cls)
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {name: spec.json_schema() for name, spec in info.fields},
    }
