"""`[bindings.<name>]` tables read into frozen dataclasses, and checked against the configured devices.

`parse_bindings_section` reads the whole `[bindings]` table (each binding, and `initial_set`);
`parse_bindings` gives just the bindings. Both report every problem as a `ConfigError` named by its
TOML key path (`bindings.drive.inputs.throttle.deadzone`), so a file is reported whole.

`check_bindings` then checks them against the configured devices and their kinds: each source and
target device exists, every input path leads to a number of a stream the source's kind publishes,
every output command is one the target's kind accepts, and no binding's output feeds its own source
(directly or through other bindings). docs/bindings.md documents every key.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from gateway.bindings.buttons import TRIGGERS, Trigger
from gateway.bindings.paths import FieldProblem, InputPath, command_args_problem, command_field, parse_input_path
from gateway.bindings.shaping import DeadzoneShape, InputShape
from gateway.errors import ConfigError
from gateway.topics import check_device_id

if TYPE_CHECKING:
    from gateway.core.adapter import DeviceKinds
    from gateway.core.config import DeviceConfig

Mode = Literal["arcade", "tank", "direct", "none"]
T = TypeVar("T")

#: The inputs and outputs each differential mode needs, by name.
ARCADE_INPUTS = ("throttle", "steer")
TANK_INPUTS = ("left", "right")
DIFFERENTIAL_OUTPUTS = ("left", "right")
#: The key of `[bindings]` that is not a binding: the binding set active at start.
INITIAL_SET_KEY = "initial_set"


# -- what the runtime gets -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InputSpec:
    """One named input of a binding: where it is read (`path`) and how it is shaped."""

    name: str
    path: InputPath
    shape: InputShape = field(default_factory=InputShape)


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """One named output: the number field `field` of command type `command` on the target.

    `args` are the command's other fields, fixed (a LEGO motor's `port`). `full_scale` is the value
    (target units) a normalized output of 1 gives; `minimum`/`maximum` the field's range, which
    every output stays in; `integer` when the field is an integer (values are rounded when sent);
    `safe` the value the safe output sets (target units, default 0).
    """

    name: str
    command: str
    field: str
    args: tuple[tuple[str, Any], ...] = ()
    full_scale: float = 1.0
    minimum: float = -1.0
    maximum: float = 1.0
    integer: bool = False
    safe: float = 0.0


@dataclass(frozen=True, slots=True)
class ArcadeMix:
    """Differential drive from one stick: inputs `throttle` and `steer` -> outputs `left` and `right`."""

    mode: Literal["arcade"] = "arcade"


@dataclass(frozen=True, slots=True)
class TankMix:
    """Differential drive, one input per wheel: inputs `left` and `right` -> outputs `left` and `right`."""

    mode: Literal["tank"] = "tank"


@dataclass(frozen=True, slots=True)
class DirectMix:
    """Each input drives the output of the same name (axis -> field)."""

    mode: Literal["direct"] = "direct"


@dataclass(frozen=True, slots=True)
class ActionsOnly:
    """No continuous output: the binding only fires its button actions."""

    mode: Literal["none"] = "none"


#: The mixing modes, tagged by `mode`.
Mix = ArcadeMix | TankMix | DirectMix | ActionsOnly


@dataclass(frozen=True, slots=True)
class Slew:
    """The slew limit of every output, in target units per second: away from 0 (`up`) and towards it (`down`).

    `math.inf`: no limit (the config's 0).
    """

    up_per_s: float = math.inf
    down_per_s: float = math.inf


@dataclass(frozen=True, slots=True)
class ActionSpec:
    """A button action: when `trigger` fires on `input`, send `command` with `args`, or switch to `switch_set`.

    `device`: where the command goes ("" = the binding's target). A "toggle" sends `args` when it
    turns on and `off_args` (when given) when it turns off. `threshold`/`hysteresis` in the input's
    units, `hold_s`/`double_s` in seconds (see `gateway.bindings.buttons`).
    """

    index: int
    input: InputPath
    trigger: Trigger
    threshold: float = 0.5
    hysteresis: float = 0.1
    hold_s: float = 0.8
    double_s: float = 0.4
    command: str = ""
    args: tuple[tuple[str, Any], ...] = ()
    off_args: tuple[tuple[str, Any], ...] | None = None
    device: str = ""
    switch_set: str = ""


@dataclass(frozen=True, slots=True)
class BindingSpec:
    """One `[bindings.<name>]` table, read and checked.

    `source`/`target`: device ids or globs (`pad-*`). `rate_hz`: outputs per second, on the
    runtime's own timer. `timeout_s`: the newest source sample older than this -> the safe output.
    `deadman`: the input that must be held (>= 0.5) to drive; None only when the config says
    `deadman = "none"`. `turbo`: the input that selects each input's `turbo_scale`. `priority`:
    0-255, higher wins a target; `target_priority`: (device id, priority) pairs that replace it on
    those devices. `set`: the binding set it belongs to ("" = always active).
    """

    name: str
    source: str
    target: str
    mix: Mix
    inputs: tuple[InputSpec, ...] = ()
    outputs: tuple[OutputSpec, ...] = ()
    slew: Slew = Slew()
    rate_hz: float = 50.0
    timeout_s: float = 0.5
    deadman: InputPath | None = None
    turbo: InputPath | None = None
    priority: int = 100
    target_priority: tuple[tuple[str, int], ...] = ()
    enabled: bool = True
    set: str = ""
    actions: tuple[ActionSpec, ...] = ()

    @property
    def period_s(self) -> float:
        """One output period, in seconds."""
        return 1.0 / self.rate_hz

    def input_paths(self) -> Iterable[tuple[str, InputPath]]:
        """Every input path the binding reads, with its TOML key path."""
        for spec in self.inputs:
            yield f"bindings.{self.name}.inputs.{spec.name}", spec.path
        if self.deadman is not None:
            yield f"bindings.{self.name}.deadman", self.deadman
        if self.turbo is not None:
            yield f"bindings.{self.name}.turbo", self.turbo
        for action in self.actions:
            yield f"bindings.{self.name}.actions[{action.index}].input", action.input


@dataclass(frozen=True, slots=True)
class BindingsConfig:
    """The whole `[bindings]` section: the bindings, and the binding set active at start ("" = none)."""

    bindings: tuple[BindingSpec, ...] = ()
    initial_set: str = ""

    def sets(self) -> tuple[str, ...]:
        """Every binding set named, in file order."""
        return tuple(dict.fromkeys(binding.set for binding in self.bindings if binding.set))


# -- the TOML tables, as `gateway.core.config.build_partial` reads them ----------------------


def _range(low: float | None = None, high: float | None = None) -> dict[str, float | None]:
    return {"min": low, "max": high}


@dataclass(frozen=True, slots=True)
class _BindingTable:
    source: str
    mode: Mode
    target: str = ""
    rate_hz: float = field(default=50.0, metadata=_range(1.0, 1000.0))
    timeout_s: float = field(default=0.5, metadata=_range(0.01, 60.0))
    deadman: str = ""
    turbo: str = ""
    priority: int = field(default=100, metadata=_range(0, 255))
    enabled: bool = True
    set: str = ""


@dataclass(frozen=True, slots=True)
class _SlewTable:
    up_per_s: float = field(default=0.0, metadata=_range(0.0))
    down_per_s: float = field(default=0.0, metadata=_range(0.0))


@dataclass(frozen=True, slots=True)
class _InputTable:
    path: str
    deadzone: float = field(default=0.0, metadata=_range(0.0, 0.95))
    deadzone_shape: DeadzoneShape = "axial"
    pair: str = ""
    expo: float = field(default=0.0, metadata=_range(0.0, 1.0))
    curve: tuple[tuple[float, ...], ...] = ()
    invert: bool = False
    scale: float = field(default=1.0, metadata=_range(0.0, 10.0))
    turbo_scale: float | None = field(default=None, metadata=_range(0.0, 10.0))


@dataclass(frozen=True, slots=True)
class _OutputTable:
    command: str
    field: str
    max: float | None = None
    safe: float = 0.0


@dataclass(frozen=True, slots=True)
class _ActionTable:
    input: str
    on: Trigger
    threshold: float = 0.5
    hysteresis: float = field(default=0.1, metadata=_range(0.0))
    hold_s: float = field(default=0.8, metadata=_range(0.0, 3600.0))
    double_s: float = field(default=0.4, metadata=_range(0.01, 10.0))
    command: str = ""
    device: str = ""
    switch_set: str = ""


# -- reading -----------------------------------------------------------------------------------


def parse_bindings(table: Mapping[str, Any]) -> tuple[list[BindingSpec], list[ConfigError]]:
    """Every binding of a `[bindings]` table, and every problem (named by key path).

    When there are problems the bindings are read only as far as they could be (bad keys left out,
    for `check_bindings` to report the rest of the file): refuse the configuration, never run them.
    """
    section, problems = parse_bindings_section(table)
    return list(section.bindings), problems


def parse_bindings_section(table: object) -> tuple[BindingsConfig, list[ConfigError]]:
    """The `[bindings]` section: each `[bindings.<name>]` table and `initial_set`; every problem named.

    As `parse_bindings`: with problems, the bindings are partial and only good for `check_bindings`.
    """
    if not isinstance(table, Mapping):
        return BindingsConfig(), [
            ConfigError("bindings", f"expected a table of [bindings.<name>] tables, got {table!r}")
        ]
    problems: list[ConfigError] = []
    bindings: list[BindingSpec] = []
    initial_set = ""
    for name, binding_table in table.items():
        if name == INITIAL_SET_KEY:
            if isinstance(binding_table, str):
                initial_set = binding_table
            else:
                problems.append(ConfigError(f"bindings.{name}", f"expected a string, got {binding_table!r}"))
            continue
        binding, binding_problems = _parse_binding(name, binding_table)
        problems += binding_problems
        if binding is not None:
            bindings.append(binding)
    section = BindingsConfig(tuple(bindings), initial_set)
    sets = section.sets()
    if initial_set and initial_set not in sets:
        problems.append(
            ConfigError(
                f"bindings.{INITIAL_SET_KEY}",
                f"no binding is in set {initial_set!r} (sets: {', '.join(sets) or 'none'})",
            )
        )
    if not initial_set and sets:
        section = BindingsConfig(section.bindings, sets[0])
    for binding in bindings:
        for action in binding.actions:
            if action.switch_set and action.switch_set not in sets:
                problems.append(
                    ConfigError(
                        f"bindings.{binding.name}.actions[{action.index}].switch_set",
                        f"no binding is in set {action.switch_set!r} (sets: {', '.join(sets) or 'none'})",
                    )
                )
    return section, problems


def _path_or_problem(text: str, key: str, problems: list[ConfigError]) -> InputPath | None:
    try:
        return parse_input_path(text)
    except ValueError as error:
        problems.append(ConfigError(key, str(error)))
        return None


def _not_finite(parsed: object, path: str) -> list[ConfigError]:
    """The number keys of a read table that hold nan or inf (TOML allows both; no binding option means them)."""
    problems = []
    for item in dataclasses.fields(parsed):  # type: ignore[arg-type]
        value = getattr(parsed, item.name)
        numbers = [value] if isinstance(value, float) else []
        if isinstance(value, tuple):
            numbers = [number for point in value for number in (point if isinstance(point, tuple) else (point,))]
        if any(isinstance(number, float) and not math.isfinite(number) for number in numbers):
            problems.append(ConfigError(f"{path}.{item.name}", "must be a finite number"))
    return problems


def _build(cls: type[T], table: object, path: str, skip: tuple[str, ...] = ()) -> tuple[T | None, list[ConfigError]]:
    """`gateway.core.config.build_partial`, refusing nan and inf too."""
    from gateway.core.config import build_partial  # here: gateway.core.config imports this module

    parsed, problems = build_partial(cls, table, path, skip)
    if parsed is None:
        return None, problems
    bad = _not_finite(parsed, path)
    return (None if bad else parsed), problems + bad


def _parse_binding(name: str, table: object) -> tuple[BindingSpec | None, list[ConfigError]]:
    """One `[bindings.<name>]` table, and its problems; None when not even its keys could be read."""
    path = f"bindings.{name}"
    try:
        check_device_id(name)
    except ValueError as error:
        return None, [ConfigError(path, str(error))]
    skipped = ("inputs", "outputs", "slew", "actions", "target_priority")
    base, problems = _build(_BindingTable, table, path, skip=skipped)
    if base is None or not isinstance(table, Mapping):
        return None, problems
    target_priority = _parse_target_priority(f"{path}.target_priority", table.get("target_priority", {}), problems)
    inputs = _parse_inputs(path, table.get("inputs", {}), problems)
    outputs = _parse_outputs(path, table.get("outputs", {}), problems)
    slew_table, slew_problems = _build(_SlewTable, table.get("slew", {}), f"{path}.slew")
    problems += slew_problems
    slew = Slew()
    if slew_table is not None:
        slew = Slew(slew_table.up_per_s or math.inf, slew_table.down_per_s or math.inf)
    actions = _parse_actions(path, table.get("actions", []), problems)
    mixes: dict[str, Mix] = {"arcade": ArcadeMix(), "tank": TankMix(), "direct": DirectMix(), "none": ActionsOnly()}
    mix = mixes[base.mode]
    problems += _mode_problems(path, mix, table)
    deadman: InputPath | None = None
    if base.deadman == "none":
        deadman = None
    elif base.deadman:
        deadman = _path_or_problem(base.deadman, f"{path}.deadman", problems)
    elif not isinstance(mix, ActionsOnly):
        problems.append(
            ConfigError(f"{path}.deadman", 'required: the input to hold while driving, or "none" to drive without one')
        )
    turbo = _path_or_problem(base.turbo, f"{path}.turbo", problems) if base.turbo else None
    if turbo is None and not base.turbo:
        problems += [
            ConfigError(f"{path}.inputs.{spec.name}.turbo_scale", f"needs {path}.turbo (the input that selects it)")
            for spec in inputs
            if spec.shape.turbo_scale is not None
        ]
    if not base.target and not isinstance(mix, ActionsOnly):
        problems.append(ConfigError(f"{path}.target", "required key is missing"))
    if not base.target:
        problems += [
            ConfigError(f"{path}.actions[{action.index}].device", "required: the binding has no target")
            for action in actions
            if action.command and not action.device
        ]
    if not base.source:
        problems.append(ConfigError(f"{path}.source", "must name a device (an id or a glob)"))
    for key, value in (("source", base.source), ("target", base.target)):
        if value and not _is_device_pattern(value):
            problems.append(ConfigError(f"{path}.{key}", f"{value!r} is not a device id or glob"))
    # With problems the binding is still returned as far as it was read, so that the checks against
    # the devices report the rest of the file in the same pass; a file with problems is never run.
    return (
        BindingSpec(
            name=name,
            source=base.source,
            target=base.target,
            mix=mix,
            inputs=tuple(inputs),
            outputs=tuple(outputs),
            slew=slew,
            rate_hz=base.rate_hz,
            timeout_s=base.timeout_s,
            deadman=deadman,
            turbo=turbo,
            priority=base.priority,
            target_priority=target_priority,
            enabled=base.enabled,
            set=base.set,
            actions=tuple(actions),
        ),
        problems,
    )


def _parse_target_priority(path: str, table: object, problems: list[ConfigError]) -> tuple[tuple[str, int], ...]:
    """`target_priority = { <device id> = <0-255>, ... }`: the binding's priority on those devices."""
    if not isinstance(table, Mapping):
        problems.append(ConfigError(path, "expected a table of device ids to priorities (0 to 255)"))
        return ()
    pairs: list[tuple[str, int]] = []
    for device_id, priority in table.items():
        key = f"{path}.{device_id}"
        try:
            check_device_id(device_id)
        except ValueError as error:
            problems.append(ConfigError(key, f"not a device id: {error}"))
            continue
        if isinstance(priority, bool) or not isinstance(priority, int):
            problems.append(ConfigError(key, f"expected an integer from 0 to 255, got {priority!r}"))
        elif not 0 <= priority <= 255:
            problems.append(ConfigError(key, f"{priority} is outside [0, 255]"))
        else:
            pairs.append((device_id, priority))
    return tuple(pairs)


def _is_device_pattern(value: str) -> bool:
    try:
        check_device_id(value.replace("*", "x").replace("?", "x").replace("[", "x").replace("]", "x"))
    except ValueError:
        return False
    return True


def _parse_inputs(path: str, table: object, problems: list[ConfigError]) -> list[InputSpec]:
    if not isinstance(table, Mapping):
        problems.append(ConfigError(f"{path}.inputs", f"expected a table of inputs, got {table!r}"))
        return []
    inputs = []
    for name, input_table in table.items():
        key = f"{path}.inputs.{name}"
        raw = {"path": input_table} if isinstance(input_table, str) else input_table
        parsed, input_problems = _build(_InputTable, raw, key)
        problems += input_problems
        if parsed is None:
            continue
        input_path = _path_or_problem(parsed.path, f"{key}.path", problems)
        curve = _curve(parsed.curve, f"{key}.curve", problems)
        if curve and parsed.expo:
            problems.append(ConfigError(f"{key}.curve", "set expo or curve, not both"))
        if input_path is None:
            continue
        shape = InputShape(
            deadzone=parsed.deadzone,
            deadzone_shape=parsed.deadzone_shape,
            pair=parsed.pair,
            expo=parsed.expo,
            curve=curve,
            invert=parsed.invert,
            scale=parsed.scale,
            turbo_scale=parsed.turbo_scale,
        )
        inputs.append(InputSpec(name, input_path, shape))
    problems += _radial_problems(path, inputs)
    return inputs


def _curve(
    points: tuple[tuple[float, ...], ...], key: str, problems: list[ConfigError]
) -> tuple[tuple[float, float], ...]:
    if not points:
        return ()
    if any(len(point) != 2 for point in points):
        problems.append(ConfigError(key, "expected [input, output] pairs, e.g. [[0, 0], [0.5, 0.2], [1, 1]]"))
        return ()
    pairs = tuple((point[0], point[1]) for point in points)
    if len(pairs) < 2 or pairs[0] != (0.0, 0.0):
        problems.append(ConfigError(key, "expected at least 2 points, the first [0, 0] (no output at rest)"))
        return ()
    xs = [x for x, _ in pairs]
    if any(b <= a for a, b in itertools.pairwise(xs)) or xs[-1] > 1.0:
        problems.append(ConfigError(key, "inputs must increase strictly, within [0, 1]"))
        return ()
    if any(not 0.0 <= y <= 1.0 for _, y in pairs):
        problems.append(ConfigError(key, "outputs must be within [0, 1]"))
        return ()
    return pairs


def _radial_problems(path: str, inputs: Sequence[InputSpec]) -> list[ConfigError]:
    by_name = {spec.name: spec for spec in inputs}
    problems = []
    for spec in inputs:
        key = f"{path}.inputs.{spec.name}"
        shape = spec.shape
        if shape.deadzone_shape == "axial":
            if shape.pair:
                problems.append(
                    ConfigError(f"{key}.pair", 'only a radial deadzone has a pair (deadzone_shape = "radial")')
                )
            continue
        other = by_name.get(shape.pair)
        if not shape.pair or other is None or other is spec:
            known = ", ".join(name for name in by_name if name != spec.name) or "none"
            problems.append(
                ConfigError(f"{key}.pair", f"a radial deadzone needs the stick's other input (inputs: {known})")
            )
        elif other.shape.deadzone_shape != "radial" or other.shape.pair != spec.name:
            problems.append(ConfigError(f"{key}.pair", f"{other.name} must be radial too, with pair = {spec.name!r}"))
        elif other.shape.deadzone != shape.deadzone:
            problems.append(ConfigError(f"{key}.deadzone", f"must equal {other.name}'s (one stick, one deadzone)"))
    return problems


def _fixed_args(value: object, key: str, problems: list[ConfigError]) -> tuple[tuple[str, Any], ...] | None:
    if not isinstance(value, Mapping):
        problems.append(ConfigError(key, f"expected a table of the command's fields, got {value!r}"))
        return None
    return tuple((str(name), item) for name, item in value.items())


def _parse_outputs(path: str, table: object, problems: list[ConfigError]) -> list[OutputSpec]:
    if not isinstance(table, Mapping):
        problems.append(ConfigError(f"{path}.outputs", f"expected a table of outputs, got {table!r}"))
        return []
    outputs = []
    for name, output_table in table.items():
        key = f"{path}.outputs.{name}"
        parsed, output_problems = _build(_OutputTable, output_table, key, skip=("args",))
        problems += output_problems
        if parsed is None or not isinstance(output_table, Mapping):
            continue
        args = _fixed_args(output_table.get("args", {}), f"{key}.args", problems)
        found = command_field(parsed.command, parsed.field)
        if isinstance(found, FieldProblem):
            problems.append(ConfigError(f"{key}.{found.key}", found.message))
            continue
        if args is None:
            continue
        if parsed.field in dict(args):
            problems.append(
                ConfigError(f"{key}.args.{parsed.field}", "is the output's field: it is set by the binding")
            )
            continue
        rest = min(max(0.0, found.minimum), found.maximum)  # any valid value: only the fixed args are checked
        why = command_args_problem(parsed.command, {**dict(args), parsed.field: int(rest) if found.integer else rest})
        if why is not None:
            problems.append(ConfigError(f"{key}.args", why))
            continue
        magnitude = max(abs(found.minimum), abs(found.maximum))
        full_scale = magnitude if parsed.max is None else parsed.max
        where = f"{parsed.command}.{parsed.field}"
        if parsed.max is None and not found.bounded:
            problems.append(ConfigError(f"{key}.max", f"required: {where} declares no range of its own"))
            continue
        if parsed.max is not None and not 0 < parsed.max <= magnitude:
            problems.append(ConfigError(f"{key}.max", f"{parsed.max!r} is outside (0, {magnitude:g}] ({where})"))
            continue
        if not found.minimum <= parsed.safe <= found.maximum:
            bounds = f"[{found.minimum:g}, {found.maximum:g}]"
            problems.append(ConfigError(f"{key}.safe", f"{parsed.safe!r} is outside {bounds} ({where})"))
            continue
        outputs.append(
            OutputSpec(
                name=name,
                command=parsed.command,
                field=parsed.field,
                args=args,
                full_scale=full_scale,
                minimum=found.minimum,
                maximum=found.maximum,
                integer=found.integer,
                safe=parsed.safe,
            )
        )
    return outputs


def _parse_actions(path: str, table: object, problems: list[ConfigError]) -> list[ActionSpec]:
    if not isinstance(table, list):
        problems.append(
            ConfigError(f"{path}.actions", f"expected an array of tables ([[{path}.actions]]), got {table!r}")
        )
        return []
    actions = []
    for index, action_table in enumerate(table):
        key = f"{path}.actions[{index}]"
        parsed, action_problems = _build(_ActionTable, action_table, key, skip=("args", "off_args"))
        problems += action_problems
        if parsed is None or not isinstance(action_table, Mapping):
            continue
        input_path = _path_or_problem(parsed.input, f"{key}.input", problems)
        if bool(parsed.command) == bool(parsed.switch_set):
            problems.append(ConfigError(key, "set exactly one of command and switch_set"))
            continue
        args = _fixed_args(action_table.get("args", {}), f"{key}.args", problems)
        off_args = None
        if "off_args" in action_table:
            off_args = _fixed_args(action_table["off_args"], f"{key}.off_args", problems)
            if parsed.on != "toggle":
                problems.append(ConfigError(f"{key}.off_args", 'only a "toggle" has off_args'))
        if parsed.switch_set and ("args" in action_table or "off_args" in action_table or parsed.device):
            problems.append(ConfigError(key, "a switch_set action sends no command: no args, off_args or device"))
        if parsed.command:
            for args_key, fixed in (("args", args), ("off_args", off_args)):
                why = command_args_problem(parsed.command, dict(fixed)) if fixed is not None else None
                if why is not None:
                    problems.append(
                        ConfigError(f"{key}.{args_key}" if "unknown command" not in why else f"{key}.command", why)
                    )
        if parsed.device and not _is_device_pattern(parsed.device):
            problems.append(ConfigError(f"{key}.device", f"{parsed.device!r} is not a device id or glob"))
        if input_path is None or args is None:
            continue
        actions.append(
            ActionSpec(
                index=index,
                input=input_path,
                trigger=parsed.on,
                threshold=parsed.threshold,
                hysteresis=parsed.hysteresis,
                hold_s=parsed.hold_s,
                double_s=parsed.double_s,
                command=parsed.command,
                args=args,
                off_args=off_args,
                device=parsed.device,
                switch_set=parsed.switch_set,
            )
        )
    return actions


def _mode_problems(path: str, mix: Mix, table: Mapping[str, Any]) -> list[ConfigError]:
    """The inputs and outputs the mode needs are there, and nothing else (names from the file, even unparsed)."""
    input_names = list(table.get("inputs", {}) or {}) if isinstance(table.get("inputs", {}), Mapping) else []
    output_names = list(table.get("outputs", {}) or {}) if isinstance(table.get("outputs", {}), Mapping) else []
    problems = []
    if isinstance(mix, ArcadeMix | TankMix):
        wanted_inputs = ARCADE_INPUTS if isinstance(mix, ArcadeMix) else TANK_INPUTS
        for wanted, names, kind in (
            (wanted_inputs, input_names, "inputs"),
            (DIFFERENTIAL_OUTPUTS, output_names, "outputs"),
        ):
            problems += [
                ConfigError(f"{path}.{kind}.{name}", f"mode {mix.mode!r} needs {kind} {' and '.join(wanted)}")
                for name in wanted
                if name not in names
            ]
            problems += [
                ConfigError(
                    f"{path}.{kind}.{name}", f"mode {mix.mode!r} has no {kind[:-1]} {name!r} (only {', '.join(wanted)})"
                )
                for name in names
                if name not in wanted
            ]
    elif isinstance(mix, DirectMix):
        if not output_names:
            problems.append(ConfigError(f"{path}.outputs", 'mode "direct" needs at least one output'))
        problems += [
            ConfigError(
                f"{path}.outputs.{name}",
                f'mode "direct" drives each output from the input of its name: no input {name!r}',
            )
            for name in output_names
            if name not in input_names
        ]
        problems += [
            ConfigError(f"{path}.inputs.{name}", f'mode "direct": no output {name!r} for this input')
            for name in input_names
            if name not in output_names
        ]
    else:
        if input_names:
            problems.append(ConfigError(f"{path}.inputs", 'mode "none" has no inputs (actions name their own input)'))
        if output_names:
            problems.append(ConfigError(f"{path}.outputs", 'mode "none" has no outputs (actions name their command)'))
    return problems


# -- checking against the devices -------------------------------------------------------------


def matching_devices(pattern: str, device_ids: Iterable[str]) -> list[str]:
    """The ids among `device_ids` that `pattern` (an id or a glob with * ? [...]) names."""
    return [device_id for device_id in device_ids if fnmatch.fnmatchcase(device_id, pattern)]


def _is_glob(pattern: str) -> bool:
    return any(char in pattern for char in "*?[")


def stream_type(streams: Mapping[str, str], stream: str) -> str | None:
    """The message type an adapter kind publishes on `stream` (its `streams` keys may be globs), or None.

    "" is a stream whose type is known only at run time.
    """
    if stream in streams:
        return streams[stream]
    for pattern, message_type in streams.items():
        if fnmatch.fnmatchcase(stream, pattern):
            return message_type
    return None


def check_source_paths(binding: BindingSpec, device_id: str, streams: Mapping[str, str]) -> list[ConfigError]:
    """Every input path of `binding` against the streams (stream -> message type) of source `device_id`.

    The runtime may call it too, for a device whose streams are only known once it runs (a replay,
    an MQTT import); `check_bindings` calls it for each configured source whose kind declares them.
    """
    problems = []
    for key, input_path in binding.input_paths():
        message_type = stream_type(streams, input_path.stream)
        if message_type is None:
            known = ", ".join(streams) or "none"
            problems.append(
                ConfigError(key, f"{device_id} publishes no stream {input_path.stream!r} (streams: {known})")
            )
            continue
        if not message_type:  # the kind says its type is known only at run time (a LEGO port's device)
            continue
        why = input_path.check_against(message_type)
        if why is not None:
            problems.append(ConfigError(key, f"{input_path.text} on {device_id}: {why}"))
    return problems


def check_target_commands(
    binding: BindingSpec, device_id: str, accepts: Sequence[str], actions: Sequence[ActionSpec] | None = None
) -> list[ConfigError]:
    """The commands `device_id` (accepting `accepts`) would refuse: the outputs', or those of `actions` when given."""
    accepted = ", ".join(accepts) or "nothing"
    if actions is None:
        return [
            ConfigError(
                f"bindings.{binding.name}.outputs.{output.name}.command",
                f"{device_id} does not accept {output.command!r} (it accepts: {accepted})",
            )
            for output in binding.outputs
            if output.command not in accepts
        ]
    return [
        ConfigError(
            f"bindings.{binding.name}.actions[{action.index}].command",
            f"{device_id} does not accept {action.command!r} (it accepts: {accepted})",
        )
        for action in actions
        if action.command and action.command not in accepts
    ]


def check_bindings(
    specs: Sequence[BindingSpec], devices: Mapping[str, DeviceConfig], kinds: DeviceKinds
) -> list[ConfigError]:
    """Every problem of `specs` against the configured `devices` (id -> config) and their `kinds`.

    An exact source or target id must be configured; a glob may also name devices that appear at
    run time (MQTT imports, replays) and is checked against the configured devices it matches.
    Paths are checked against each source kind's declared `streams` (kinds that declare none, whose
    streams are only known at run time, are left to the runtime: `check_source_paths`).
    """
    problems: list[ConfigError] = []
    for binding in specs:
        path = f"bindings.{binding.name}"
        for key, pattern in (("source", binding.source), ("target", binding.target)):
            if pattern and not _is_glob(pattern) and pattern not in devices:
                known = ", ".join(devices) or "none"
                problems.append(ConfigError(f"{path}.{key}", f"unknown device {pattern!r} (devices: {known})"))
        for device_id in matching_devices(binding.source, devices):
            adapter = _adapter_class(kinds, devices[device_id].kind)
            streams = getattr(adapter, "streams", None) if adapter is not None else None
            if streams:
                problems += check_source_paths(binding, device_id, streams)
        for device_id in matching_devices(binding.target, devices) if binding.target else ():
            adapter = _adapter_class(kinds, devices[device_id].kind)
            if adapter is not None:
                problems += check_target_commands(binding, device_id, tuple(adapter.accepts))
        driven = [pattern for pattern in (binding.target, *(a.device for a in binding.actions)) if pattern]
        for device_id, _ in binding.target_priority:
            if not any(fnmatch.fnmatchcase(device_id, pattern) for pattern in driven):
                key = f"{path}.target_priority.{device_id}"
                shown = ", ".join(repr(pattern) for pattern in driven) or "none"
                problems.append(ConfigError(key, f"{device_id!r} is not a device the binding drives ({shown})"))
        for action in binding.actions:
            pattern = action.device or binding.target
            if not action.command or not pattern:
                continue
            if action.device and not _is_glob(pattern) and pattern not in devices:
                known = ", ".join(devices) or "none"
                key = f"{path}.actions[{action.index}].device"
                problems.append(ConfigError(key, f"unknown device {pattern!r} (devices: {known})"))
            for device_id in matching_devices(pattern, devices):
                adapter = _adapter_class(kinds, devices[device_id].kind)
                if adapter is not None:
                    problems += check_target_commands(binding, device_id, tuple(adapter.accepts), (action,))
    problems += find_loops(specs, list(devices))
    return _unique(problems)


def _unique(problems: list[ConfigError]) -> list[ConfigError]:
    seen: dict[str, ConfigError] = {}
    for problem in problems:
        seen.setdefault(str(problem), problem)
    return list(seen.values())


def _adapter_class(kinds: DeviceKinds, kind: str) -> Any:
    try:
        return kinds.adapter_class(kind)
    except (KeyError, ImportError):  # an unknown kind or a missing extra: already reported with the device
        return None


def find_loops(specs: Sequence[BindingSpec], device_ids: Sequence[str]) -> list[ConfigError]:
    """Bindings whose output feeds their own source: a device that drives itself, directly or through other bindings.

    Edges go from each enabled driving binding's source devices to its target devices (globs
    expanded over `device_ids`); a binding is in a loop when one of its targets reaches one of
    its sources. Only continuous outputs count: an action (a rumble on a button) is not a loop.
    """
    edges: dict[str, set[str]] = {}
    driving = [spec for spec in specs if spec.enabled and spec.outputs]
    for spec in driving:
        for source in matching_devices(spec.source, device_ids):
            edges.setdefault(source, set()).update(matching_devices(spec.target, device_ids))
    problems = []
    for spec in driving:
        for source in matching_devices(spec.source, device_ids):
            for target in sorted(matching_devices(spec.target, device_ids)):
                route = _route(edges, target, source)
                if route is not None:
                    chain = " -> ".join([source, *route])
                    problems.append(
                        ConfigError(f"bindings.{spec.name}.target", f"its output feeds its own source: {chain}")
                    )
                    break
    return problems


def _route(edges: Mapping[str, set[str]], start: str, goal: str) -> list[str] | None:
    """A path start -> ... -> goal along `edges` (breadth first), or None."""
    previous: dict[str, str | None] = {start: None}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            if node == goal:
                route = [node]
                while (step := previous[route[-1]]) is not None:
                    route.append(step)
                return route[::-1]
            for successor in sorted(edges.get(node, ())):
                if successor not in previous:
                    previous[successor] = node
                    following.append(successor)
        frontier = following
    return None


__all__ = [
    "TRIGGERS",
    "ActionSpec",
    "ActionsOnly",
    "ArcadeMix",
    "BindingSpec",
    "BindingsConfig",
    "DirectMix",
    "InputSpec",
    "Mix",
    "OutputSpec",
    "Slew",
    "TankMix",
    "check_bindings",
    "check_source_paths",
    "check_target_commands",
    "find_loops",
    "matching_devices",
    "parse_bindings",
    "parse_bindings_section",
    "stream_type",
]
