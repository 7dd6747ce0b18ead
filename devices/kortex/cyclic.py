"""The BaseCyclic loop on the UDP link: one request per period, never waiting for a reply.

Deadlines are absolute (``deadline += period``), because asyncio rounds every timer up to whole
milliseconds (perf-baselines.md §C): a late wake-up sends the cycles that fell due back to back, so
the mean rate holds. A request unanswered after the reply timeout is a dropped cycle, counted and
forgotten, never an exception; the vendor's driver dies on exactly that (spec kortex.md §5).
"""

from __future__ import annotations

import asyncio
import logging
import statistics
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from google.protobuf.message import Message

from devices.kortex.connection import KortexConnection
from devices.kortex.convert import c61_command
from devices.kortex.errors import KortexRequestError
from gateway.messages.kortex import Command as C61Command
from gateway.messages.kortex import KortexCyclicStats
from protocols.errors import ProtocolError
from protocols.kortex.errors import sub_error_code
from protocols.kortex.frame import parse_payload
from protocols.kortex.generated import BaseCyclic_pb2, BaseCyclicKortex3_pb2
from protocols.kortex.router import ErrorResponse, Response
from protocols.kortex.services import Function

log = logging.getLogger(__name__)

#: Beyond this lag the loop skips the missed cycles (counted) instead of sending a burst.
MAX_CATCH_UP_S = 0.05
#: Message ids remembered after expiry, so a late reply is told apart from a stray one.
_EXPIRED_MEMORY = 1024
#: Error sub-codes meaning the session is gone: the link must be rebuilt, not the cycle dropped.
_SESSION_LOST = frozenset(sub_error_code(name) for name in ("INVALID_SESSION", "INVALID_USER_SESSION_ACCESS"))


class CyclicCodec(Protocol):
    """What one API version sends each cycle and how it reads the answer."""

    @property
    def function(self) -> Function:
        """The BaseCyclic function of the next request."""

    def request(self, frame_id: int) -> bytes:
        """The request payload of cycle `frame_id`."""

    def parse(self, payload: bytes) -> Message:
        """The feedback in a reply payload; `ProtocolError` if malformed."""


class Kortex2Codec:
    """Gen3 / Gen3 lite: RefreshFeedback (0x30003), which works in any servoing mode.

    Refresh would need LOW_LEVEL_SERVOING and actuator commands; a Kortex 2 arm has no C61 wrist,
    so the gateway never has anything to send with it.
    """

    function = Function.BASE_CYCLIC_REFRESH_FEEDBACK

    def request(self, frame_id: int) -> bytes:
        """RefreshFeedback takes Common.Empty."""
        return b""

    def parse(self, payload: bytes) -> BaseCyclic_pb2.Feedback:
        """A Kortex 2 BaseCyclic.Feedback."""
        return parse_payload(BaseCyclic_pb2.Feedback, payload)


class Kortex3Codec:
    """Link 6: RefreshFeedback (0x30003) in single-level servoing; Refresh (0x30001) in low level.

    Like Kinova's ros2_link6 driver (kortex3_hardware_interface_low_level.cpp `write`): Refresh only
    while the arm is in LOW_LEVEL_SERVOING and the gateway commands its actuators; there each
    actuator is held at the position it had when low level began (velocity 0, flags 0, as the
    driver's `sendJointPositionCommands` does), and the Command carries the C61 wrist command.
    """

    def __init__(self) -> None:
        self._command = BaseCyclicKortex3_pb2.Command()
        self._command.wrist.c61.SetInParent()
        self._low_level = False

    @property
    def low_level(self) -> bool:
        """Whether each cycle is a Refresh commanding the actuators (the arm is in low-level servoing)."""
        return self._low_level

    @property
    def function(self) -> Function:
        """Refresh in low level, RefreshFeedback otherwise."""
        return Function.BASE_CYCLIC_REFRESH if self._low_level else Function.BASE_CYCLIC_REFRESH_FEEDBACK

    def hold(self, positions: Sequence[float]) -> None:
        """Command every actuator to stay at `positions` (deg, joint 1 first) from the next cycle on."""
        del self._command.actuators[:]
        for position in positions:
            self._command.actuators.add(position=position, velocity=0.0, flags=0)
        self._low_level = True

    def release(self) -> None:
        """Back to RefreshFeedback from the next cycle on (`refresh_request` still builds the last Refresh)."""
        self._low_level = False

    def set_wrist(self, command: C61Command) -> None:
        """Send `command` with the next Refresh on."""
        self._command.wrist.c61.CopyFrom(c61_command(command))

    def request(self, frame_id: int) -> bytes:
        """Refresh's Command in low level, RefreshFeedback's Empty otherwise."""
        return self.refresh_request(frame_id) if self._low_level else b""

    def refresh_request(self, frame_id: int) -> bytes:
        """Refresh's Command: held actuators and wrist; command ids are the frame id, as the vendor sets them."""
        command = self._command
        command.frame_id = frame_id
        for actuator in command.actuators:
            actuator.command_id.identifier = frame_id
        command.wrist.c61.command_id.identifier = frame_id
        return command.SerializeToString()

    def parse(self, payload: bytes) -> BaseCyclicKortex3_pb2.Feedback:
        """A Kortex 3 BaseCyclic.Feedback."""
        return parse_payload(BaseCyclicKortex3_pb2.Feedback, payload)


@dataclass(slots=True)
class CyclicCounters:
    """Counters since the loop started (see `KortexCyclicStats` for their meaning)."""

    cycles: int = 0
    replies: int = 0
    dropped: int = 0
    late: int = 0
    errors: int = 0
    skipped: int = 0


class CyclicLoop:
    """Runs BaseCyclic at `rate_hz` on `connection`; hands every decoded feedback to `on_feedback`."""

    def __init__(
        self,
        connection: KortexConnection,
        codec: CyclicCodec,
        rate_hz: float,
        reply_timeout_s: float,
        on_feedback: Callable[[Message], None],
    ) -> None:
        self.connection = connection
        self.codec = codec
        self.period_s = 1.0 / rate_hz
        self.reply_timeout_s = reply_timeout_s
        self.counters = CyclicCounters()
        self.frame_id = 0
        self._on_feedback = on_feedback
        self._inflight: OrderedDict[int, float] = OrderedDict()
        self._expired: OrderedDict[int, None] = OrderedDict()
        self._periods: list[float] = []
        self._last_send: float | None = None
        self._waiters: list[asyncio.Future[int]] = []
        self._failure: KortexRequestError | None = None
        self._first_error_logged = False
        connection.on_response = self._on_response

    async def run(self) -> None:
        """Cycle until cancelled; raise only when the link or its session is gone."""
        loop = asyncio.get_running_loop()
        period = self.period_s
        deadline = loop.time()
        while True:
            if self._failure is not None:
                raise self._failure
            now = loop.time()
            behind = now - deadline
            if behind > MAX_CATCH_UP_S:
                missed = int(behind / period)
                self.counters.skipped += missed
                deadline += missed * period
            while deadline <= now:
                self._cycle(now)
                deadline += period
            await asyncio.sleep(deadline - loop.time())

    def next_cycle(self) -> asyncio.Future[int]:
        """A future of the frame id of the next request sent (which carries the current command)."""
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        return future

    def stats(self, api: str) -> KortexCyclicStats:
        """The counters, and the send rate and period percentiles since the previous call."""
        periods, self._periods = self._periods, []
        window = sum(periods)
        p50 = p99 = 0.0
        if len(periods) >= 2:
            cuts = statistics.quantiles(periods, n=100, method="inclusive")
            p50, p99 = cuts[49], cuts[98]
        counters = self.counters
        return KortexCyclicStats(
            api=api,
            window_s=window,
            rate_hz=len(periods) / window if window > 0 else 0.0,
            period_p50_ms=p50 * 1000,
            period_p99_ms=p99 * 1000,
            cycles=counters.cycles,
            replies=counters.replies,
            dropped=counters.dropped,
            late=counters.late,
            errors=counters.errors,
            skipped=counters.skipped,
        )

    def _cycle(self, now: float) -> None:
        inflight = self._inflight
        limit = now - self.reply_timeout_s
        while inflight:
            message_id, sent_at = next(iter(inflight.items()))
            if sent_at > limit:
                break
            del inflight[message_id]
            self.counters.dropped += 1
            self._expired[message_id] = None
            if len(self._expired) > _EXPIRED_MEMORY:
                self._expired.popitem(last=False)
        self.frame_id = (self.frame_id + 1) & 0xFFFF
        message_id = self.connection.send_request(self.codec.function, self.codec.request(self.frame_id))
        inflight[message_id] = now
        self.counters.cycles += 1
        if self._last_send is not None:
            self._periods.append(now - self._last_send)
        self._last_send = now
        if self._waiters:
            waiters, self._waiters = self._waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(self.frame_id)

    def _on_response(self, event: Response | ErrorResponse) -> None:
        if self._inflight.pop(event.message_id, None) is None:
            if event.message_id in self._expired:
                del self._expired[event.message_id]
                self.counters.late += 1
            else:
                self.connection.unmatched += 1
            return
        if isinstance(event, ErrorResponse):
            self.counters.errors += 1
            if event.error.sub_code in _SESSION_LOST:
                self._failure = KortexRequestError("BaseCyclic", event.error)
            elif not self._first_error_logged:
                self._first_error_logged = True
                log.warning("%s: BaseCyclic refused (counted from now on): %s", self.connection.name, event.error)
            return
        try:
            feedback = self.codec.parse(event.frame.payload)
        except ProtocolError as error:
            self.counters.errors += 1
            log.debug("%s: undecodable BaseCyclic feedback: %s", self.connection.name, error)
            return
        self.counters.replies += 1
        self._on_feedback(feedback)
