"""Field specs behind every bus message: validation from plain data, conversion to it, JSON Schema.

A message is a frozen, slotted dataclass whose fields are annotated with a spec, e.g.
``x: Annotated[float, F64] = 0.0``. The `message` decorator reads those specs once and registers the
class under its ecosystem name (``wiimote/State``). JSON and msgpack share the one conversion here.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import operator
import struct
import types
import typing
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from gateway.errors import InvalidArgument

#: Upper bound on any variable-length array accepted from a client.
MAX_ARRAY_LENGTH = 4096
#: Upper bound on any string accepted from a client, in characters.
MAX_STRING_LENGTH = 4096

Kind = Literal["message", "command", "service"]

#: Arrays this long or shorter are parsed element by element: checking them at once saves nothing.
_ELEMENT_WISE_UP_TO = 8
#: Longer arrays are checked this many elements at a time: the first bad element costs about two
#: more chunks to find (not twice the array).
_CHUNK = 1024
#: What a number array may hold besides ints (integral floats for an integer spec) or floats.
_NUMBER = frozenset({int, float})


def _all_of(kind: type[Any], values: Sequence[Any]) -> bool:
    """True when every one of `values` is exactly of type `kind` (one C loop, no set to build)."""
    return operator.countOf(map(type, values), kind) == len(values)


class Spec(Protocol):
    """How one field is checked, converted and described."""

    def parse(self, value: object, path: str) -> Any:
        """Validate plain data and return the Python value; raise `InvalidArgument` naming `path`."""

    def parse_many(self, values: Sequence[Any]) -> tuple[Any, ...] | None:
        """What `parse` gives for each of `values`, checked all at once; None when any fails (or undecided).

        Never raises: the caller parses element by element to name the first bad one.
        """

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
    _struct_code: str = dataclasses.field(init=False, repr=False, compare=False, default="")

    def __post_init__(self) -> None:
        bits = self.bits
        low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if self.signed else (0, (1 << bits) - 1)
        bounds = (low if self.minimum is None else self.minimum, high if self.maximum is None else self.maximum)
        object.__setattr__(self, "_bounds", bounds)  # parse runs per element of arrays of thousands
        if bounds == (low, high) and self.choices is None and bits in _STRUCT_CODES:
            code = _STRUCT_CODES[bits]
            object.__setattr__(self, "_struct_code", code if self.signed else code.upper())

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

    def parse_many(self, values: Sequence[Any]) -> tuple[int, ...] | None:
        """Integers (and integral floats, as `parse` takes them) checked by type and range in C loops."""
        if not _all_of(int, values):
            floats = [value for value in values if type(value) is float]
            if not set(map(type, values)) <= _NUMBER or not all(map(float.is_integer, floats)):
                return None  # bool, str, None, a fraction, nan, inf (or an int subclass, left to `parse`)
            values = list(map(int, values))  # ints and integral floats
        if not values:
            return ()
        if self._struct_code:
            # struct packs integers only, each within the C type's range: type and range in one C loop
            # that is three times faster than min and max.
            try:
                struct.pack(f"<{len(values)}{self._struct_code}", *values)
            except struct.error:
                return None
            return tuple(values)
        if self.choices is not None:
            return tuple(values) if frozenset(self.choices).issuperset(values) else None
        low, high = self._bounds
        return tuple(values) if low <= min(values) and max(values) <= high else None

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
#: The `struct` code of a signed integer of so many bits (upper case: unsigned), standard sizes.
_STRUCT_CODES = {8: "b", 16: "h", 32: "i", 64: "q"}


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

    def parse_many(self, values: Sequence[Any]) -> tuple[float, ...] | None:
        """Numbers checked by type set, one sum (finite unless an element is not, or the sum overflows), min and max."""
        if _all_of(float, values):
            numbers = tuple(values)
        elif set(map(type, values)) <= _NUMBER:
            try:
                numbers = tuple(map(float, values))
            except OverflowError:  # an int beyond any float
                return None
        else:
            return None
        if not numbers:
            return ()
        if not math.isfinite(sum(numbers)) and not all(map(math.isfinite, numbers)):
            return None  # an inf or nan (a sum that merely overflowed is let through by the second check)
        smallest, largest = min(numbers), max(numbers)
        if self.bits == 32 and (smallest < -_FLOAT32_MAX or largest > _FLOAT32_MAX):
            return None
        if self.minimum is not None and smallest < self.minimum:
            return None
        if self.maximum is not None and largest > self.maximum:
            return None
        return numbers

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

    def parse_many(self, values: Sequence[Any]) -> tuple[bool, ...] | None:
        """Booleans checked by type set."""
        return tuple(values) if _all_of(bool, values) else None

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

    def parse_many(self, values: Sequence[Any]) -> tuple[str, ...] | None:
        """Strings checked by type set and the longest length."""
        if not _all_of(str, values) or max(map(len, values), default=0) > self.max_length:
            return None
        return tuple(values)

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
        self.check_shape(value, path)
        assert isinstance(value, list | tuple)
        return self.parse_slice(value, path, 0)

    def check_shape(self, value: object, path: str) -> None:
        """Refuse a value that is no array, or of the wrong length (the elements are not looked at)."""
        if not isinstance(value, list | tuple):
            raise InvalidArgument(f"{path}: expected an array, got {_type_name(value)}")
        if self.length is not None and len(value) != self.length:
            raise InvalidArgument(f"{path}: expected {self.length} elements, got {len(value)}")
        if len(value) > self.max_length:
            raise InvalidArgument(f"{path}: more than {self.max_length} elements")

    def parse_slice(self, values: Sequence[Any], path: str, start: int) -> tuple[Any, ...]:
        """Parse `values`, the elements of the array at `path` from index `start` on."""
        if len(values) <= _ELEMENT_WISE_UP_TO:
            return self._parse_each(values, path, start)
        if len(values) <= _CHUNK:
            return self._parse_range(values, path, start)
        parsed: list[Any] = []
        for offset in range(0, len(values), _CHUNK):
            parsed.extend(self._parse_range(values[offset : offset + _CHUNK], path, start + offset))
        return tuple(parsed)

    def parse_many(self, values: Sequence[Any]) -> tuple[tuple[Any, ...], ...] | None:
        """Arrays (lists) flattened into one run of elements checked at once, then cut back to their lengths."""
        if not _all_of(list, values):
            return None
        lengths = list(map(len, values))
        if self.length is not None:
            if lengths.count(self.length) != len(lengths):
                return None
        elif max(lengths, default=0) > self.max_length:
            return None
        flat = list(itertools.chain.from_iterable(values))
        parsed = self.item.parse_many(flat) if flat else ()
        if parsed is None:
            return None
        elements = iter(parsed)
        if self.length:  # zip hands out the same iterator's next `length` elements as one tuple
            return tuple(zip(*[elements] * self.length, strict=True))
        return tuple(tuple(itertools.islice(elements, length)) for length in lengths)

    def _parse_range(self, values: Sequence[object], path: str, start: int) -> tuple[Any, ...]:
        """`values`, the elements from index `start` on, checked at once; when that fails, each half in turn.

        The first half that fails is halved again, down to a few elements parsed one by one: the
        first bad element is named for about twice the cost of checking `values`, and a valid run
        the checks at once cannot decide (an int subclass, say) is still accepted.
        """
        parsed = self.item.parse_many(values)
        if parsed is not None:
            return parsed
        if len(values) <= _ELEMENT_WISE_UP_TO:
            return self._parse_each(values, path, start)
        middle = len(values) // 2
        first = self._parse_range(values[:middle], path, start)
        return first + self._parse_range(values[middle:], path, start + middle)

    def _parse_each(self, values: Sequence[object], path: str, start: int) -> tuple[Any, ...]:
        """`values` parsed one by one, the first bad one named by its index (`start` + its place)."""
        parse = self.item.parse
        parsed: list[Any] = []
        append = parsed.append
        try:
            # The element's path is only built for the element that fails.
            for element in values:
                append(parse(element, path))
        except InvalidArgument as error:
            index = len(parsed)
            bad = functools.partial(parse, values[index])
            raise _repath(error, path, f"{path}[{start + index}]", bad) from None
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


@dataclass(frozen=True, slots=True)
class Nested:
    """A field holding another message."""

    cls: type[Any]

    def parse(self, value: object, path: str) -> Any:
        """Validate the nested message."""
        return from_plain(self.cls, value, path)

    def parse_many(self, values: Sequence[Any]) -> tuple[Any, ...] | None:
        """Messages from dicts by columns: one key check per dict, then each field's column checked at once."""
        columns = _columns_of(self.cls)
        if columns is None or not _all_of(dict, values):
            return None
        return columns.parse_many(values)

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


#: Stands for a field a dict leaves out (its column then takes the field's default).
_MISSING: Any = object()


@dataclass(frozen=True, slots=True)
class _Columns:
    """How `Nested.parse_many` builds many messages of one class from dicts, one field (column) at a time.

    `fields`: name, spec, default and whether the column is checked at once (a scalar spec whose
    default parses to itself) or value by value. `setters`: the slot setters `__init__` would call,
    when it does nothing else (a frozen dataclass's `__init__` costs a call of
    `object.__setattr__` per field, twice the cost of building the objects this way).
    """

    cls: type[Any]
    known: frozenset[str]
    fields: tuple[tuple[str, Spec, Any, bool], ...]
    setters: tuple[Callable[[Any, Any], None], ...] | None

    def parse_many(self, values: Sequence[dict[str, Any]]) -> tuple[Any, ...] | None:
        """The messages `values` describe, or None when any key or value is bad."""
        if not all(map(self.known.issuperset, values)):
            return None
        count = len(values)
        columns = []
        for name, spec, default, at_once in self.fields:
            absent = itertools.repeat(default if at_once else _MISSING, count)
            column: Sequence[Any] = list(map(dict.get, values, itertools.repeat(name, count), absent))
            parsed = spec.parse_many(column) if at_once else _parse_column(spec, column, default)
            if parsed is None:
                return None
            columns.append(parsed)
        if self.setters is None:
            return tuple(map(self.cls, *columns))
        messages = list(map(object.__new__, itertools.repeat(self.cls, count)))
        for set_field, column in zip(self.setters, columns, strict=True):
            deque(map(set_field, messages, column), maxlen=0)
        return tuple(messages)


def _parse_column(spec: Spec, column: Sequence[Any], default: Any) -> tuple[Any, ...] | None:
    """A column of nested values parsed one by one (each array inside at once); `_MISSING` takes `default`."""
    parse = spec.parse
    try:
        return tuple(default if value is _MISSING else parse(value, "") for value in column)
    except InvalidArgument:
        return None


_COLUMNS: dict[type[Any], _Columns | None] = {}


def _columns_of(cls: type[Any]) -> _Columns | None:
    """The column plan of message class `cls`, None when a field has no plain default (built once)."""
    if cls in _COLUMNS:
        return _COLUMNS[cls]
    info = info_of(cls)
    fields = []
    for field, (name, spec) in zip(dataclasses.fields(cls), info.fields, strict=True):
        if field.default is dataclasses.MISSING:  # a factory or a required field: left to `from_plain`
            _COLUMNS[cls] = None
            return None
        at_once = type(spec) in (Int, Float, Bool, Str) and _parses_to_itself(spec, field.default)
        fields.append((name, spec, field.default, at_once))
    setters = _own_slot_setters(cls) if info.plain_init else None
    plan = _COLUMNS[cls] = _Columns(cls, _field_names(info), tuple(fields), setters)
    return plan


def _parses_to_itself(spec: Spec, value: Any) -> bool:
    """True when `value` is valid for `spec` and parses to the same value of the same type."""
    parsed = spec.parse_many((value,))
    return parsed is not None and type(parsed[0]) is type(value) and parsed[0] == value


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
    #: The class's `__init__` is the dataclass's and does nothing but set the fields (no `__post_init__`).
    plain_init: bool = False
    #: A service that only reads the device (`Client.read`): answered under another client's lock.
    read_only: bool = False


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
def message(
    name: str, kind: Kind = "message", response: type[Any] | None = None, read_only: bool = False
) -> Callable[[type[T]], type[T]]:
    """Make `cls` a frozen slotted dataclass and register it as bus type `name` (message/command/service).

    `read_only` marks a service that changes nothing on the device (`Client.read` answers it under
    another client's lock, for every role).
    """

    def register(cls: type[T]) -> type[T]:
        cls, plain_init = _frozen_dataclass(cls)
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
            plain_init=plain_init,
            read_only=read_only,
        )
        setattr(cls, _INFO_ATTR, info)
        REGISTRY[name] = info
        return cls

    return register


@typing.dataclass_transform(frozen_default=True)
def structure(cls: type[T]) -> type[T]:
    """Make `cls` a frozen slotted dataclass usable as a nested field (e.g. `Vector3`), not a bus type."""
    cls, plain_init = _frozen_dataclass(cls)
    info = MessageInfo(cls.__name__, "message", cls, _collect_fields(cls), {}, "", plain_init=plain_init)
    setattr(cls, _INFO_ATTR, info)
    return cls


def _has_plain_init(cls: type[Any]) -> bool:
    """True when the dataclass made of `cls` gets the generated `__init__` only (before the decorator runs)."""
    return "__init__" not in vars(cls) and not hasattr(cls, "__post_init__")


def _frozen_dataclass(cls: type[T]) -> tuple[type[T], bool]:
    """`cls` as a frozen slotted dataclass, and whether its `__init__` only sets the fields.

    Such an `__init__` is replaced by one that sets each slot through its descriptor: the same
    signature and effect in about 60 % of the time (a frozen dataclass's own goes through
    `object.__setattr__` per field). Every device builds its samples through these.
    """
    plain_init = _has_plain_init(cls)
    cls = dataclasses.dataclass(frozen=True, slots=True)(cls)
    if plain_init:
        init = _slot_setting_init(cls)
        if init is not None:
            type.__setattr__(cls, "__init__", init)
    return cls, plain_init


def _own_slot_setters(cls: type[Any]) -> tuple[Callable[[Any, Any], None], ...] | None:
    """The slot setter of each field of dataclass `cls`, in field order; None when a slot is not its own."""
    slots = [vars(cls).get(field.name) for field in dataclasses.fields(cls)]
    if not all(type(slot) is types.MemberDescriptorType for slot in slots):
        return None
    return tuple(slot.__set__ for slot in slots)


def _slot_setting_init(cls: type[Any]) -> Callable[..., None] | None:
    """An `__init__` for dataclass `cls` that sets each field's slot directly; None when a field needs more.

    Fields with a default factory, `init=False` or keyword-only, and fields whose slot is not the
    class's own (inherited), keep the dataclass's `__init__`.
    """
    fields = dataclasses.fields(cls)
    setters = _own_slot_setters(cls)
    if setters is None or any(
        not field.init or field.kw_only or field.default_factory is not dataclasses.MISSING for field in fields
    ):
        return None
    namespace: dict[str, Any] = {}
    parameters, body = [], []
    for index, (field, setter) in enumerate(zip(fields, setters, strict=True)):
        namespace[f"_set{index}"] = setter
        if field.default is dataclasses.MISSING:
            parameters.append(field.name)
        else:
            namespace[f"_default{index}"] = field.default
            parameters.append(f"{field.name}=_default{index}")
        body.append(f"    _set{index}(self, {field.name})\n")
    source = f"def __init__(self, {', '.join(parameters)}):\n" + ("".join(body) or "    pass\n")
    exec(source, namespace)  # the text is built here from field names, as dataclasses does
    init: Callable[..., None] = namespace["__init__"]
    generated = vars(cls)["__init__"]
    init.__qualname__ = generated.__qualname__
    init.__module__ = cls.__module__
    init.__annotations__ = dict(generated.__annotations__)
    return init


def info_of(cls: type[Any]) -> MessageInfo:
    """The registration of a message class."""
    info: MessageInfo = getattr(cls, _INFO_ATTR)
    return info


def type_name(value: object) -> str:
    """The bus type name of a message instance."""
    info: MessageInfo = getattr(type(value), _INFO_ATTR)  # `info_of` written out: once per published sample
    return info.name


def from_plain(cls: type[T], data: object, path: str = "data") -> T:
    """Build a message from plain data; missing fields take defaults, unknown fields are refused."""
    info = check_object(cls, data, path)
    assert isinstance(data, Mapping)
    values = {}
    for name, spec in info.fields:
        if name in data:
            try:
                # The path is built only when a field fails (nested in a long array, thousands otherwise).
                values[name] = spec.parse(data[name], path)
            except InvalidArgument as error:
                raise _repath(error, path, f"{path}.{name}", functools.partial(spec.parse, data[name])) from None
    return cls(**values)


def check_object(cls: type[Any], data: object, path: str) -> MessageInfo:
    """Refuse `data` at `path` when it is no map or has a key `cls` has no field for; return `cls`'s info."""
    if type(data) is not dict and not isinstance(data, Mapping):  # the ABC check is slow: dicts first
        raise InvalidArgument(f"{path}: expected an object, got {_type_name(data)}")
    info = info_of(cls)
    known = _field_names(info)
    if not known.issuperset(data):
        for key in data:
            if key not in known:
                raise InvalidArgument(f"{path}: unknown field {key!r} (fields: {', '.join(sorted(known))})")
    return info


def _repath(error: InvalidArgument, given: str, actual: str, parse_again: Callable[[str], object]) -> InvalidArgument:
    """`error`, raised under the cheap path `given`, as if raised under `actual` (parsing again if need be)."""
    if type(error) is InvalidArgument and error.message.startswith(given):
        return InvalidArgument(actual + error.message[len(given) :])
    try:
        parse_again(actual)
    except InvalidArgument as again:
        return again
    return error


#: Validation work (maps, map entries and arrays, each 1; array elements, 1/8 each) beyond which a
#: payload is validated in steps (`gateway.messages.stepwise`): 0.2 to 0.6 ms of checking here.
LARGE_PAYLOAD_ELEMENTS = 1024


def is_large(data: object, budget: int = LARGE_PAYLOAD_ELEMENTS) -> bool:
    """True when checking `data` is more work than `budget` (see `LARGE_PAYLOAD_ELEMENTS`)."""
    return work_of(data, budget) > budget


def work_of(data: object, budget: int = LARGE_PAYLOAD_ELEMENTS) -> int:
    """The work of checking `data` (see `LARGE_PAYLOAD_ELEMENTS`), counted up to just beyond `budget`.

    An array's elements are counted before they are looked at, and an array of flat maps or flat
    arrays (the usual long array) in a few C loops: telling an array of 32768 numbers large costs
    nothing, and counting stops once past `budget`.
    """
    work = 0
    pending: list[Any] = [data]
    while pending:
        value = pending.pop()
        if type(value) is dict:
            work += 1 + len(value)
            items: Any = value.values()
        elif type(value) in (list, tuple):
            work += 1 + (len(value) >> 3)
            items = value
        else:
            continue
        if work > budget:
            return work
        if _CONTAINERS.isdisjoint(map(type, items)):  # one C loop for an array of numbers
            continue
        # Each item counts at least 1: more than the budget left need not be looked at.
        room = budget - work + 1
        head = items if len(items) <= room else list(itertools.islice(items, room))
        flat = _flat_work(head, room)
        if flat is not None:
            work += flat
            continue
        pending.extend(item for item in head if type(item) in _CONTAINERS)
    return work


def _flat_work(items: Any, room: int) -> int | None:
    """The work of `items` when all are maps, or all arrays, holding no container; else None.

    Past `room` the count is returned before the values inside are looked at (the payload is
    large whatever they are).
    """
    if _all_of(dict, items):
        work = len(items) + sum(map(len, items))
        inside = itertools.chain.from_iterable(map(dict.values, items))
    elif _all_of(list, items):
        work = len(items) + (sum(map(len, items)) >> 3)
        inside = itertools.chain.from_iterable(items)
    else:
        return None
    return work if work > room or _CONTAINERS.isdisjoint(map(type, inside)) else None


#: What decoded JSON and msgpack nest values in.
_CONTAINERS = frozenset({dict, list, tuple})


_FIELD_NAMES: dict[type[Any], frozenset[str]] = {}


def _field_names(info: MessageInfo) -> frozenset[str]:
    names = _FIELD_NAMES.get(info.cls)
    if names is None:
        names = _FIELD_NAMES[info.cls] = frozenset(name for name, _ in info.fields)
    return names


def to_plain(value: Any) -> dict[str, Any]:
    """Convert a message to a dict of plain data (what each field's `Spec.plain` gives, in field order)."""
    convert = _PLAIN_CONVERTERS.get(type(value))
    if convert is None:
        convert = _PLAIN_CONVERTERS[type(value)] = _plain_converter(info_of(type(value)))
    return convert(value)


#: Each message class's `to_plain`, built on its first use.
_PLAIN_CONVERTERS: dict[type[Any], Callable[[Any], dict[str, Any]]] = {}


def _plain_converter(info: MessageInfo) -> Callable[[Any], dict[str, Any]]:
    """`to_plain` for one class, written out as one dict display: `{"a": value.a, "b": list(value.b)}`.

    This runs once per published sample (fan-out encodes each sample once): a `Spec.plain` call per
    field and per array element cost 3.4 µs for a 6-axis, 17-button pad state, and a generic
    `dict(zip(...))` 1.3 µs for a two-field time alone; this display costs 0.7-1.2 µs for the pad
    state, near a hand-written one (0.5). It is written as `dataclasses` writes `__init__`.
    """
    namespace: dict[str, Any] = {}
    exec(f"def to_plain(value):\n    return {_plain_display(info, 'value', namespace)}\n", namespace)
    converter: Callable[[Any], dict[str, Any]] = namespace["to_plain"]
    return converter


def _plain_display(info: MessageInfo, source: str, namespace: dict[str, Any]) -> str:
    """The dict display of the message at expression `source`, its converters put in `namespace`.

    A nested message (a `Time` in a pad state, a `Header` in most ROS messages) is written into the
    display rather than converted by a call to `to_plain` and its own converter: two calls less per
    nested message of every sample a device publishes. (No message nests its own class, directly or
    not: an instance of it would never end.)
    """
    items = []
    for name, spec in info.fields:
        value = f"{source}.{name}"
        if isinstance(spec, Nested):
            items.append(f"{name!r}: {_plain_display(info_of(spec.cls), value, namespace)}")
            continue
        convert = _converter(spec)
        if convert is None:
            items.append(f"{name!r}: {value}")
        else:
            key = f"convert_{len(namespace)}"
            namespace[key] = convert
            items.append(f"{name!r}: {key}({value})")
    # The source is built from the classes' own field names only (identifiers), never from input.
    return "{" + ", ".join(items) + "}"


def _converter(spec: Spec) -> Callable[[Any], Any] | None:
    """What makes a field's value plain; None when it is already (numbers, booleans, strings)."""
    if isinstance(spec, Array):
        item = _converter(spec.item)
        if item is None:
            return list
        return lambda values: [item(value) for value in values]
    if isinstance(spec, Nested):
        return to_plain
    if isinstance(spec, Int | Float | Bool | Str):
        return None
    return spec.plain


def schema_of(cls: type[Any]) -> dict[str, Any]:
    """JSON Schema of a message's plain form."""
    info = info_of(cls)
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {name: spec.json_schema() for name, spec in info.fields},
    }
