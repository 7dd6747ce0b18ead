"""systemd's notify protocol: READY, STATUS, WATCHDOG and STOPPING datagrams to `$NOTIFY_SOCKET`.

Without `$NOTIFY_SOCKET` (not started by systemd) every call does nothing. The watchdog pings only
while the gateway is healthy, so a hung event loop or a dead adapter task lets systemd restart it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Mapping

log = logging.getLogger(__name__)


class Notifier:
    """Sends notify datagrams to the socket systemd gave us (a path, or `@name` for the abstract namespace)."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET", "")
        self._address = "\0" + address[1:] if address.startswith("@") else address
        self._socket: socket.socket | None = None
        if self._address:
            self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        self.watchdog_interval = _watchdog_interval(env)

    @property
    def enabled(self) -> bool:
        """True when systemd listens."""
        return self._socket is not None

    def notify(self, *assignments: str) -> None:
        """Send `KEY=value` lines in one datagram; failures are logged, never raised."""
        if self._socket is None:
            return
        try:
            self._socket.sendto("\n".join(assignments).encode(), self._address)
        except OSError as error:
            log.warning("sd_notify to %s failed: %s", self._address.lstrip("\0"), error)

    def close(self) -> None:
        """Release the socket."""
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    async def watchdog(
        self,
        healthy: Callable[[], bool],
        status: Callable[[], str],
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """Ping `WATCHDOG=1` every half watchdog interval while `healthy()`; refresh `STATUS=` each tick.

        `sleep(seconds)` waits between ticks (tests pass one they release by hand).
        """
        if self.watchdog_interval is None:
            return
        period = self.watchdog_interval / 2
        while True:
            if healthy():
                self.notify("WATCHDOG=1", f"STATUS={status()}")
            else:
                log.warning("unhealthy: withholding the watchdog ping")
                self.notify(f"STATUS=unhealthy: {status()}")
            await sleep(period)


def _watchdog_interval(env: Mapping[str, str]) -> float | None:
    """The watchdog timeout in seconds, when systemd set one for this process."""
    usec = env.get("WATCHDOG_USEC")
    pid = env.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        interval = int(usec) / 1e6
    except ValueError:
        log.warning("ignoring WATCHDOG_USEC=%r: not an integer", usec)
        return None
    return interval if interval > 0 else None
