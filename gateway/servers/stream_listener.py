"""One reading path for every stream face (msgpack over TCP and Unix, TDM over TCP).

`read_stream` holds the deadlines a stream connection must keep, the same on every such face:
- **auth/handshake** (`server.auth_timeout_s`): until its session is `admitted`, a client must be
  (the deadline is the client's `Admission`, set when it connected), even while it is not reading
  its answers;
- **read** (`server.read_timeout_s`): a message begun must end within it (slowloris, half frames);
- **idle** (`server.idle_timeout_s`, on faces with a ping): something must arrive within it;
and the shared budget of bytes held in unfinished messages (`server.max_partial_bytes`, through the
connection's `Ticket`). Caps are taken by the listener with `ConnectionLimits.admit` before this.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from gateway.core.config import ServerConfig
from gateway.errors import ErrorCode
from gateway.servers.limits import Ticket
from gateway.servers.read_deadlines import DeadlinePassed, read_deadlines
from gateway.throttled_logs import RateLimitedLog

if TYPE_CHECKING:
    from gateway.core.client import Client

_TIMEOUTS = RateLimitedLog("stream clients timed out", 10.0, logging.INFO)
PARTIAL_REASON = "a request begun {:g} s ago is still unfinished (server.read_timeout_s)"
IDLE_REASON = "nothing received for {:g} s (server.idle_timeout_s; send ping to stay connected)"
BUDGET_REASON = "too many unfinished requests on the gateway (server.max_partial_bytes); try again later"


class StreamSession(Protocol):
    """What `read_stream` needs of a face's session."""

    @property
    def client(self) -> Client:
        """The client core behind the connection (its `admission` holds the auth deadline)."""

    @property
    def admitted(self) -> bool:
        """True once the client authenticated (or handshook): the auth deadline no longer holds."""

    @property
    def id(self) -> str:
        """The client's id, for the log."""

    async def close(self, code: ErrorCode, reason: str) -> None:
        """Say goodbye in the face's protocol, then close."""


async def read_stream(
    reader: asyncio.StreamReader,
    session: StreamSession,
    ticket: Ticket | None,
    server: ServerConfig,
    buffer: Callable[[bytes], None],
    partial_bytes: Callable[[], int],
    handle: Callable[[], Awaitable[bool]],
    read_size: int,
    idle_timeout_s: float = 0.0,
) -> None:
    """Read until the peer leaves, `handle()` returns False, or a deadline passes (then close the session).

    Each read goes to `buffer(data)`; `partial_bytes()` is what the decoder then holds of an
    unfinished message; `handle()` handles the complete ones. Decoder errors propagate.
    """
    admission = session.client.admission
    last_read = time.monotonic()
    partial_since = math.inf
    deadline = read_deadlines().watch(reader)
    try:
        while True:
            # The earliest deadline; its reason is written only when it passes (this runs per read).
            when, which = math.inf, ""
            if not session.admitted and admission.auth_deadline is not None:
                when, which = admission.auth_deadline, "auth"
            if server.read_timeout_s and partial_since + server.read_timeout_s < when:
                when, which = partial_since + server.read_timeout_s, "partial"
            if idle_timeout_s and last_read + idle_timeout_s < when:
                when, which = last_read + idle_timeout_s, "idle"
            deadline.arm(when, which)
            try:
                data = await reader.read(read_size)
            except DeadlinePassed as passed:
                reason = {
                    "auth": admission.auth_timeout_reason,
                    "partial": PARTIAL_REASON.format(server.read_timeout_s),
                    "idle": IDLE_REASON.format(idle_timeout_s),
                }[passed.which]
                _TIMEOUTS.log("closing client %s: %s", session.id, reason)
                await session.close(ErrorCode.TIMEOUT, reason)
                return
            deadline.disarm()
            if not data:
                return
            last_read = time.monotonic()
            buffer(data)
            if ticket is not None and not ticket.hold_partial(partial_bytes()):
                await session.close(ErrorCode.UNAVAILABLE, BUDGET_REASON)
                return
            # A client that is not reading its answers is not read either, but its auth deadline holds.
            if session.admitted:
                if not await handle():
                    return
            else:
                try:
                    async with asyncio.timeout(admission.auth_left()):
                        if not await handle():
                            return
                except TimeoutError:
                    await session.close(ErrorCode.TIMEOUT, admission.auth_timeout_reason)
                    return
            # Time spent waiting for a client to read its answers is not time it was idle.
            last_read = time.monotonic()
            if not partial_bytes():
                partial_since = math.inf
            elif partial_since == math.inf:
                partial_since = last_read
    finally:
        deadline.close()
