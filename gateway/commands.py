"""Routes client commands to the owning adapter: type check, validation, deadline, structured errors."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gateway.core.adapter import Command
from gateway.core.arbitration import Arbiter
from gateway.errors import (
    DeviceError,
    DeviceUnavailable,
    GatewayError,
    InternalError,
    InvalidArgument,
    RequestTimeout,
    UnknownCommand,
    UnknownDevice,
)
from gateway.messages import REGISTRY, from_plain, info_of, to_plain
from gateway.messages.schema import is_large
from gateway.messages.stepwise import from_plain_steps
from gateway.supervisor import DeviceHandle, Supervisor

log = logging.getLogger(__name__)

#: Seconds an adapter's estop may take before it is reported as failed.
ESTOP_TIMEOUT_S = 1.0
#: The range of a command's deadline (s), as `server.command_timeout_s` allows it: no device answers
#: in less than a millisecond, and a longer deadline would hold an in-flight slot for hours. (Clients
#: may ask for up to 600 s with `timeout_s`.)
MIN_COMMAND_TIMEOUT_S = 0.001
MAX_COMMAND_TIMEOUT_S = 3600.0


@dataclass(frozen=True, slots=True)
class CommandSeen:
    """A command as the router received it (`stamp`: s since the epoch), for watchers such as the recorder."""

    number: int
    client_id: str
    device: str
    type: str
    data: object
    stamp: float


@dataclass(frozen=True, slots=True)
class CommandAnswered:
    """The answer to command `number`: `result` data when `error_code` is empty, else the error."""

    number: int
    client_id: str
    device: str
    type: str
    result: dict[str, Any] | None
    error_code: str
    error_message: str
    latency_s: float
    stamp: float


#: Called on the loop with every `CommandSeen` and `CommandAnswered`; must return at once (never block).
CommandWatcher = Callable[[CommandSeen | CommandAnswered], None]


class CommandRouter:
    """Validates and delivers commands; reports each one's latency (s) by device and outcome code.

    `watchers` see every command of every face and its answer (the daemon's recorder is one).
    `arbiter` decides, for every command of every face and binding, who may drive a device's
    channel (`gateway.core.arbitration`: priorities, claims, the STOP ALL latch of the bindings).
    """

    def __init__(self, supervisor: Supervisor, observe: Callable[[str, str, float], None]) -> None:
        self._supervisor = supervisor
        self._observe = observe
        self.watchers: list[CommandWatcher] = []
        self._numbers = itertools.count(1)
        self._large_validations: asyncio.Semaphore | None = None
        self.arbiter = Arbiter()

    def _tell(self, event: CommandSeen | CommandAnswered) -> None:
        for watcher in self.watchers:
            try:
                watcher(event)
            except Exception:  # a watcher's bug must not fail the command
                log.exception("command watcher failed")

    def _seen(self, device: str, type_name: str, data: object, client_id: str) -> int:
        number = next(self._numbers)
        self._tell(CommandSeen(number, client_id, device, type_name, data, time.time()))
        return number

    def _answered(self, seen: int, device: str, type_name: str, client_id: str, started: float,
                  result: dict[str, Any] | None, error: GatewayError | None) -> None:  # fmt: skip
        code, message = (error.code.value, error.message) if error is not None else ("", "")
        self._tell(CommandAnswered(seen, client_id, device, type_name, result, code, message,
                                   time.monotonic() - started, time.time()))  # fmt: skip

    def device(self, device_id: str) -> DeviceHandle:
        """The handle of `device_id`, or `UnknownDevice`."""
        handle = self._supervisor.devices.get(device_id)
        if handle is None:
            known = ", ".join(sorted(self._supervisor.devices)) or "none"
            raise UnknownDevice(f"no device {device_id!r} (devices: {known})")
        return handle

    def status_of(self, device_id: str) -> str | None:
        """The availability of `device_id` ("connected", ...), None when there is no such device."""
        handle = self._supervisor.devices.get(device_id)
        return None if handle is None else handle.status

    async def execute(
        self, device_id: str, type_name: str, data: object, client_id: str, timeout_s: float, safe: bool = False
    ) -> dict[str, Any]:
        """Run one command within `timeout_s` seconds and return its result data; raise a `GatewayError` on any failure.

        `timeout_s` must lie in [`MIN_COMMAND_TIMEOUT_S`, `MAX_COMMAND_TIMEOUT_S`] (else `InvalidArgument`).
        `safe` marks a binding's safe output, which never takes a channel another holder drives
        (`Arbiter.admit`).
        """
        started = time.monotonic()
        outcome = "ok"
        seen = self._seen(device_id, type_name, data, client_id) if self.watchers else 0
        result: dict[str, Any] | None = None
        failure: GatewayError | None = None
        try:
            check_timeout(timeout_s)
            result = await self._execute(device_id, type_name, data, client_id, started + timeout_s, safe)
            return result
        except GatewayError as error:
            outcome = error.code.value
            failure = error
            raise
        finally:
            self._observe(device_id, outcome, time.monotonic() - started)
            if seen:
                if failure is None and result is None:
                    failure = InternalError("the command ended without a result")
                self._answered(seen, device_id, type_name, client_id, started, result, failure)

    async def _execute(
        self, device_id: str, type_name: str, data: object, client_id: str, deadline: float, safe: bool
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
        message = await self._validate(info.cls, data)
        if self._supervisor.stopping:  # after the e-stop of the shutdown, no command may move anything again
            raise DeviceUnavailable(f"device {device_id!r} is stopping: the gateway is shutting down")
        if handle.retiring:  # a reload takes it away: its safe state must hold
            raise DeviceUnavailable(f"device {device_id!r} is stopping: a reload removes or restarts it")
        if handle.status != "connected":
            raise DeviceUnavailable(f"device {device_id!r} is {handle.status}: {handle.detail}".rstrip(": "))
        # No await between the arbiter's decision and the adapter's start: no other command can slip between.
        self.arbiter.admit(device_id, type_name, client_id, safe)
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

    async def _validate(self, cls: type[Any], data: object) -> Any:
        """`from_plain` at once for ordinary payloads; in steps, one large payload at a time, for large ones.

        A payload at its array limits (32768 words, 4096 nested constants) takes milliseconds to
        check even on the fast paths: validated in steps of well under 1 ms, with the loop running
        other work between them. (A worker thread would hold the GIL for up to the 5 ms switch
        interval at a time, and hand it back late on a busy machine.)
        """
        if not is_large(data):
            return from_plain(cls, data, "data")
        if self._large_validations is None:
            self._large_validations = asyncio.Semaphore(1)
        async with self._large_validations:  # one at a time: every step in one loop pass would add up
            steps = from_plain_steps(cls, data, "data")
            while True:
                try:
                    next(steps)
                except StopIteration as done:
                    return done.value
                await asyncio.sleep(0)

    async def estop(self, client_id: str = "") -> list[dict[str, Any]]:
        """Stop every device's actuators at once; report each device's outcome (`client_id`: who asked).

        The bindings are halted first, synchronously (`Arbiter.stop_all`): none of their commands
        can follow the stop, and the stop waits behind none of them.
        """
        self.arbiter.stop_all()
        handles = list(self._supervisor.devices.values())
        started = time.monotonic()
        seen = self._seen("*", "estop", None, client_id) if self.watchers else 0

        async def stop(handle: DeviceHandle) -> dict[str, Any]:
            try:
                async with asyncio.timeout(ESTOP_TIMEOUT_S):
                    await handle.adapter.estop()
            except Exception as error:
                log.exception("estop failed on device %s", handle.id)
                return {"device": handle.id, "ok": False, "error": f"{type(error).__name__}: {error}"}
            return {"device": handle.id, "ok": True}

        outcomes = list(await asyncio.gather(*(stop(handle) for handle in handles)))
        if seen:
            self._answered(seen, "*", "estop", client_id, started, {"devices": outcomes}, None)
        return outcomes

    def release(self, client_id: str) -> None:
        """End every lease and claim that `client_id` holds (the client disconnected)."""
        self.arbiter.release(client_id)
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
