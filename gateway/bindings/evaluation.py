"""The pure evaluator of a binding (`gateway.bindings.evaluator`) as the runtime calls it (`engine.TickEvaluator`).

It names the devices of every command: a command for "the binding's target" goes to the target,
or to every configured device a target glob (`thymio-*`) matches, in a stable order.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from gateway.bindings.delivery import DeviceCommand
from gateway.bindings.engine import Fired, TickResult
from gateway.bindings.evaluator import Evaluator, OutputCommand
from gateway.bindings.source import is_glob
from gateway.bindings.spec import BindingSpec


class SpecEvaluator:
    """`engine.TickEvaluator` over the pure `Evaluator` of `spec`; `devices()` lists the devices a glob may match."""

    def __init__(self, spec: BindingSpec, devices: Callable[[], Iterable[str]]) -> None:
        self.spec = spec
        self._evaluator = Evaluator(spec)
        self._devices = devices

    def streams(self) -> frozenset[str]:
        """The source streams the binding reads."""
        return frozenset(path.stream for _, path in self.spec.input_paths())

    def output(self, latest: Mapping[str, Any], sample_age_s: float | None, now_s: float) -> TickResult:
        """One output tick (see `Evaluator.output`)."""
        decision = self._evaluator.output(latest, sample_age_s, now_s)
        if decision.safe:
            return TickResult((), decision.deadman_held, False, decision.reason or "safe output")
        return TickResult(self._addressed(decision.commands), decision.deadman_held, decision.clamped)

    def actions(self, latest: Mapping[str, Any], sample_age_s: float | None, now_s: float) -> Sequence[Fired]:
        """The button actions that fire now (see `Evaluator.actions`)."""
        fired: list[Fired] = []
        for action in self._evaluator.actions(latest, sample_age_s, now_s):
            if action.command is not None:
                fired += [Fired(command) for command in self._addressed((action.command,))]
            elif action.switch_set:
                fired.append(Fired(None, action.switch_set))
        return fired

    def deadman_held(self, latest: Mapping[str, Any]) -> bool:
        """True when `latest` holds the deadman (see `Evaluator.deadman_held`)."""
        return self._evaluator.deadman_held(latest)

    def safe_output(self) -> Sequence[DeviceCommand]:
        """The safe output, addressed (and the slew limiters restart from it)."""
        return self._addressed(self._evaluator.safe_commands())

    def _addressed(self, commands: Iterable[OutputCommand]) -> list[DeviceCommand]:
        addressed: list[DeviceCommand] = []
        for command in commands:
            for device in self._targets(command.device or self.spec.target):
                addressed.append(DeviceCommand(device, command.type, dict(command.data)))
        return addressed

    def _targets(self, pattern: str) -> list[str]:
        if not is_glob(pattern):
            return [pattern]
        return sorted(device for device in self._devices() if fnmatch.fnmatchcase(device, pattern))
