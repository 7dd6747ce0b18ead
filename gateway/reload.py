"""Applying a changed configuration file without a restart: SIGHUP, `hwgateway reload` and the `reload` op.

Part of the composition root (it reads the file with everything the gateway is built with). A reload
reads the file with the same check as `hwgateway check-config` (`gateway.config.load`); on any error
nothing changes and every error is reported (`ConfigError`). Otherwise only what changed is applied,
section by section (`gateway.core.config_diff`):

- `[devices.<id>]`: added devices start; removed ones stop through their safe state (e-stop, cancel,
  close, as at shutdown); changed ones stop through their safe state and start again with the new
  options (a client's exclusive lock carries over). Unchanged devices and every client are untouched:
  their tasks, leases and subscriptions go on, and their samples' `seq` continues.
- `[bindings]`: removed bindings end through their safe output; changed ones end through it and
  start again with the new spec; added ones start; unchanged ones drive on untouched. The removed
  and changed ones end first of all, while the devices they drive are still there to take their
  safe output; the added and changed ones start last, once the devices they drive run. A changed
  `initial_set` becomes the active binding set.
- A section with a `LiveSection` in `Reloader.live` is applied by it (`[supervisor]`: the restart
  policy from the next failure on).
- Every other changed section (`[server]`, `[auth]`, the faces' listeners, `[record]`, `[logging]`)
  needs a restart: its keys are reported in `restart_needed` and the whole section keeps running as
  it was, so nothing is half-applied; the next reload reports it again until the daemon restarts.

A new section needs nothing here to be safe: a change of it is reported as needing a restart. To
apply it live, register a `LiveSection` for it in `Reloader.live` (after `devices`, which is applied
first, when it refers to devices; with a `retire` step when what leaves must go before the devices).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.bindings.manager import diff_bindings
from gateway.bindings.spec import BindingsConfig
from gateway.core.config import Config, DeviceConfig, SupervisorConfig
from gateway.core.config_checks import warnings as config_warnings
from gateway.core.config_diff import changed_keys, changed_sections, diff_devices
from gateway.errors import ConfigError, InvalidArgument

if TYPE_CHECKING:
    from gateway.app import Gateway

log = logging.getLogger(__name__)


@dataclass
class ReloadReport:
    """What one reload did: devices by id, config keys by their TOML path, each device's safe-state outcome."""

    path: str
    #: Devices started, stopped through their safe state, and restarted through it.
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    restarted: list[str] = field(default_factory=list)
    #: Devices left running as they were.
    unchanged: list[str] = field(default_factory=list)
    #: Bindings (`[bindings.<name>]`) started, ended through their safe output, and restarted through it.
    bindings_added: list[str] = field(default_factory=list)
    bindings_removed: list[str] = field(default_factory=list)
    bindings_restarted: list[str] = field(default_factory=list)
    #: The safe-state outcome ("ok", "unconfirmed", "failed") of each removed or restarted device or binding.
    safe_states: dict[str, str] = field(default_factory=dict)
    #: Keys of the live sections applied (besides the devices).
    applied: list[str] = field(default_factory=list)
    #: Keys whose change needs a restart of the daemon; their sections keep running as they were.
    restart_needed: list[str] = field(default_factory=list)
    #: The file's warnings (as `check-config` prints them) and what could not be started.
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The report as the `reload` op's result data."""
        return dataclasses.asdict(self)

    def summary(self) -> str:
        """One line saying what changed."""
        parts = [
            f"{label} {', '.join(ids)}"
            for label, ids in (
                ("started", self.added),
                ("stopped", self.removed),
                ("restarted", self.restarted),
                ("started bindings", self.bindings_added),
                ("ended bindings", self.bindings_removed),
                ("restarted bindings", self.bindings_restarted),
                ("applied", self.applied),
            )
            if ids
        ]
        if self.restart_needed:
            parts.append(f"needs a restart for {', '.join(self.restart_needed)} (kept as running)")
        return "; ".join(parts) or "nothing changed"


#: Applies one section's new value; gets the running value, the new one and the report to fill in.
SectionApplier = Callable[[Any, Any, ReloadReport], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class LiveSection:
    """A config section a reload applies without a restart, through `apply`.

    `retire`, when set, runs before any section is applied: it ends what leaves the section while
    everything else still runs as it was (a binding's safe output still reaches its device).
    """

    apply: SectionApplier
    retire: SectionApplier | None = None


#: Where a device being removed or restarted says why, in its `device` message's detail.
REMOVED_DETAIL = "removed by a reload"
RESTARTED_DETAIL = "restarting: its configuration changed"


class Reloader:
    """Reloads the running `gateway` from its configuration file `path` (None: the demo's, which has none).

    One reload at a time: a second waits for the first. `live` maps a section name to how it is
    applied without a restart, in order; a changed section not in it is reported as needing one.
    """

    def __init__(self, gateway: Gateway, path: str | Path | None, read: Callable[[Path], Config]) -> None:
        self._gateway = gateway
        self.path = Path(path) if path is not None else None
        self._read = read
        self._lock = asyncio.Lock()
        self.live: dict[str, LiveSection] = {
            "devices": LiveSection(self._apply_devices),
            "supervisor": LiveSection(self._apply_supervisor),
            "bindings": LiveSection(self._start_bindings, retire=self._retire_bindings),
        }

    async def reload(self) -> ReloadReport:
        """Read the file and apply what changed; raise `ConfigError` (every problem) and change nothing when invalid."""
        if self.path is None:
            raise ConfigError("", "this gateway was not started from a file (the demo): nothing to reload")
        new = self._read(self.path)
        async with self._lock:
            gateway = self._gateway
            if gateway.supervisor.stopping:
                raise ConfigError("", "the gateway is stopping")
            current = gateway.config
            self._check_against_running(current, new)
            changes = changed_sections(current, new)
            report = ReloadReport(str(self.path), warnings=config_warnings(new))
            for section, keys in changes.items():
                if section not in self.live:
                    report.restart_needed += keys
            if "devices" not in changes:
                report.unchanged = sorted(d.id for d in current.devices if d.enabled)
            for section, live in self.live.items():
                if section in changes and live.retire is not None:
                    await live.retire(getattr(current, section), getattr(new, section), report)
            applied: dict[str, Any] = {}
            for section, live in self.live.items():
                if section in changes:
                    await live.apply(getattr(current, section), getattr(new, section), report)
                    applied[section] = getattr(new, section)
            gateway.config = dataclasses.replace(current, **applied)
        log.info(
            "reloaded %s: %s",
            self.path,
            report.summary(),
            extra={"added": report.added, "removed": report.removed, "restarted": report.restarted},
        )
        for warning in report.warnings:
            log.warning("config: %s", warning)
        return report

    async def reload_op(self) -> dict[str, Any]:
        """The `reload` op: the report's data, or `InvalidArgument` naming every problem (one per line)."""
        try:
            report = await self.reload()
        except ConfigError as error:
            raise InvalidArgument(error_lines(error)) from None
        return report.as_dict()

    def _check_against_running(self, current: Config, new: Config) -> None:
        """Refuse ids the running gateway holds otherwise: a device imported from another gateway (MQTT)."""
        configured = {device.id for device in current.devices if device.enabled}
        # A binding the new file ends is gone before its id's new device starts.
        ending = set(self._gateway.bindings.devices) - {spec.name for spec in new.bindings.bindings if spec.enabled}
        taken = set(self._gateway.supervisor.devices) - configured - ending
        problems = [
            ConfigError(f"devices.{device.id}", "a device imported from another gateway (MQTT) has this id")
            for device in new.devices
            if device.enabled and device.id not in configured and device.id in taken
        ]
        if problems:
            raise ConfigError.combine(problems)

    async def _apply_devices(
        self, old: tuple[DeviceConfig, ...], new: tuple[DeviceConfig, ...], report: ReloadReport
    ) -> None:
        diff = diff_devices(old, new)
        supervisor = self._gateway.supervisor
        report.unchanged = sorted(diff.unchanged)
        report.removed = sorted(diff.removed)
        report.restarted = sorted(device.id for device in diff.changed)
        report.added = sorted(device.id for device in diff.added)
        locks = {d.id: supervisor.devices[d.id].locked_by for d in diff.changed if d.id in supervisor.devices}
        leaving = [(key, REMOVED_DETAIL) for key in diff.removed] + [(d.id, RESTARTED_DETAIL) for d in diff.changed]
        leaving = [(key, reason) for key, reason in leaving if key in supervisor.devices]
        # All at once, as at shutdown; every device is stopped before any starts, so that a new device
        # may take the port or address a removed one held.
        outcomes = await asyncio.gather(*(supervisor.retire(key, reason) for key, reason in leaving))
        report.safe_states.update((key, outcome) for (key, _), outcome in zip(leaving, outcomes, strict=True))
        for device in (*diff.added, *diff.changed):
            try:
                supervisor.start_configured(device, locks.get(device.id))
            except Exception as error:  # an adapter's constructor refused: the others still start
                log.exception("device %s could not start", device.id)
                report.warnings.append(f"device {device.id} could not start: {type(error).__name__}: {error}")
        self._gateway.devices_changed(new)

    async def _apply_supervisor(self, old: SupervisorConfig, new: SupervisorConfig, report: ReloadReport) -> None:
        self._gateway.supervisor.set_config(new)
        report.applied += changed_keys("supervisor", old, new)

    async def _retire_bindings(self, old: BindingsConfig, new: BindingsConfig, report: ReloadReport) -> None:
        diff = diff_bindings(old, new)
        report.bindings_removed = sorted(diff.removed)
        report.bindings_restarted = sorted(spec.name for spec in diff.changed)
        report.bindings_added = sorted(spec.name for spec in diff.added)
        report.safe_states.update(await self._gateway.bindings.retire(diff, "ended by a reload"))

    async def _start_bindings(self, old: BindingsConfig, new: BindingsConfig, report: ReloadReport) -> None:
        bindings = self._gateway.bindings
        report.warnings += bindings.start_changed(diff_bindings(old, new))
        if new.initial_set != old.initial_set:
            bindings.switch_set(new.initial_set)
            report.applied.append("bindings.initial_set")


def error_lines(error: ConfigError) -> str:
    """Every problem of a `ConfigError`, one per line."""
    return "\n".join(str(problem) for problem in error.errors)
