"""Watched nodes' variables: one read per node per period, shared by every TDM client watching it.

A TDM client that watches a node's variables gets them all first, then those that change. The node
has no change notification, so its variables are read (`hwgateway/AsebaVariables`, a read-only
service: answered under another client's lock) every `VARIABLES_PERIOD_S` while anyone watches.
In a classroom a robot is watched by its student and by the teacher (and Thymio Suite's apps watch
several times over): one read per watcher cost about 0.7 ms of the gateway's CPU each, 600 reads a
second for 30 robots. Here one task per watched node reads it once a period, through a watcher's own
client (so the token and rate rules are that client's), and hands the result to every watcher; each
watcher keeps what it already sent and sends only the changes. A watcher that starts while the node
is being read gets the last read at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from gateway.errors import DeviceUnavailable, GatewayError, UnknownDevice

log = logging.getLogger(__name__)

#: Seconds between two reads of a watched node's variables.
VARIABLES_PERIOD_S = 0.1

#: One read: every variable as (name, 16-bit words), in the node's order.
Variables = list[tuple[str, tuple[int, ...]]]


class VariableWatcher(Protocol):
    """A TDM session watching nodes' variables."""

    async def read_variables(self, device: str) -> dict[str, Any]:
        """Read `device`'s variables through this watcher's client (`hwgateway/AsebaVariables`'s result)."""

    def variables_read(self, device: str, variables: Variables) -> None:
        """`device`'s variables as just read (the watcher sends its client what changed)."""


class VariablePolls:
    """The reading tasks of one TDM face: one per watched node, while it has watchers."""

    def __init__(self, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        """`sleep(seconds)` paces the reads (tests pass one they release by hand)."""
        self.sleep = sleep
        #: The watchers of each node (a dict as an ordered set: the first is asked to read first).
        self._watchers: dict[str, dict[VariableWatcher, None]] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._last: dict[str, Variables] = {}

    def watch(self, device: str, watcher: VariableWatcher) -> None:
        """Start giving `watcher` `device`'s variables (the last read at once, when there is one)."""
        watchers = self._watchers.setdefault(device, {})
        if watcher in watchers:
            return
        watchers[watcher] = None
        last = self._last.get(device)
        if last is not None:
            watcher.variables_read(device, last)
        if device not in self._tasks:
            self._tasks[device] = asyncio.create_task(self._poll(device), name=f"tdm:variables:{device}")

    def unwatch(self, device: str, watcher: VariableWatcher) -> None:
        """Stop giving `watcher` `device`'s variables; the node's reads stop with its last watcher."""
        watchers = self._watchers.get(device)
        if watchers is None or watcher not in watchers:
            return
        del watchers[watcher]
        if not watchers:
            del self._watchers[device]
            self._last.pop(device, None)
            task = self._tasks.pop(device, None)
            if task is not None:
                task.cancel()

    def unwatch_all(self, watcher: VariableWatcher) -> None:
        """Stop every watch of `watcher` (its client left)."""
        for device in [d for d, watchers in self._watchers.items() if watcher in watchers]:
            self.unwatch(device, watcher)

    def watched(self) -> dict[str, int]:
        """How many watchers each watched node has."""
        return {device: len(watchers) for device, watchers in self._watchers.items()}

    async def _poll(self, device: str) -> None:
        while True:
            variables = await self._read(device)
            watchers = self._watchers.get(device)
            if watchers is None:
                return
            if variables is not None:
                self._last[device] = variables
                for watcher in list(watchers):
                    watcher.variables_read(device, variables)
            await self.sleep(VARIABLES_PERIOD_S)

    async def _read(self, device: str) -> Variables | None:
        """One read, through the first watcher whose client may make it; None when none could."""
        for watcher in list(self._watchers.get(device, ())):
            try:
                data = await watcher.read_variables(device)
            except (DeviceUnavailable, UnknownDevice) as error:  # the node went away: try again next period
                log.debug("tdm: cannot read %s's variables: %s", device, error)
                return None
            except GatewayError as error:  # this client may not now (too many commands in flight...): the next one
                log.debug("tdm: cannot read %s's variables: %s", device, error)
                continue
            return [(variable["name"], tuple(variable["data"])) for variable in data["variables"]]
        return None
