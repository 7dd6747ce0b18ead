"""Starts the configured adapters, restarts failed ones with capped exponential backoff, reports availability.

A device failing never stops the gateway: its task logs the failure, publishes `disconnected`,
waits, and tries again.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Iterable
from typing import Any

from devices.base import Adapter, DeviceContext
from devices.registry import adapter_class
from gateway.bus import Bus, DeviceEvent, DeviceStatus
from gateway.config import DeviceConfig, SupervisorConfig
from gateway.errors import ConfigError

log = logging.getLogger(__name__)


class DeviceHandle:
    """One configured device: its adapter, availability and restart count."""

    def __init__(self, config: DeviceConfig, bus: Bus) -> None:
        self.config = config
        self.id = config.id
        self.kind = config.kind
        self.status: DeviceStatus = "stopped"
        self.detail = "not started"
        self.reconnects = 0
        self.connected_since: float | None = None
        #: The session id of the client holding the exclusive control lock (None: unlocked).
        self.locked_by: str | None = None
        self._bus = bus
        context = DeviceContext(config.id, bus, self.set_status)
        self.adapter: Adapter[Any] = adapter_class(config.kind)(context, config.options)
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

    def set_lock(self, holder: str | None) -> None:
        """Record and publish who holds the exclusive control lock (None: nobody)."""
        if holder != self.locked_by:
            self.locked_by = holder
            self._bus.device_event(self.event())

    def event(self) -> DeviceEvent:
        """The current availability and lock as a device event."""
        return DeviceEvent(self.id, self.kind, self.status, self.detail, time.time(), self.locked_by)


class Supervisor:
    """Owns every adapter task."""

    def __init__(self, bus: Bus, config: SupervisorConfig, devices: Iterable[DeviceConfig]) -> None:
        self._config = config
        self.devices: dict[str, DeviceHandle] = {
            device.id: DeviceHandle(device, bus) for device in devices if device.enabled
        }

    def start(self) -> None:
        """Start one supervised task per enabled device."""
        for handle in self.devices.values():
            handle.task = asyncio.create_task(self._supervise(handle), name=f"device:{handle.id}")

    def tasks_alive(self) -> bool:
        """True while every device task is running (it never ends on its own)."""
        return all(h.task is not None and not h.task.done() for h in self.devices.values())

    async def stop(self) -> None:
        """Cancel every adapter, then let each apply its safe state."""
        tasks = [h.task for h in self.devices.values() if h.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for handle in self.devices.values():
            try:
                async with asyncio.timeout(self._config.stop_timeout_s):
                    await handle.adapter.close()
            except Exception:
                log.exception("device %s failed to close cleanly", handle.id)
            handle.set_status("stopped", "gateway stopped")

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
