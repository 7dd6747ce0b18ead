"""The gateway's bindings: each a supervised device, added, removed or reloaded through a safe stop; the active set.

`Bindings.start(config)` adds one `BindingDevice` per enabled `[bindings.<name>]` to the supervisor
(before or after it starts). `remove(name)` and `reload(specs)` end a binding through its safe
output (`BindingRuntime.finish`, confirmed or bounded) before anything replaces it. A reload of the
file (`gateway.reload`) applies only what changed (`diff_bindings`): `retire(diff)` ends the removed
and changed bindings through their safe output, `start(diff)` adds the added and changed ones again,
and the unchanged ones run on untouched. Binding sets:
a binding with a `set` drives only while its set is the active one (`initial_set`, then what an
action switches to); a binding without a set always may.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from gateway.bindings.device import KIND, BindingDevice, BindingParts
from gateway.bindings.engine import RouterLike, RuntimeSettings
from gateway.bindings.evaluation import SpecEvaluator
from gateway.bindings.spec import BindingsConfig, BindingSpec
from gateway.bus import Bus
from gateway.core.adapter import DeviceContext
from gateway.core.config import DeviceConfig
from gateway.supervisor import Supervisor

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BindingsDiff:
    """The enabled bindings of two configs, by name: what a reload starts, ends, restarts and leaves alone.

    A binding that is disabled (`enabled = false`) counts as absent, as it does at start.
    """

    added: tuple[BindingSpec, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[BindingSpec, ...] = ()
    unchanged: tuple[str, ...] = ()


def diff_bindings(old: BindingsConfig, new: BindingsConfig) -> BindingsDiff:
    """Compare the enabled bindings of two `[bindings]` sections by name (every key alike: unchanged)."""
    before = {spec.name: spec for spec in old.bindings if spec.enabled}
    after = {spec.name: spec for spec in new.bindings if spec.enabled}
    return BindingsDiff(
        added=tuple(spec for name, spec in after.items() if name not in before),
        removed=tuple(name for name in before if name not in after),
        changed=tuple(spec for name, spec in after.items() if name in before and before[name] != spec),
        unchanged=tuple(name for name, spec in after.items() if before.get(name) == spec),
    )


class Bindings:
    """Every running binding of one gateway, by name."""

    def __init__(self, supervisor: Supervisor, router: RouterLike, bus: Bus) -> None:
        self._supervisor = supervisor
        self._router = router
        self._bus = bus
        self.devices: dict[str, BindingDevice] = {}
        self.active_set = ""

    def start(self, config: BindingsConfig) -> None:
        """Add every enabled binding of `config`; `initial_set` becomes the active set."""
        self.active_set = config.initial_set
        for spec in config.bindings:
            if spec.enabled:
                self.add(spec)

    def add(self, spec: BindingSpec) -> BindingDevice:
        """Add and (once the supervisor runs) start one binding; `ValueError` when its name is taken."""
        evaluator = SpecEvaluator(spec, self._target_devices)
        settings = RuntimeSettings(
            name=spec.name,
            source=spec.source,
            streams=evaluator.streams(),
            rate_hz=spec.rate_hz,
            timeout_s=spec.timeout_s,
            priority=spec.priority,
            target_priorities=dict(spec.target_priority),
            deadman=spec.deadman is not None,
        )
        parts = BindingParts(settings, evaluator, self._router, self._bus, _shown(spec))
        made: list[BindingDevice] = []

        def build(ctx: DeviceContext, options: BindingParts) -> BindingDevice:
            device = BindingDevice(ctx, options)
            made.append(device)
            return device

        self._supervisor.add(DeviceConfig(spec.name, KIND, True, parts), build)
        device = made[0]
        device.runtime.on_switch_set = self.switch_set
        self.devices[spec.name] = device
        self._apply_set(device)
        return device

    async def remove(self, name: str, reason: str = "removed") -> str:
        """End binding `name` through its safe output, then forget it; `KeyError` when there is none.

        Returns the safe-state outcome ("ok", "unconfirmed", "failed"), as `Supervisor.retire`.
        """
        device = self.devices.pop(name)
        device.leaving = True  # its e-stop pauses it: the devices it drives still get its safe output
        # estop, cancel, then `close`: the safe output, confirmed
        outcome = await self._supervisor.retire(name, reason)
        log.info("binding %s %s (%s)", name, reason, device.runtime.reason, extra={"binding": name})
        return outcome

    async def retire(self, diff: BindingsDiff, reason: str) -> dict[str, str]:
        """End the removed and changed bindings of `diff` at once, each through its safe output; their outcomes."""
        leaving = [name for name in (*diff.removed, *(spec.name for spec in diff.changed)) if name in self.devices]
        outcomes = await asyncio.gather(*(self.remove(name, reason) for name in leaving))
        return dict(zip(leaving, outcomes, strict=True))

    def start_changed(self, diff: BindingsDiff) -> list[str]:
        """Add the added and changed bindings of `diff` (after `retire`); what could not start, in words."""
        problems = []
        for spec in (*diff.added, *diff.changed):
            try:
                self.add(spec)
            except Exception as error:  # a name another gateway's device holds (MQTT): the others still start
                log.exception("binding %s could not start", spec.name)
                problems.append(f"binding {spec.name} could not start: {type(error).__name__}: {error}")
        return problems

    async def reload(self, specs: Sequence[BindingSpec]) -> None:
        """Replace every binding by `specs`: each old one stops through its safe output before the new ones start."""
        for name in list(self.devices):
            await self.remove(name)
        for spec in specs:
            if spec.enabled:
                self.add(spec)

    def switch_set(self, name: str) -> None:
        """Make binding set `name` the active one: the bindings of other sets stop through their safe output."""
        if name == self.active_set:
            return
        log.info("binding set %s active", name, extra={"binding_set": name})
        self.active_set = name
        for device in self.devices.values():
            self._apply_set(device)

    def _apply_set(self, device: BindingDevice) -> None:
        wanted = device.options.spec.get("set", "")
        inactive = bool(wanted) and wanted != self.active_set
        device.runtime.hold_off(f"binding set {wanted} is not active" if inactive else "")

    def _target_devices(self) -> Iterable[str]:
        """The devices a target glob may match: every configured device but the bindings."""
        return [handle.id for handle in self._supervisor.devices.values() if handle.kind != KIND]


def _shown(spec: BindingSpec) -> dict[str, Any]:
    """The parts of a spec `list_devices` shows (plain data)."""
    plain = asdict(spec)
    shown = {key: plain[key] for key in ("source", "target", "rate_hz", "timeout_s", "priority", "set")}
    shown["target_priority"] = dict(spec.target_priority)
    shown["mode"] = getattr(spec.mix, "mode", "")
    shown["deadman"] = spec.deadman.text if spec.deadman is not None else "none"
    return shown
