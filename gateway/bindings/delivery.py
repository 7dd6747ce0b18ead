"""How a binding's commands reach its target: latest value only, one in flight per output, and the safe output's duty.

Every command goes through the gateway's command path (`CommandRouter.execute`: validation, the
arbiter's priorities, the adapter's leases) under the binding's holder id. For each output (a
device and a command type) at most one command is in flight: a tick that finds the previous one
still running sends nothing for it, and the next tick sends the then latest value, so a slow
device gets the newest value and never a backlog.

The safe output is a duty, not a message: `begin_safe` records it per output, and `pump` (called
every tick) re-sends each output's safe command until the command path confirms it (the adapter
carried it out), or answers `locked` (another holder, of higher priority or still driving, owns
the output: the safe output must not clobber it, and that holder's leases keep it safe). A safe
command waits for the output's in-flight command to finish first, so it can never be overtaken by
an older non-safe one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

from gateway.errors import GatewayError, Locked

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DeviceCommand:
    """One command of a binding: `type` with plain `data` for `device`."""

    device: str
    type: str
    data: dict[str, Any]

    @property
    def key(self) -> tuple[str, str]:
        """The output it drives: its device and command type."""
        return (self.device, self.type)


class CommandPath(Protocol):
    """What delivery needs of the gateway's command router (`gateway.commands.CommandRouter`)."""

    def execute(
        self, device_id: str, type_name: str, data: object, client_id: str, timeout_s: float, safe: bool = False
    ) -> Awaitable[dict[str, Any]]:
        """Run one command (see `CommandRouter.execute`)."""


class Delivery:
    """The in-flight commands and the pending safe outputs of one binding (holder `holder`)."""

    def __init__(
        self,
        holder: str,
        path: CommandPath,
        timeout_s: float,
        on_refused: Callable[[DeviceCommand, GatewayError], None],
    ) -> None:
        """`timeout_s`: each command's deadline (s); `on_refused(command, error)`: a driving command was refused."""
        self.holder = holder
        self._path = path
        self._timeout_s = timeout_s
        self._on_refused = on_refused
        self._in_flight: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._safe: dict[tuple[str, str], DeviceCommand] = {}
        self.sent = 0
        self.safe_sent = 0
        #: The last command sent, driving or safe (None before the first).
        self.last_sent: DeviceCommand | None = None
        self.refused = 0
        #: True once every safe output of the last `begin_safe` was confirmed (or yielded to another holder).
        self.safe_confirmed = True
        #: The last error that kept a safe output from being confirmed ("" when none).
        self.safe_problem = ""

    @property
    def safe_pending(self) -> bool:
        """True while a safe output still waits for its confirmation."""
        return bool(self._safe)

    def busy(self, key: tuple[str, str]) -> bool:
        """True while a command for output `key` is in flight."""
        task = self._in_flight.get(key)
        return task is not None and not task.done()

    def drive(self, command: DeviceCommand) -> bool:
        """Send `command` unless its output has one in flight (or a safe output pending); True when sent."""
        if command.key in self._safe or self.busy(command.key):
            return False
        self.sent += 1
        self.last_sent = command
        self._start(command, self._drive(command))
        return True

    def begin_safe(self, commands: list[DeviceCommand]) -> None:
        """Owe the safe output `commands` from now on: `pump` sends them until each is confirmed."""
        for command in commands:
            self._safe[command.key] = command
        if commands:
            self.safe_confirmed = False

    def cancel_safe(self) -> None:
        """Drop the pending safe outputs (STOP ALL made the outputs safe itself, or the binding drives again)."""
        self._safe.clear()
        self.safe_confirmed = True

    def pump(self) -> None:
        """Send each pending safe output whose output has nothing in flight (once per tick)."""
        for key, command in list(self._safe.items()):
            if not self.busy(key):
                self.safe_sent += 1
                self.last_sent = command
                self._start(command, self._send_safe(command))

    async def settle(self, deadline_s: float, period_s: float) -> bool:
        """Pump the safe outputs every `period_s` s until confirmed or `deadline_s` s pass; True if confirmed."""
        loop = asyncio.get_running_loop()
        end = loop.time() + deadline_s
        while self._safe and loop.time() < end:
            self.pump()
            await asyncio.sleep(min(period_s, max(0.0, end - loop.time())))
        return not self._safe

    def cancel(self) -> None:
        """Cancel every command in flight (the binding ends)."""
        for task in self._in_flight.values():
            task.cancel()
        self._in_flight.clear()

    def _start(self, command: DeviceCommand, work: Coroutine[Any, Any, None]) -> None:
        self._in_flight[command.key] = asyncio.create_task(work, name=f"{self.holder}:{command.type}")

    async def _drive(self, command: DeviceCommand) -> None:
        try:
            await self._path.execute(command.device, command.type, command.data, self.holder, self._timeout_s)
        except GatewayError as error:
            self.refused += 1
            self._on_refused(command, error)

    async def _send_safe(self, command: DeviceCommand) -> None:
        try:
            await self._path.execute(command.device, command.type, command.data, self.holder, self._timeout_s, True)
        except Locked as error:
            # Another holder drives this output: the safe output must not clobber it (its leases keep it safe).
            log.info("%s: safe output on %s yields: %s", self.holder, command.device, error.message)
        except GatewayError as error:
            self.safe_problem = f"{error.code.value}: {error.message}"
            return  # not confirmed: the next tick sends it again
        if self._safe.get(command.key) is command:
            del self._safe[command.key]
        if not self._safe:
            self.safe_confirmed = True
            self.safe_problem = ""
