"""One link to the robot (TCP 10000 or UDP 10001): its session, keep-alive, RPCs and notifications.

Like the vendor's router plus session manager, minus the threads: requests are matched to replies
by message id, error frames become `KortexRequestError`, notifications go to the handler
registered for their (service id, subscription handle), and a link idle for 150 ms sends a
KeepAlive. Replies that no RPC waits for go to `on_response` (the cyclic loop's). The clock and the
sleep are injectable so the keep-alive timing can be tested without waiting.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from devices.kortex.errors import KortexRequestError, KortexTimeout, LinkLost
from protocols.errors import ProtocolError
from protocols.kortex.frame import Frame
from protocols.kortex.generated import Session_pb2
from protocols.kortex.router import ErrorResponse, Notification, Ping, Response, Router
from protocols.kortex.services import ApiVersion, Function, function_name

log = logging.getLogger(__name__)

#: The vendor's SessionManager sends KeepAlive when no request went out for this long.
KEEPALIVE_IDLE_S = 0.150

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]
NotificationHandler = Callable[[Frame], None]


class KortexConnection:
    """A single-use link: attach a transport, create a session, use it, close it, throw it away."""

    def __init__(
        self,
        name: str,
        *,
        api: ApiVersion = "kortex2",
        rpc_timeout_s: float = 2.0,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.name = name
        #: The API version, which names functions in errors (0x20091 differs between them).
        self.api = api
        self.router = Router()
        self.rpc_timeout_s = rpc_timeout_s
        self._clock = clock
        self._sleep = sleep
        self._send: Callable[[bytes], None] | None = None
        self._close: Callable[[], None] | None = None
        self._pending: dict[int, asyncio.Future[Frame]] = {}
        self._notification_handlers: dict[tuple[int, int], NotificationHandler] = {}
        self._keepalive_id: int | None = None
        self._lost = asyncio.Event()
        #: Called with replies to requests no RPC waits for (the cyclic loop's).
        self.on_response: Callable[[Response | ErrorResponse], None] | None = None
        #: Why the link is gone, once it is.
        self.failure: LinkLost | None = None
        #: Clock time of the last request sent and of the last frame received.
        self.last_sent = self.last_received = clock()
        self.keepalives_sent = 0
        #: KeepAlives still unanswered when the next one was due.
        self.keepalives_missed = 0
        #: Replies and notifications nobody was waiting for, frames that did not decode, transport errors.
        self.unmatched = 0
        self.decode_errors = 0
        self.transport_errors = 0

    @property
    def session_id(self) -> int:
        """The session the robot assigned to this link (0 before CreateSession)."""
        return self.router.session_id

    def attach(self, send: Callable[[bytes], None], close: Callable[[], None]) -> None:
        """Connect to a transport: `send` takes one serialized Frame, `close` ends the transport."""
        self._send, self._close = send, close

    # -- sending -----------------------------------------------------------------------------------

    def send_request(self, function_uid: int, payload: bytes = b"", device_id: int = 0) -> int:
        """Send a request without waiting; return its message id."""
        if self.failure is not None:
            raise self.failure
        if self._send is None:
            raise LinkLost(f"{self.name}: no transport attached")
        message_id, data = self.router.request(function_uid, payload, device_id)
        self._send(data)
        self.last_sent = self._clock()
        return message_id

    async def call(
        self, function_uid: int, payload: bytes = b"", *, timeout_s: float | None = None, device_id: int = 0
    ) -> Frame:
        """Send a request and wait for its response frame.

        Raises `KortexRequestError` for an error frame, `KortexTimeout` after `timeout_s` (default
        `rpc_timeout_s`), `LinkLost` when the link goes first.
        """
        future: asyncio.Future[Frame] = asyncio.get_running_loop().create_future()
        message_id = self.send_request(function_uid, payload, device_id)
        self._pending[message_id] = future
        timeout = self.rpc_timeout_s if timeout_s is None else timeout_s
        try:
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            raise KortexTimeout(
                f"{self.name}: no reply to {function_name(function_uid, self.api)} within {timeout * 1000:.0f} ms"
            ) from None
        finally:
            self._pending.pop(message_id, None)

    # -- sessions ----------------------------------------------------------------------------------

    async def create_session(
        self, username: str, password: str, session_inactivity_timeout_ms: int, connection_inactivity_timeout_ms: int
    ) -> int:
        """CreateSession (0x10001) and return the session id the robot put in the response header."""
        self.router.reset()
        info = Session_pb2.CreateSessionInfo(
            username=username,
            password=password,
            session_inactivity_timeout=session_inactivity_timeout_ms,
            connection_inactivity_timeout=connection_inactivity_timeout_ms,
        )
        await self.call(Function.SESSION_CREATE_SESSION, info.SerializeToString())
        if not self.router.session_id:
            raise LinkLost(f"{self.name}: CreateSession was answered without a session id")
        return self.router.session_id

    async def close_session(self, timeout_s: float) -> None:
        """CloseSession (0x10002); like the vendor's, a timeout or refusal is only logged."""
        if self.failure is not None or not self.router.session_id:
            return
        try:
            await self.call(Function.SESSION_CLOSE_SESSION, timeout_s=timeout_s)
        except (KortexTimeout, KortexRequestError, LinkLost) as error:
            log.info("%s: CloseSession failed: %s", self.name, error)

    async def keep_alive(self, idle_s: float = KEEPALIVE_IDLE_S) -> None:
        """Send KeepAlive (0x10003) whenever no request went out for `idle_s`; runs until cancelled.

        Its reply is not awaited (the vendor ignores its timeout too); one still unanswered when the
        next is due is counted in `keepalives_missed`. Silence is the watchdog's business.
        """
        while True:
            due = self.last_sent + idle_s
            now = self._clock()
            if now < due:
                await self._sleep(due - now)
                continue
            if self._keepalive_id is not None:
                self.keepalives_missed += 1
            self._keepalive_id = self.send_request(Function.SESSION_KEEP_ALIVE)
            self.keepalives_sent += 1

    # -- notifications -----------------------------------------------------------------------------

    def add_notification_handler(self, service_id: int, handle: int, handler: NotificationHandler) -> None:
        """Call `handler` with every notification of subscription `handle` of `service_id`."""
        self._notification_handlers[(service_id, handle)] = handler

    def remove_notification_handler(self, service_id: int, handle: int) -> None:
        """Stop dispatching a subscription's notifications."""
        self._notification_handlers.pop((service_id, handle), None)

    # -- receiving (called by the transport) -------------------------------------------------------

    def frame_received(self, data: bytes) -> None:
        """Dispatch one serialized Frame from the robot."""
        try:
            event = self.router.receive(data)
        except ProtocolError as error:
            self.decode_errors += 1
            log.debug("%s: dropping an undecodable frame: %s", self.name, error)
            return
        self.last_received = self._clock()
        if isinstance(event, Response | ErrorResponse):
            future = self._pending.get(event.message_id)
            if future is not None:
                if not future.done():
                    if isinstance(event, ErrorResponse):
                        header = event.frame.header
                        future.set_exception(
                            KortexRequestError(function_name(header.function_uid, self.api), event.error)
                        )
                    else:
                        future.set_result(event.frame)
            elif event.message_id == self._keepalive_id:
                self._keepalive_id = None
            elif self.on_response is not None:
                self.on_response(event)
            else:
                self.unmatched += 1
        elif isinstance(event, Notification):
            handler = self._notification_handlers.get((event.service_id, event.handle))
            if handler is None:
                self.unmatched += 1
            else:
                handler(event.frame)
        elif isinstance(event, Ping):
            if self._send is not None and self.failure is None:
                self._send(event.reply)
        else:
            self.unmatched += 1

    def transport_error(self, error: Exception) -> None:
        """A non-fatal transport error (e.g. ICMP port unreachable on UDP)."""
        self.transport_errors += 1
        log.debug("%s: transport error: %s", self.name, error)

    def lost(self, error: BaseException | None) -> None:
        """The transport closed or failed: fail every waiter and mark the link lost."""
        self._fail(f"{type(error).__name__}: {error}" if error is not None else "closed by the robot")

    def _fail(self, reason: str) -> None:
        if self.failure is not None:
            return
        self.failure = LinkLost(f"{self.name} link lost ({reason})")
        for future in self._pending.values():
            if not future.done():
                future.set_exception(self.failure)
        self._lost.set()

    async def wait_lost(self) -> LinkLost:
        """Wait until the link is lost and return why."""
        await self._lost.wait()
        assert self.failure is not None
        return self.failure

    def close(self) -> None:
        """Close the transport (without CloseSession; call `close_session` first for a clean end)."""
        self._fail("closed by the gateway")
        if self._close is not None:
            self._close()
