"""The ROS 2 view of a bus message class: its `pkg/msg/Type` name, fields and constants.

`msg_type(cls)` describes a message class (a bus type, a nested structure, or `sensor_msgs/msg/Joy`)
as ROS 2 sees it, once per class. Definitions (`gateway.ros.definitions`), type hashes
(`gateway.ros.rihs`) and CDR (`gateway.ros.cdr`) are all derived from this one description.

Field types follow the rosbridge face's ROS 1 definitions (`rosapi/message_details`): integers,
floats, bools and strings map to their primitive, a nested message to its type, an array to `T[n]`
when its length is fixed and `T[]` otherwise; an array of arrays (which ROS cannot express) is one
flat `T[]` whose value is the rows one after another (`inner` holds the rows' fixed lengths, so
that a decoder can fold it back). A message without fields gets rosidl's
`uint8 structure_needs_at_least_one_member`, as every ROS 2 tool adds it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from gateway.messages import REGISTRY, info_of
from gateway.messages.schema import Array, Bool, Float, Int, Nested, Spec, Str
from gateway.ros.names import ros_type_of_class

#: The field rosidl adds to a message without fields (its CDR is one byte, 0).
EMPTY_MEMBER = "structure_needs_at_least_one_member"
#: The primitive types our fields use, by ROS name.
PRIMITIVES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64",
              "string")  # fmt: skip

#: Response classes named `<service>_Response`: ROS 2 calls them `pkg/srv/<service>_Response`.
_RESPONSES: dict[type[Any], str] = {
    info.response: info.name
    for info in REGISTRY.values()
    if info.kind == "service" and info.response is not None and info_of(info.response).name == info.name + "_Response"
}


@dataclass(frozen=True, slots=True)
class FieldType:
    """One field's ROS 2 type.

    `base` is a primitive name (`PRIMITIVES`) or the nested message's `pkg/msg/Type`; `array` is ""
    (a single value), "fixed" (`T[length]`) or "sequence" (`T[]`); `nested` the nested message's
    description; `inner` the fixed lengths of the rows an array of arrays is flattened from
    (outermost first; empty for any other field).
    """

    base: str
    array: Literal["", "fixed", "sequence"] = ""
    length: int = 0
    nested: MsgType | None = None
    inner: tuple[int, ...] = ()

    def text(self, relative: bool = True) -> str:
        """The type as a `.msg` line writes it (`int32[]`, `std_msgs/Header`; `relative`: without `/msg/`)."""
        base = self.base
        if self.nested is not None and relative:
            package, _, name = base.split("/")
            base = f"{package}/{name}"
        if self.array == "fixed":
            return f"{base}[{self.length}]"
        return base + ("[]" if self.array == "sequence" else "")


@dataclass(frozen=True, slots=True)
class MsgField:
    """A field: its ROS 2 `name`, its ROS 2 type, and `key`, its name in the plain dict (the bus's name).

    ROS 2 field names are lower case (`wiimote/State`'s `LEDs` is `leds`); the plain dict keeps the bus's.
    """

    name: str
    type: FieldType
    key: str


@dataclass(frozen=True, slots=True)
class Constant:
    """A constant of a message: ROS 2 primitive type, name and value."""

    type: str
    name: str
    value: int | float


@dataclass(frozen=True, eq=False, slots=True)
class MsgType:
    """A message type as ROS 2 sees it: `name` (`pkg/msg/Type` or `pkg/srv/Type_Request`), fields, constants.

    `cls` is the message class whose plain form (the dict the native face sends) this describes;
    `empty` is true when the class has no fields (the ROS type then has `EMPTY_MEMBER`).
    """

    name: str
    cls: type[Any]
    fields: tuple[MsgField, ...]
    constants: tuple[Constant, ...]
    empty: bool

    @property
    def package(self) -> str:
        """The ROS package (`wiimote` of `wiimote/msg/State`)."""
        return self.name.split("/")[0]

    @property
    def short_name(self) -> str:
        """`pkg/Type` (the form of a `MSG:` line and of a nested field's type)."""
        package, _, name = self.name.split("/")
        return f"{package}/{name}"

    def dependencies(self) -> list[MsgType]:
        """Every type nested in this one, directly or not, each once, depth first in field order."""
        found: dict[str, MsgType] = {}

        def visit(msg: MsgType) -> None:
            for field in msg.fields:
                nested = field.type.nested
                if nested is not None and nested.name not in found and nested.name != self.name:
                    found[nested.name] = nested
                    visit(nested)

        visit(self)
        return list(found.values())


def ros2_type_name(cls: type[Any]) -> str:
    """The ROS 2 name of a message class: `pkg/msg/Type`, a service's request `pkg/srv/Type_Request`.

    The package and type come from the rosbridge rule (`gateway.ros.names.ros_type_of_class`), made
    a valid ROS 2 name: a message name is CamelCase letters and digits only, so its `_` are dropped
    (`kortex_driver/WristCyclicC61_Feedback` -> `kortex_driver/msg/WristCyclicC61Feedback`). A
    service's response class named `<service>_Response` is `pkg/srv/<service>_Response`.
    """
    info = info_of(cls)
    package, _, name = ros_type_of_class(cls, info.name).partition("/")
    if info.kind == "service":
        return f"{package}/srv/{name.replace('_', '')}_Request"
    if cls in _RESPONSES:
        return f"{package}/srv/{name.removesuffix('_Response').replace('_', '')}_Response"
    return f"{package}/msg/{name.replace('_', '')}"


def ros2_type(bus_type: str) -> str:
    """The ROS 2 name of a bus type (`wiimote/State` -> `wiimote/msg/State`); KeyError if unknown."""
    return ros2_type_name(REGISTRY[bus_type].cls)


_FIELD_NAME = re.compile(r"(?!.*__)(?!.*_$)[a-z][a-z0-9_]*")

#: Words the languages ROS 2 generates message classes for (C, C++, Python) reserve: a field named
#: one of them passes ROS 2's name rule but breaks the generated code (`GamepadInfo.virtual` did).
RESERVED_WORDS = frozenset(
    """alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
    char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
    co_return co_yield decltype default delete do double dynamic_cast else enum explicit export extern
    false float for friend goto if inline int long mutable namespace new noexcept not not_eq nullptr
    operator or or_eq private protected public register reinterpret_cast requires restrict return short
    signed sizeof static static_assert static_cast struct switch template this thread_local throw true
    try typedef typeid typename union unsigned using virtual void volatile wchar_t while xor xor_eq as
    assert async await def del elif except finally from global import in is lambda nonlocal pass raise
    with yield none""".split()  # noqa: SIM905 (a word list reads better as text)
)


def field_name(name: str, boolean: bool = False) -> str:
    """A field's name as ROS 2 requires it (lower case): `LEDs` -> `leds`; TypeError when lowering is not enough.

    A reserved word (`RESERVED_WORDS`) is renamed: a `boolean` field's `virtual` is `is_virtual`,
    another's `class` is `class_value`.
    """
    lowered = name.lower()
    if lowered in RESERVED_WORDS:
        lowered = f"is_{lowered}" if boolean else f"{lowered}_value"
    if not _FIELD_NAME.fullmatch(lowered):
        raise TypeError(f"field {name!r} has no valid ROS 2 name")
    return lowered


def constant_name(name: str) -> str:
    """A constant's name as ROS 2 requires it (upper case): `kLongPress` -> `LONG_PRESS`, `ON` stays.

    A C++ style `k` prefix before a capital is dropped, and words of a camel-case name are joined with `_`.
    """
    if re.fullmatch(r"k[A-Z]\w*", name):
        name = name[1:]
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def constant_type(value: int | float) -> str:
    """The ROS type a constant is declared with: float64 for a float, else int32 or int64 by range."""
    if isinstance(value, float):
        return "float64"
    return "int32" if -(2**31) <= value < 2**31 else "int64"


_TYPES: dict[type[Any], MsgType] = {}


def msg_type(cls: type[Any]) -> MsgType:
    """The ROS 2 description of a message class (a registered bus type or a nested structure), made once."""
    known = _TYPES.get(cls)
    if known is not None:
        return known
    info = info_of(cls)
    fields = tuple(_field(name, spec) for name, spec in info.fields)
    constants = tuple(
        Constant(constant_type(value), constant_name(name), value) for name, value in info.constants.items()
    )
    described = _TYPES[cls] = MsgType(ros2_type_name(cls), cls, fields, constants, not fields)
    return described


def _field(name: str, spec: Spec) -> MsgField:
    kind = field_type(spec)
    return MsgField(field_name(name, boolean=kind.base == "bool" and not kind.array), kind, name)


def field_type(spec: Spec) -> FieldType:
    """The ROS 2 type of one field spec (see the module's rule)."""
    if isinstance(spec, Array):
        item: Spec = spec.item
        inner: list[int] = []
        while isinstance(item, Array):
            if item.length is None:
                raise TypeError(f"no ROS 2 type for an array of variable-length arrays: {spec!r}")
            inner.append(item.length)
            item = item.item
        element = field_type(item)
        if inner:  # ROS has no arrays of arrays: one flat sequence, as rosbridge describes it
            return FieldType(element.base, "sequence", 0, element.nested, tuple(inner))
        if spec.length is not None:
            return FieldType(element.base, "fixed", spec.length, element.nested)
        return FieldType(element.base, "sequence", 0, element.nested)
    if isinstance(spec, Int):
        return FieldType(f"{'' if spec.signed else 'u'}int{spec.bits}")
    if isinstance(spec, Float):
        return FieldType(f"float{spec.bits}")
    if isinstance(spec, Bool):
        return FieldType("bool")
    if isinstance(spec, Str):
        return FieldType("string")
    if isinstance(spec, Nested):
        nested = msg_type(spec.cls)
        return FieldType(nested.name, nested=nested)
    raise TypeError(f"no ROS 2 type for field spec {spec!r}")
