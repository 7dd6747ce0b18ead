"""Connection admission shared by every listener: caps in all and per peer, and a budget of partial bytes.

Every accepted socket (WebSocket, HTTP, msgpack TCP and Unix) takes a `Ticket` before it may cost
the gateway anything; a refused one is closed at once with a reason. The open-file limit is raised
to its hard limit at start, and the cap is kept below it so that devices, log files and `/healthz`
always find a descriptor.
"""

from __future__ import annotations

import logging
import resource
import time
from collections import Counter

from gateway.core.config import ServerConfig
from gateway.memory import release_soon

log = logging.getLogger(__name__)

#: Connections beyond the cap that the HTTP listener still takes, to answer `/healthz` (and 503).
HTTP_RESERVE = 16


def raise_open_file_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit; return the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError) as error:
            log.warning("cannot raise the open-file limit from %d to %d: %s", soft, hard, error)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


#: A connection that ends holding this much of an unfinished request has the heap trimmed after it.
LARGE_PARTIAL_BYTES = 64 * 1024


class Refused(Exception):
    """A connection the limits do not admit; the message says which limit and how to change it."""


class Ticket:
    """One admitted connection: its share of the caps and of the partial-bytes budget."""

    def __init__(self, limits: ConnectionLimits, peer: str | None) -> None:
        self._limits = limits
        self.peer = peer
        #: Admitted past the cap, into the HTTP reserve: plain HTTP only (no WebSocket).
        self.reserve = limits.connections > limits.max_clients
        self.partial = 0
        self._released = False

    def hold_partial(self, size: int) -> bool:
        """Record that this connection now holds `size` bytes of an unfinished request.

        Return False when all connections together would hold more than `max_partial_bytes`;
        the caller then closes this connection.
        """
        limits = self._limits
        total = limits.partial_bytes - self.partial + size
        if size > self.partial and total > limits.max_partial_bytes:
            return False
        limits.partial_bytes = total
        self.partial = size
        return True

    def release(self) -> None:
        """The connection is closed."""
        if self._released:
            return
        self._released = True
        if self.partial >= LARGE_PARTIAL_BYTES:
            release_soon()
        self.hold_partial(0)
        self._limits.drop(self)


class ConnectionLimits:
    """Counts connections in all and per peer address, and the bytes of unfinished requests."""

    def __init__(self, server: ServerConfig, open_files: int) -> None:
        #: The connection cap in force: `max_clients`, or less when the open-file limit is lower.
        self.max_clients = max(1, min(server.max_clients, open_files - server.fd_reserve - HTTP_RESERVE))
        self.max_per_peer = min(server.max_clients_per_peer, self.max_clients)
        self.max_partial_bytes = server.max_partial_bytes
        self.partial_bytes = 0
        self.connections = 0
        self.refused = 0
        self._per_peer: Counter[str] = Counter()
        self._exhaustion = RateLimitedLog("resource exhaustion", 10.0)
        if self.max_clients < server.max_clients:
            log.warning(
                "open-file limit %d allows only %d of server.max_clients = %d (raise LimitNOFILE)",
                open_files,
                self.max_clients,
                server.max_clients,
            )

    def admit(self, peer: str | None, reserve: int = 0) -> Ticket:
        """A ticket for a new connection from `peer` (an IP address; None for a Unix socket), or `Refused`.

        `reserve` more connections are admitted past the cap (for `/healthz` on the HTTP port).
        """
        if self.connections >= self.max_clients + reserve:
            self._refuse(f"too many clients: {self.connections} connected (server.max_clients = {self.max_clients})")
        if peer is not None and self._per_peer[peer] >= self.max_per_peer:
            self._refuse(
                f"too many clients from {peer}: {self._per_peer[peer]} connected "
                f"(server.max_clients_per_peer = {self.max_per_peer})"
            )
        self.connections += 1
        if peer is not None:
            self._per_peer[peer] += 1
        return Ticket(self, peer)

    def drop(self, ticket: Ticket) -> None:
        """Forget a released ticket."""
        self.connections -= 1
        if ticket.peer is not None:
            self._per_peer[ticket.peer] -= 1
            if self._per_peer[ticket.peer] <= 0:
                del self._per_peer[ticket.peer]

    def _refuse(self, reason: str) -> None:
        self.refused += 1
        self._exhaustion.log("refusing connections: %s", reason)
        raise Refused(reason)


class RateLimitedLog:
    """Logs a recurring condition once per `interval_s`, with how often it happened meanwhile."""

    def __init__(self, what: str, interval_s: float, level: int = logging.WARNING) -> None:
        self.what = what
        self.level = level
        self.interval_s = interval_s
        self._last = -float("inf")
        self._suppressed = 0

    def log(self, message: str, *args: object) -> bool:
        """Log now unless logged less than `interval_s` ago; return True when it logged."""
        now = time.monotonic()
        if now - self._last < self.interval_s:
            self._suppressed += 1
            return False
        suppressed, self._suppressed, self._last = self._suppressed, 0, now
        log.log(
            self.level,
            "%s (%d more like it since the last such line; logged at most once per %.0f s)",
            message % args,
            suppressed,
            self.interval_s,
            extra={"condition": self.what},
        )
        return True


class LogBudget:
    """Lets `burst` lines through per `interval_s`; the lines left out are counted in one line later.

    Connection lines ("client c7 connected") are worth having one by one, but a thousand
    reconnecting attackers would write them by the megabyte.
    """

    def __init__(self, what: str, burst: int, interval_s: float) -> None:
        self.what = what
        self.burst = burst
        self.interval_s = interval_s
        self._started = -float("inf")
        self._used = 0
        self._left_out = 0

    def log(self, logger: logging.Logger, message: str, *args: object) -> None:
        """Log `message` at INFO if the budget allows, else count it."""
        now = time.monotonic()
        if now - self._started >= self.interval_s:
            if self._left_out:
                logger.info(
                    "%d %s lines left out in %.0f s (at most %d per %.0f s are logged)",
                    self._left_out,
                    self.what,
                    now - self._started,
                    self.burst,
                    self.interval_s,
                )
            self._started, self._used, self._left_out = now, 0, 0
        if self._used >= self.burst:
            self._left_out += 1
            return
        self._used += 1
        logger.info(message, *args)


#: Every face's connect and disconnect lines share this budget.
CONNECTION_LINES = LogBudget("client connect/disconnect", 100, 10.0)
