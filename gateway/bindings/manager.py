"""The gateway's bindings: each a supervised device, added, removed or reloaded through a safe stop; the active set.

`Bindings.start(config)` adds one `BindingDevice` per enabled `[bindings.<name>]` to the supervisor
(before or after it starts). `remove(name)` and `reload(specs)` end a binding through its safe
output (`BindingRuntime.finish`, confirmed or bounded) before anything replaces it. Binding sets:
a binding with a `set` drives only while its set is the active one (`initial_set`, then what an
action switches to); a binding without a set always may.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import asdict
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

    async def remove(self, name: str) -> None:
        """End binding `name` through its safe output, then forget it; `KeyError` when there is none."""
        device = self.devices.pop(name)
        await self._supervisor.retire(name, "removed")  # estop, cancel, then `close`: the safe output, confirmed
        log.info("binding %s removed (%s)", name, device.runtime.reason, extra={"binding": name})

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
