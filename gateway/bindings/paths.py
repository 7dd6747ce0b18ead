"""Input paths into a source's samples, and command fields of the message registry.

An input path names one number of one stream of the source device: the stream first, then the
fields, with `[n]` for an array element, e.g. ``state.axes[1]``, ``node/1/state.buttons[2]``,
``state.acceleration.x``. The stream is everything before the first dot (stream names have no
dots; they may have slashes). The axes and buttons of a `creos_messages/ControllerState` also have
names: ``state.axes.left_y`` is ``state.axes[1]`` and ``state.buttons.l1`` is ``state.buttons[4]``
(`AXIS_NAMES`, `BUTTON_NAMES`).

Reading a path (`InputPath.read`) gives a float: numbers as they are, booleans as 0 or 1, and None
when the stream has no sample yet, a field is missing or an index is beyond the array (a pad with
fewer axes), so the evaluator can treat it as released / centred.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from gateway.messages.schema import REGISTRY, Array, Bool, Float, Int, Nested, Spec, info_of

#: `creos_messages/ControllerState` axis names -> index (the seed's gamepad order).
AXIS_NAMES: Mapping[str, int] = {
    "left_x": 0,
    "left_y": 1,
    "right_x": 2,
    "right_y": 3,
    "left_trigger": 4,
    "right_trigger": 5,
}

#: `creos_messages/ControllerState` button names -> index; PlayStation and Xbox names for the same button.
BUTTON_NAMES: Mapping[str, int] = {
    **dict.fromkeys(("cross", "a", "south"), 0),
    **dict.fromkeys(("circle", "b", "east"), 1),
    **dict.fromkeys(("triangle", "y", "north"), 2),
    **dict.fromkeys(("square", "x", "west"), 3),
    **dict.fromkeys(("l1", "lb"), 4),
    **dict.fromkeys(("r1", "rb"), 5),
    **dict.fromkeys(("l2", "lt"), 6),
    **dict.fromkeys(("r2", "rt"), 7),
    **dict.fromkeys(("share", "back", "select"), 8),
    **dict.fromkeys(("options", "start"), 9),
    **dict.fromkeys(("ps", "guide", "home"), 10),
    **dict.fromkeys(("l3", "left_stick"), 11),
    **dict.fromkeys(("r3", "right_stick"), 12),
    "dpad_left": 13,
    "dpad_up": 14,
    "dpad_right": 15,
    "dpad_down": 16,
}

#: The message type whose `axes` and `buttons` the names above index.
CONTROLLER_STATE = "creos_messages/ControllerState"

_MISSING = object()
_SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[\d{1,4}\])*)")
_STREAM = re.compile(r"[A-Za-z0-9_\-/:]{1,128}")


@dataclass(frozen=True, slots=True)
class InputPath:
    """One parsed input path: the `stream` and the `steps` (field names and array indexes) into its message.

    `named` is the alias used (``axes.left_y``), or "" when the path uses indexes only; an alias is
    only valid on a `creos_messages/ControllerState` (`check_against`).
    """

    text: str
    stream: str
    steps: tuple[str | int, ...]
    named: str = ""

    def read(self, latest: Mapping[str, Any]) -> float | None:
        """The number at this path in `latest` (stream -> newest message, a dataclass or a plain mapping).

        None when the stream has no sample, or a field or element is missing; booleans read as 0.0 or 1.0.
        """
        value: Any = latest.get(self.stream)
        for step in self.steps:  # runs per input per output tick: cheap type tests first
            if value is None:
                return None
            if isinstance(step, int):
                if not isinstance(value, tuple | list) or step >= len(value):
                    return None
                value = value[step]
            elif isinstance(value, dict):
                value = value.get(step)
            else:
                found = getattr(value, step, _MISSING)
                if found is _MISSING and isinstance(value, Mapping):
                    found = value.get(step)
                value = None if found is _MISSING else found
        if value.__class__ is float:
            return value if value == value else None  # NaN reads as missing
        if isinstance(value, bool):
            return 1.0 if value else 0.0
        if isinstance(value, int | float):
            try:
                number = float(value)
            except OverflowError:  # an integer beyond any float (plain data from anywhere)
                return math.inf if value > 0 else -math.inf
            return number if number == number else None  # NaN reads as missing
        return None

    def check_against(self, message_type: str) -> str | None:
        """Why this path does not lead to a number of `message_type`, or None when it does."""
        info = REGISTRY.get(message_type)
        if info is None:
            return f"unknown message type {message_type!r}"
        if self.named and message_type != CONTROLLER_STATE:
            return f"the name {self.named!r} only applies to a {CONTROLLER_STATE}, not a {message_type}"
        spec: Spec | None = None
        fields: Mapping[str, Spec] = dict(info.fields)
        where = message_type
        for step in self.steps:
            if isinstance(step, int):
                if not isinstance(spec, Array):
                    return f"{where} is not an array"
                if spec.length is not None and step >= spec.length:
                    return f"{where} has {spec.length} elements, [{step}] is beyond"
                if step >= spec.max_length:
                    return f"{where} holds at most {spec.max_length} elements, [{step}] is beyond"
                spec = spec.item
                where = f"{where}[{step}]"
                continue
            if spec is not None:
                if not isinstance(spec, Nested):
                    return f"{where} has no field {step!r}"
                fields = dict(info_of(spec.cls).fields)
            if step not in fields:
                return f"{where} has no field {step!r} (fields: {', '.join(fields) or 'none'})"
            spec = fields[step]
            where = f"{where}.{step}"
        if not isinstance(spec, Int | Float | Bool):
            return f"{where} is not a number or a boolean"
        return None


def parse_input_path(text: str) -> InputPath:
    """Parse ``stream.field[.field|[n]]...``; raise `ValueError` saying what is wrong."""
    if not isinstance(text, str) or "." not in text:
        raise ValueError(f"expected <stream>.<field>..., e.g. 'state.axes.left_y', got {text!r}")
    stream, _, rest = text.partition(".")
    if not _STREAM.fullmatch(stream):
        raise ValueError(f"{stream!r} is not a stream name (letters, digits, _ - / :)")
    steps: list[str | int] = []
    named = ""
    for part in rest.split("."):
        match = _SEGMENT.fullmatch(part)
        if match is None:
            raise ValueError(f"{part!r} in {text!r} is not a field name with optional [index]es")
        name, indexes = match.group(1), match.group(2)
        # `axes.left_y`: a name right after `axes`/`buttons` (no index between) is that element.
        previous = steps[-1] if steps else None
        aliases = AXIS_NAMES if previous == "axes" else BUTTON_NAMES if previous == "buttons" else None
        if aliases is not None and not indexes:
            if name not in aliases:
                raise ValueError(f"{name!r} in {text!r} is not a {previous} name (names: {', '.join(aliases)})")
            steps.append(aliases[name])
            named = f"{previous}.{name}"
            continue
        steps.append(name)
        steps.extend(int(number) for number in re.findall(r"\[(\d+)\]", indexes))
    return InputPath(text, stream, tuple(steps), named)


@dataclass(frozen=True, slots=True)
class FieldRange:
    """The values a command field takes: inclusive `minimum`/`maximum` and whether it is an integer."""

    minimum: float
    maximum: float
    integer: bool
    #: False for a float field with no declared range (its bounds are the float's own): an output needs `max`.
    bounded: bool = True


@dataclass(frozen=True, slots=True)
class FieldProblem:
    """Why a command field cannot be an output: the `key` at fault ("command" or "field") and the `message`."""

    key: Literal["command", "field"]
    message: str


def command_field(command: str, field: str) -> FieldRange | FieldProblem:
    """The range of number field `field` of command type `command`, or why it cannot be an output."""
    info = REGISTRY.get(command)
    if info is None:
        return FieldProblem("command", f"unknown command type {command!r}")
    if info.kind != "command":
        return FieldProblem("command", f"{command} is a {info.kind}, not a command")
    specs = dict(info.fields)
    if field not in specs:
        return FieldProblem("field", f"{command} has no field {field!r} (fields: {', '.join(specs) or 'none'})")
    spec = specs[field]
    if isinstance(spec, Int):
        if spec.choices is not None:
            return FieldProblem("field", f"{command}.{field} takes only the values {list(spec.choices)}: not an output")
        low, high = spec.bounds()
        return FieldRange(float(low), float(high), True)
    if isinstance(spec, Float):
        limit = 3.4028234663852886e38 if spec.bits == 32 else 1.7976931348623157e308
        low_f = -limit if spec.minimum is None else spec.minimum
        high_f = limit if spec.maximum is None else spec.maximum
        return FieldRange(low_f, high_f, False, spec.minimum is not None and spec.maximum is not None)
    return FieldProblem("field", f"{command}.{field} is not a number field")


def command_args_problem(command: str, args: Mapping[str, Any]) -> str | None:
    """Why `args` (fixed fields of a command) are not valid for `command`, or None when they are."""
    from gateway.errors import InvalidArgument
    from gateway.messages.schema import from_plain

    info = REGISTRY.get(command)
    if info is None:
        return f"unknown command type {command!r}"
    try:
        from_plain(info.cls, dict(args), "args")
    except InvalidArgument as error:
        return error.message
    return None


__all__ = [
    "AXIS_NAMES",
    "BUTTON_NAMES",
    "CONTROLLER_STATE",
    "FieldProblem",
    "FieldRange",
    "InputPath",
    "command_args_problem",
    "command_field",
    "parse_input_path",
]
