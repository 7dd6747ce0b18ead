"""Starts the configured adapters, restarts failed ones with capped exponential backoff, reports availability.

A device failing never stops the gateway: its task logs the failure, publishes `disconnected`,
waits, and tries again.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Iterable
from typing import Any

from gateway.bus import Bus, DeviceEvent, DeviceStatus
from gateway.core.adapter import NO_KINDS, Adapter, DeviceContext, DeviceKinds
from gateway.core.config import DeviceConfig, SupervisorConfig
from gateway.errors import ConfigError

#: Builds an adapter from its context and options (default: the class of the config's kind).
AdapterFactory = Callable[[DeviceContext, Any], Adapter[Any]]

log = logging.getLogger(__name__)

#: Seconds an adapter's e-stop may take at shutdown, and its close after it (systemd waits 15 s).
ESTOP_AT_STOP_S = 1.0
CLOSE_AT_STOP_S = 3.0
#: Seconds between the e-stop and cancelling the adapters, for cyclic loops to send the stop.
SAFE_STATE_SETTLE_S = 0.05
#: Seconds the cancelled adapter tasks are given to end at shutdown before their devices are closed anyway.
TASKS_END_AT_STOP_S = 1.0


class DeviceHandle:
    """One configured device: its adapter, availability and restart count."""

    def __init__(self, config: DeviceConfig, bus: Bus, factory: AdapterFactory) -> None:
        self.config = config
        self.id = config.id
        self.kind = config.kind
        self.status: DeviceStatus = "stopped"
        self.detail = "not started"
        self.reconnects = 0
        self.connected_since: float | None = None
        #: The session id of the client holding the exclusive control lock (None: unlocked).
        self.locked_by: str | None = None
        #: The hardware's own identity as its adapter reports it (`DeviceContext.set_identity`: a
        #: Thymio's UUID); devices reaching one robot over two links share it. None: unknown.
        self.identity: str | None = None
        #: True once a reload began taking the device away: the router refuses its commands (none may
        #: undo the e-stop of its safe state).
        self.retiring = False
        self._bus = bus
        context = DeviceContext(config.id, bus, self.set_status, self.set_identity)
        self.adapter: Adapter[Any] = factory(context, config.options)
        self.task: asyncio.Task[None] | None = None

    def set_status(self, status: DeviceStatus, detail: str = "") -> None:
        """Record and publish a change of availability."""
        if status == self.status and detail == self.detail:
            return
        self.status, self.detail = status, detail
        self.connected_since = time.monotonic() if status == "connected" else None
        log.info(
            "device %s is %s%s",
            self.id,
            status,
            f": {detail}" if detail else "",
            extra={"device": self.id, "status": status},
        )
        self._bus.device_event(self.event())

    def set_identity(self, identity: str | None) -> None:
        """Record the hardware's identity; a change is published as a device event (faces that fold re-read it)."""
        if identity != self.identity:
            self.identity = identity
            log.info("device %s: hardware identity %s", self.id, identity, extra={"device": self.id})
            self._bus.device_event(self.event())

    def set_lock(self, holder: str | None) -> None:
        """Record and publish who holds the exclusive control lock (None: nobody)."""
        if holder != self.locked_by:
            self.locked_by = holder
            self._bus.device_event(self.event())

    def event(self) -> DeviceEvent:
        """The current availability and lock as a device event."""
        return DeviceEvent(self.id, self.kind, self.status, self.detail, time.time(), self.locked_by)


class Supervisor:
    """Owns every adapter task; `kinds` names the adapter class of each configured device's kind.

    The composition root passes the gateway's kinds (`devices.registry.KINDS`); with none, a
    configured device is refused (`KeyError`: unknown kind).
    """

    def __init__(
        self, bus: Bus, config: SupervisorConfig, devices: Iterable[DeviceConfig], kinds: DeviceKinds = NO_KINDS
    ) -> None:
        self._config = config
        self._bus = bus
        self._kinds = kinds
        self._started = False
        #: True once `stop` began: the router refuses new commands (none may undo the e-stop).
        self.stopping = False
        self.devices: dict[str, DeviceHandle] = {
            device.id: DeviceHandle(device, bus, kinds.adapter_class(device.kind))
            for device in devices
            if device.enabled
        }
        for handle in self.devices.values():
            handle.adapter.ctx.add_device = self.add

    def start(self) -> None:
        """Start one supervised task per enabled device."""
        self._started = True
        for handle in self.devices.values():
            handle.task = asyncio.create_task(self._supervise(handle), name=f"device:{handle.id}")

    def add(self, config: DeviceConfig, factory: AdapterFactory) -> DeviceHandle:
        """Add a device at run time (the MQTT bridge's imported devices) and start it if the rest runs."""
        if config.id in self.devices:
            raise ValueError(f"device {config.id!r} exists already")
        handle = self.devices[config.id] = DeviceHandle(config, self._bus, factory)
        handle.adapter.ctx.add_device = self.add
        if self._started:
            handle.task = asyncio.create_task(self._supervise(handle), name=f"device:{handle.id}")
        return handle

    def start_configured(self, config: DeviceConfig, locked_by: str | None = None) -> DeviceHandle:
        """Add and start a device of the config (a reload's added or changed one), with the adapter of its kind.

        `locked_by` carries a client's exclusive control lock over to a changed device's new adapter.
        """
        handle = self.add(config, self._kinds.adapter_class(config.kind))
        handle.locked_by = locked_by
        return handle

    def set_config(self, config: SupervisorConfig) -> None:
        """Use a new restart policy from the next failure on (a reload's `[supervisor]`)."""
        self._config = config

    async def retire(self, device_id: str, reason: str) -> str:
        """Take one device away through its safe state (e-stop, cancel, close) and forget it.

        Returns the safe-state outcome that is logged: "ok", "unconfirmed" or "failed". From the
        first step the router refuses the device's commands. Every step is bounded as at shutdown.
        """
        handle = self.devices[device_id]
        handle.retiring = True
        await self._estop(handle)
        await asyncio.sleep(SAFE_STATE_SETTLE_S)
        if handle.task is not None:
            handle.task.cancel()
            # asyncio.wait, not gather: it returns at the deadline even if the task never ends.
            _, running = await asyncio.wait([handle.task], timeout=TASKS_END_AT_STOP_S)
            if running:
                log.error("device:%s did not end when cancelled; closing its device anyway", device_id)
        outcome = await self._close(handle, reason)
        if self.devices.get(device_id) is handle:
            del self.devices[device_id]
        return outcome

    def tasks_alive(self) -> bool:
        """True while every device task is running (it never ends on its own); a device being retired counts."""
        return all(h.retiring or (h.task is not None and not h.task.done()) for h in self.devices.values())

    async def stop(self) -> None:
        """Put every device in its safe state, all at once: e-stop, cancel, close; log each outcome.

        The e-stop comes first so that actuators stop even when a device's close is slow, and
        while its task still runs, so that the stop reaches the hardware (a cyclic loop sends it).
        Every step is bounded: a task that ignores its cancellation does not keep its device, or
        any other, from being closed.
        """
        self.stopping = True
        handles = list(self.devices.values())
        await asyncio.gather(*(self._estop(handle) for handle in handles))
        await asyncio.sleep(SAFE_STATE_SETTLE_S)
        tasks = [h.task for h in handles if h.task is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            # asyncio.wait, not gather: it returns at the deadline even if a task never ends.
            _, running = await asyncio.wait(tasks, timeout=TASKS_END_AT_STOP_S)
            if running:
                names = ", ".join(sorted(task.get_name() for task in running))
                log.error("%s did not end when cancelled; closing their devices anyway", names)
        await asyncio.gather(*(self._close(handle) for handle in handles))

    async def _estop(self, handle: DeviceHandle) -> None:
        try:
            async with asyncio.timeout(ESTOP_AT_STOP_S):
                await handle.adapter.estop()
        except Exception as error:
            log.warning("device %s: e-stop at shutdown failed: %s: %s", handle.id, type(error).__name__, error)

    async def _close(self, handle: DeviceHandle, reason: str = "gateway stopped") -> str:
        try:
            async with asyncio.timeout(min(self._config.stop_timeout_s, CLOSE_AT_STOP_S)):
                await handle.adapter.close()
        except Exception:
            log.exception("device %s failed to close cleanly", handle.id)
            outcome = "failed"
        else:
            outcome = "ok"
        outputs = dict(handle.adapter.outputs())
        extra = {"device": handle.id, "safe_state": outcome, "outputs": outputs}
        # "ok" only when the device acknowledged its safe state: `outputs` may be what was sent, not what it does.
        unconfirmed = handle.adapter.unconfirmed_safe_state()
        if unconfirmed is not None:
            extra["safe_state"] = "unconfirmed" if outcome == "ok" else outcome
            log.warning(
                "device %s: safe state unconfirmed: %s (outputs as last sent)", handle.id, unconfirmed, extra=extra
            )
        else:
            log.info(
                "device %s is in its safe state%s",
                handle.id,
                "" if outcome == "ok" else " as far as it could be put",
                extra=extra,
            )
        handle.set_status("stopped", reason)
        return str(extra["safe_state"])

    async def _supervise(self, handle: DeviceHandle) -> None:
        delay = self._config.backoff_initial_s
        while True:
            handle.set_status("connecting")
            try:
                await handle.adapter.run()
                reason = "adapter stopped"
            except asyncio.CancelledError:
                raise
            except Exception as error:
                reason = f"{type(error).__name__}: {error}"
                # A traceback helps with a bug; not with a link that dropped or a setting the device refused.
                expected = isinstance(error, OSError | ConfigError)
                log.warning("device %s failed: %s", handle.id, reason, exc_info=not expected)
            was_connected = handle.connected_since is not None
            stayed = time.monotonic() - handle.connected_since if handle.connected_since else 0.0
            if stayed >= self._config.backoff_reset_s:
                delay = self._config.backoff_initial_s
            handle.set_status("disconnected", f"{reason}; retrying in {delay:.2f} s")
            if was_connected:  # a device that never connected is still connecting, not reconnecting
                handle.reconnects += 1
            # Jitter keeps several failed devices from retrying in lockstep.
            await asyncio.sleep(delay * random.uniform(0.9, 1.1))
            delay = min(delay * 2, self._config.backoff_max_s)
