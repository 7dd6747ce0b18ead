"""Routes client commands to the owning adapter: type check, validation, deadline, structured errors."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from devices.base import Command
from gateway.errors import (
    DeviceError,
    DeviceUnavailable,
    GatewayError,
    InvalidArgument,
    RequestTimeout,
    UnknownCommand,
    UnknownDevice,
)
from gateway.messages import REGISTRY, from_plain, info_of, to_plain
from gateway.supervisor import DeviceHandle, Supervisor

log = logging.getLogger(__name__)

#: Seconds an adapter's estop may take before it is reported as failed.
ESTOP_TIMEOUT_S = 1.0
#: The range of a command's deadline (s), as `server.command_timeout_s` allows it: no device answers
#: in less than a millisecond, and a longer deadline would hold an in-flight slot for hours. (Clients
#: may ask for up to 600 s with `timeout_s`.)
MIN_COMMAND_TIMEOUT_S = 0.001
MAX_COMMAND_TIMEOUT_S = 3600.0


class CommandRouter:
    """Validates and delivers commands; reports each one's latency (s) by device and outcome code."""

    def __init__(self, supervisor: Supervisor, observe: Callable[[str, str, float], None]) -> None:
        self._supervisor = supervisor
        self._observe = observe

    def device(self, device_id: str) -> DeviceHandle:
        """The handle of `device_id`, or `UnknownDevice`."""
        handle = self._supervisor.devices.get(device_id)
        if handle is None:
            known = ", ".join(sorted(self._supervisor.devices)) or "none"
            raise UnknownDevice(f"no device {device_id!r} (devices: {known})")
        return handle

    async def execute(
        self, device_id: str, type_name: str, data: object, client_id: str, timeout_s: float
    ) -> dict[str, Any]:
        """Run one command within `timeout_s` seconds and return its result data; raise a `GatewayError` on any failure.

        `timeout_s` must lie in [`MIN_COMMAND_TIMEOUT_S`, `MAX_COMMAND_TIMEOUT_S`] (else `InvalidArgument`).
        """
        started = time.monotonic()
        outcome = "ok"
        try:
            check_timeout(timeout_s)
            return await self._execute(device_id, type_name, data, client_id, started + timeout_s)
        except GatewayError as error:
            outcome = error.code.value
            raise
        finally:
            self._observe(device_id, outcome, time.monotonic() - started)

    async def _execute(
        self, device_id: str, type_name: str, data: object, client_id: str, deadline: float
    ) -> dict[str, Any]:
        handle = self.device(device_id)
        adapter = handle.adapter
        info = REGISTRY.get(type_name)
        if info is None or (info.kind == "message" and type_name not in adapter.accepts):
            raise UnknownCommand(
                f"{type_name!r} is not a command type (describe lists every type)"
                if info is None
                else f"{type_name!r} is a published message type, not a command"
            )
        if type_name not in adapter.accepts:
            raise UnknownCommand(
                f"device {device_id!r} ({handle.kind}) does not accept {type_name!r}; "
                f"it accepts: {', '.join(adapter.accepts) or 'nothing'}"
            )
        message = from_plain(info.cls, data, "data")
        if handle.status != "connected":
            raise DeviceUnavailable(f"device {device_id!r} is {handle.status}: {handle.detail}".rstrip(": "))
        command = Command(type_name, message, client_id, deadline)
        try:
            async with asyncio.timeout(deadline - time.monotonic()):
                result = await adapter.handle_command(command)
        except TimeoutError:
            raise RequestTimeout(f"device {device_id!r} did not complete {type_name!r} in time") from None
        except GatewayError:
            raise
        except Exception as error:
            log.exception("device %s failed on %s", device_id, type_name)
            raise DeviceError(f"{type(error).__name__}: {error}") from None
        return _plain_result(result)

    async def estop(self) -> list[dict[str, Any]]:
        """Stop every device's actuators at once; report each device's outcome."""
        handles = list(self._supervisor.devices.values())

        async def stop(handle: DeviceHandle) -> dict[str, Any]:
            try:
                async with asyncio.timeout(ESTOP_TIMEOUT_S):
                    await handle.adapter.estop()
            except Exception as error:
                log.exception("estop failed on device %s", handle.id)
                return {"device": handle.id, "ok": False, "error": f"{type(error).__name__}: {error}"}
            return {"device": handle.id, "ok": True}

        return list(await asyncio.gather(*(stop(handle) for handle in handles)))

    def release(self, client_id: str) -> None:
        """End every lease that `client_id` holds (the client disconnected)."""
        for handle in self._supervisor.devices.values():
            try:
                handle.adapter.release(client_id)
            except Exception:
                log.exception("device %s failed to release client %s", handle.id, client_id)


def check_timeout(timeout_s: float) -> None:
    """Refuse a deadline outside [`MIN_COMMAND_TIMEOUT_S`, `MAX_COMMAND_TIMEOUT_S`] s, NaN and inf included."""
    if not MIN_COMMAND_TIMEOUT_S <= timeout_s <= MAX_COMMAND_TIMEOUT_S:
        raise InvalidArgument(
            f"command.timeout_s: {timeout_s!r} s is outside [{MIN_COMMAND_TIMEOUT_S:g}, {MAX_COMMAND_TIMEOUT_S:g}] s"
        )


def _plain_result(result: object) -> dict[str, Any]:
    if result is None:
        return {}
    if isinstance(result, Mapping):
        return dict(result)
    try:
        info_of(type(result))
    except AttributeError:
        raise DeviceError(f"adapter returned an unserializable result {type(result).__name__}") from None
    return to_plain(result)
