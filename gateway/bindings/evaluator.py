"""One binding's decisions: what to send on each output tick, and which button actions fire.

The runtime owns the clock, the timer, the leases and the sending; it calls, for each binding:

- `Evaluator.output(latest, sample_age_s, now_s)` once per output tick (every `spec.period_s`),
  with the source's newest message per stream, the age of the newest source sample and a
  monotonic time, and sends `OutputDecision.commands` to the target;
- `Evaluator.actions(latest, sample_age_s, now_s)` on each new source sample (and on each tick, so
  that a "hold" fires with no new sample), and carries out what it returns;
- `Evaluator.safe_commands()` for the safe output when the binding stops for any other reason
  (removed, reloaded, paused, the source lost, shutdown), re-sent until the device confirms it.

The safe output is never slewed: it is exact, at once. After it, outputs ramp up again from the
safe values within the slew limits.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway.bindings import mixing
from gateway.bindings.buttons import Detector
from gateway.bindings.paths import InputPath
from gateway.bindings.shaping import SlewLimiter, radial_deadzone, shape_input
from gateway.bindings.spec import ActionSpec, ArcadeMix, BindingSpec, OutputSpec, TankMix

#: An input reads as held (deadman, turbo) at this value or more: a button's 1, a trigger past half.
HELD = 0.5


@dataclass(frozen=True, slots=True)
class OutputCommand:
    """A command to send: message `type` with `data` (plain fields) to `device` ("" = the binding's target)."""

    type: str
    data: Mapping[str, Any]
    device: str = ""


@dataclass(frozen=True, slots=True)
class OutputDecision:
    """What one output tick decided.

    `commands`: what to send now (one per command type and fixed args of the outputs; the safe
    values when `safe`). `values`: each output's value in target units (before integer rounding).
    `safe`: the output is the safe output, because `reason` ("no sample yet", "timeout",
    "deadman released"). `deadman_held`: the deadman is held (True when the binding has none).
    `clamped`: some output was limited by saturation or by its field's range. `turbo`: turbo held.
    `input_age_s`: the age the decision was made on (None: no sample yet).
    """

    commands: tuple[OutputCommand, ...]
    values: Mapping[str, float]
    safe: bool
    reason: str = ""
    deadman_held: bool = False
    clamped: bool = False
    turbo: bool = False
    input_age_s: float | None = None


@dataclass(frozen=True, slots=True)
class ActionFired:
    """A button action fired: send `command` (None for a set switch), or switch to binding set `switch_set`."""

    action: ActionSpec
    command: OutputCommand | None = None
    switch_set: str = ""
    time_s: float = 0.0
    state: bool = True


def _held(path: InputPath | None, latest: Mapping[str, Any]) -> bool:
    if path is None:
        return False
    value = path.read(latest)
    return value is not None and value >= HELD


@dataclass(slots=True)
class _OutputState:
    """One output and its slew limiter (which starts at the safe value)."""

    spec: OutputSpec
    limiter: SlewLimiter


class Evaluator:
    """The pure decisions of one binding (`spec`); keeps the slew limiters' and the detectors' state."""

    def __init__(self, spec: BindingSpec) -> None:
        self.spec = spec
        self._outputs = [
            _OutputState(output, SlewLimiter(spec.slew.up_per_s, spec.slew.down_per_s, output.safe))
            for output in spec.outputs
        ]
        self._detectors = [
            Detector(action.trigger, action.threshold, action.hysteresis, action.hold_s, action.double_s)
            for action in spec.actions
        ]
        self._last_tick_s: float | None = None
        self._radial_done = {
            item.name for item in spec.inputs if item.shape.deadzone_shape == "radial" and item.shape.pair
        }

    # -- output ticks ----------------------------------------------------------------------------

    def output(self, latest: Mapping[str, Any], sample_age_s: float | None, now_s: float) -> OutputDecision:
        """The decision of one output tick.

        `latest`: the source's newest message per stream name (dataclasses or plain mappings).
        `sample_age_s`: seconds since the newest source sample arrived (None: none yet).
        `now_s`: a monotonic time in seconds (the slew limiters' dt is the time since the last tick).
        Safe output when there is no sample, the sample is older than `timeout_s`, or the deadman
        is not held; otherwise the shaped, mixed, slew-limited outputs.
        """
        dt_s = 0.0 if self._last_tick_s is None else max(now_s - self._last_tick_s, 0.0)
        self._last_tick_s = now_s
        spec = self.spec
        deadman_held = self.deadman_held(latest)
        if sample_age_s is None:
            return self._safe_decision("no sample yet", deadman_held, None)
        if not sample_age_s <= spec.timeout_s:  # NaN counts as too old
            return self._safe_decision("timeout", deadman_held, sample_age_s)
        if not deadman_held:
            return self._safe_decision("deadman released", False, sample_age_s)
        turbo = _held(spec.turbo, latest)
        mixed = self._mix(self._shaped(latest, turbo))
        values: dict[str, float] = {}
        clamped = mixed.saturated
        for state in self._outputs:
            output = state.spec
            target, limited = mixing.to_units(
                mixed.values.get(output.name, 0.0), output.full_scale, output.minimum, output.maximum
            )
            clamped = clamped or limited
            values[output.name] = state.limiter.step(target, dt_s)
        return OutputDecision(self._commands(values), values, False, "", deadman_held, clamped, turbo, sample_age_s)

    def deadman_held(self, latest: Mapping[str, Any]) -> bool:
        """True when `latest` (as in `output`) holds the deadman, or when the binding has none."""
        return self.spec.deadman is None or _held(self.spec.deadman, latest)

    def safe_commands(self) -> tuple[OutputCommand, ...]:
        """The safe output (every output at its `safe` value); the limiters restart from it."""
        for state in self._outputs:
            state.limiter.reset(state.spec.safe)
        return self._commands({state.spec.name: state.spec.safe for state in self._outputs})

    def _safe_decision(self, reason: str, deadman_held: bool, age: float | None) -> OutputDecision:
        values = {state.spec.name: state.spec.safe for state in self._outputs}
        return OutputDecision(self.safe_commands(), values, True, reason, deadman_held, False, False, age)

    def _shaped(self, latest: Mapping[str, Any], turbo: bool) -> dict[str, float]:
        raw = {item.name: item.path.read(latest) or 0.0 for item in self.spec.inputs}
        for item in self.spec.inputs:
            shape = item.shape
            if item.name in self._radial_done and item.name < shape.pair:  # each stick once
                raw[item.name], raw[shape.pair] = radial_deadzone(raw[item.name], raw[shape.pair], shape.deadzone)
        return {
            item.name: shape_input(raw[item.name], item.shape, turbo, deadzone_applied=item.name in self._radial_done)
            for item in self.spec.inputs
        }

    def _mix(self, shaped: dict[str, float]) -> mixing.Mixed:
        if isinstance(self.spec.mix, ArcadeMix):
            return mixing.arcade(shaped.get("throttle", 0.0), shaped.get("steer", 0.0))
        if isinstance(self.spec.mix, TankMix):
            return mixing.tank(shaped.get("left", 0.0), shaped.get("right", 0.0))
        return mixing.direct(shaped)

    def _commands(self, values: Mapping[str, float]) -> tuple[OutputCommand, ...]:
        """One command per (type, fixed args), in output order, with each output's field set."""
        grouped: dict[tuple[str, str], dict[str, Any]] = {}
        for state in self._outputs:
            output = state.spec
            value = values[output.name]
            # Fixed args may hold arrays and tables (unhashable): their text tells the groups apart.
            data = grouped.setdefault((output.command, repr(output.args)), dict(output.args))
            data[output.field] = _rounded(value, output) if output.integer else value
        return tuple(OutputCommand(command, data) for (command, _), data in grouped.items())

    # -- button actions -------------------------------------------------------------------------

    def actions(self, latest: Mapping[str, Any], sample_age_s: float | None, now_s: float) -> tuple[ActionFired, ...]:
        """The actions that fire now, from `latest` (as in `output`) at monotonic time `now_s` (s).

        A stale source (no sample, or older than `timeout_s`) fires nothing and feeds nothing:
        the detectors keep their state until fresh samples come.
        """
        if sample_age_s is None or not sample_age_s <= self.spec.timeout_s:
            return ()
        fired: list[ActionFired] = []
        for action, detector in zip(self.spec.actions, self._detectors, strict=True):
            for event in detector.feed(action.input.read(latest), now_s):
                fired.append(self._fire(action, event.time_s, event.state))
        return tuple(fired)

    def _fire(self, action: ActionSpec, time_s: float, state: bool) -> ActionFired:
        if action.switch_set:
            return ActionFired(action, None, action.switch_set, time_s, state)
        args = action.args if state or action.off_args is None else action.off_args
        return ActionFired(action, OutputCommand(action.command, dict(args), action.device), "", time_s, state)


def _rounded(value: float, output: OutputSpec) -> int:
    """An integer field's value: rounded towards the safe value, so rounding never adds motion."""
    toward = output.safe
    rounded = math.floor(value) if value > toward else math.ceil(value)
    return int(min(max(rounded, math.ceil(output.minimum)), math.floor(output.maximum)))
