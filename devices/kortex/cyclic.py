"""The BaseCyclic loop on the UDP link, on a real-time thread of its own: one request per period.

The UDP link's socket belongs to a `RealtimeThread` (gateway/realtime.py) for the link's whole
life: it sends each cycle on an absolute deadline (`deadline += period`, a `time.perf_counter_ns`
clock, sleep then a short spin), reads the replies right after each send, and hands the feedback
to the event loop through a bounded `ToLoop`, so neither client work on the event loop nor
asyncio's millisecond timers move a cycle. Frames that are not cyclic replies (session RPCs,
KeepAlive, the last Refresh of low level) go to the `KortexConnection` on the event loop as
before. A late wake-up sends the cycles that fell due back to back, so the mean rate holds; beyond
`MAX_CATCH_UP_S` the missed cycles are skipped (counted). A request unanswered after the reply
timeout is a dropped cycle, counted and forgotten, never an exception; the vendor's driver dies on
exactly that (spec kortex.md §5).

What to send comes from the event loop through a latest-value slot (`Kortex3Codec`'s plan): a
command change is one reference swap that the next cycle picks up whole.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import socket
import statistics
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from google.protobuf.message import Message

from devices.kortex.connection import KortexConnection
from devices.kortex.convert import c61_command
from devices.kortex.errors import KortexRequestError, LinkLost
from gateway.messages.kortex import Command as C61Command
from gateway.messages.kortex import KortexCyclicStats
from gateway.realtime import NORMAL, SWITCH_INTERVAL_S, Latest, RealtimeThread, SchedulingPolicy, ToLoop
from protocols.errors import ProtocolError
from protocols.kortex.errors import sub_error_code
from protocols.kortex.frame import parse_payload
from protocols.kortex.framing import check_udp
from protocols.kortex.generated import BaseCyclic_pb2, BaseCyclicKortex3_pb2
from protocols.kortex.router import ErrorResponse, Response, Router
from protocols.kortex.services import Function

log = logging.getLogger(__name__)

#: Beyond this lag the loop skips the missed cycles (counted) instead of sending a burst.
MAX_CATCH_UP_S = 0.05
#: Message ids remembered after expiry, so a late reply is told apart from a stray one.
_EXPIRED_MEMORY = 1024
#: Error sub-codes meaning the session is gone: the link must be rebuilt, not the cycle dropped.
_SESSION_LOST = frozenset(sub_error_code(name) for name in ("INVALID_SESSION", "INVALID_USER_SESSION_ACCESS"))
#: How long the link's thread waits for a datagram between checks while no loop cycles (s).
_IDLE_POLL_S = 0.05
#: Feedback samples waiting for the event loop; past this the oldest are dropped (counted).
FEEDBACK_BACKLOG = 32
#: First cycles of new plans waiting for the event loop (plans change only on commands).
_PLAN_BACKLOG = 256
#: Frames for the connection (RPC replies) waiting for the event loop.
_FRAME_BACKLOG = 256
#: How long closing the link waits for its thread (s).
_JOIN_TIMEOUT_S = 1.0
_MAX_DATAGRAM = 65536
#: How often `CyclicLoop.run` checks that the thread is alive (s).
_THREAD_CHECK_S = 0.1
#: An event loop silent this long (s) can no longer end leases or e-stop: the thread zeroes the
#: wrist's outputs itself (joints still held) until it hears from it again.
EVENT_LOOP_STALL_S = 1.0


class CyclicCodec(Protocol):
    """What one API version sends each cycle and how it reads the answer."""

    @property
    def version(self) -> int:
        """Bumped by every change of what the cycles send (read by `CyclicLoop.next_cycle`)."""

    @property
    def sending(self) -> threading.Lock:
        """Held while a cycle is built and sent, and while a change is published."""

    def cycle(self, frame_id: int, safe: bool = False) -> tuple[int, bytes, int]:
        """(function, payload, version) of cycle `frame_id`; called on the loop's thread.

        `safe`: the event loop has stalled; send the plan with every output at 0.
        """

    def parse(self, payload: bytes) -> Message:
        """The feedback in a reply payload; `ProtocolError` if malformed."""


class Kortex2Codec:
    """Gen3 / Gen3 lite: RefreshFeedback (0x30003), which works in any servoing mode.

    Refresh would need LOW_LEVEL_SERVOING and actuator commands; a Kortex 2 arm has no C61 wrist,
    so the gateway never has anything to send with it.
    """

    version = 0

    def __init__(self) -> None:
        self.sending = threading.Lock()

    def cycle(self, frame_id: int, safe: bool = False) -> tuple[int, bytes, int]:
        """RefreshFeedback takes Common.Empty (and commands nothing, safe or not)."""
        return Function.BASE_CYCLIC_REFRESH_FEEDBACK, b"", 0

    def parse(self, payload: bytes) -> BaseCyclic_pb2.Feedback:
        """A Kortex 2 BaseCyclic.Feedback."""
        return parse_payload(BaseCyclic_pb2.Feedback, payload)


@dataclass(frozen=True, slots=True, eq=False)
class _Plan:
    """What every cycle sends until the next plan; its `command` belongs to the loop's thread."""

    version: int
    low_level: bool
    command: BaseCyclicKortex3_pb2.Command
    #: The same with the wrist's digital and analog outputs at 0 (sent while the event loop stalls).
    safe_command: BaseCyclicKortex3_pb2.Command


class Kortex3Codec:
    """Link 6: RefreshFeedback (0x30003) in single-level servoing; Refresh (0x30001) in low level.

    Like Kinova's ros2_link6 driver (kortex3_hardware_interface_low_level.cpp `write`): Refresh only
    while the arm is in LOW_LEVEL_SERVOING and the gateway commands its actuators; there each
    actuator is held at the position it had when low level began (velocity 0, flags 0, as the
    driver's `sendJointPositionCommands` does), and the Command carries the C61 wrist command.

    `hold`, `release` and `set_wrist` run on the event loop; each publishes a new plan (a copy of
    the event loop's own Command) in one reference swap, which `cycle` on the loop's thread reads
    once per cycle: a cycle never sends half a change, and once `release` returns no cycle built
    before it is sent (so a zeroing is never overtaken by the outputs it replaced).
    """

    def __init__(self) -> None:
        self._command = BaseCyclicKortex3_pb2.Command()
        self._command.wrist.c61.SetInParent()
        self._plan = Latest(_Plan(0, False, self._copy(), self._copy(safe=True)))
        self.sending = threading.Lock()

    @property
    def version(self) -> int:
        """The current plan's number."""
        return self._plan.value.version

    @property
    def low_level(self) -> bool:
        """Whether each cycle is a Refresh commanding the actuators (the arm is in low-level servoing)."""
        return self._plan.value.low_level

    def hold(self, positions: Sequence[float]) -> None:
        """Command every actuator to stay at `positions` (deg, joint 1 first) from the next cycle on."""
        del self._command.actuators[:]
        for position in positions:
            self._command.actuators.add(position=position, velocity=0.0, flags=0)
        self._publish(low_level=True)

    def release(self) -> None:
        """Back to RefreshFeedback from the next cycle on (`refresh_request` still builds the last Refresh)."""
        self._publish(low_level=False)

    def set_wrist(self, command: C61Command) -> None:
        """Send `command` with the next Refresh on."""
        self._command.wrist.c61.CopyFrom(c61_command(command))
        self._publish(self._plan.value.low_level)

    def cycle(self, frame_id: int, safe: bool = False) -> tuple[int, bytes, int]:
        """Refresh with the plan's Command in low level (outputs at 0 if `safe`), else RefreshFeedback."""
        plan = self._plan.value
        if not plan.low_level:
            return Function.BASE_CYCLIC_REFRESH_FEEDBACK, b"", plan.version
        command = plan.safe_command if safe else plan.command
        return Function.BASE_CYCLIC_REFRESH, _stamped(command, frame_id), plan.version

    def refresh_request(self, frame_id: int) -> bytes:
        """Refresh's Command as the event loop last set it (held actuators and wrist), for `frame_id`."""
        return _stamped(self._copy(), frame_id)

    def parse(self, payload: bytes) -> BaseCyclicKortex3_pb2.Feedback:
        """A Kortex 3 BaseCyclic.Feedback."""
        return parse_payload(BaseCyclicKortex3_pb2.Feedback, payload)

    def _copy(self, safe: bool = False) -> BaseCyclicKortex3_pb2.Command:
        command = BaseCyclicKortex3_pb2.Command()
        command.CopyFrom(self._command)
        if safe:
            wrist = command.wrist.c61
            wrist.digital_outputs_state = 0
            wrist.analog_output_a_channel_1_value = wrist.analog_output_a_channel_2_value = 0.0
            wrist.analog_output_b_channel_1_value = wrist.analog_output_b_channel_2_value = 0.0
        return command

    def _publish(self, low_level: bool) -> None:
        plan = _Plan(self._plan.value.version + 1, low_level, self._copy(), self._copy(safe=True))
        # Held only for the swap: a cycle being sent with the old plan finishes first, none follows.
        with self.sending:
            self._plan.put(plan)


def _stamped(command: BaseCyclicKortex3_pb2.Command, frame_id: int) -> bytes:
    """`command` serialized for `frame_id`; command ids are the frame id, as the vendor sets them."""
    command.frame_id = frame_id
    for actuator in command.actuators:
        actuator.command_id.identifier = frame_id
    command.wrist.c61.command_id.identifier = frame_id
    return command.SerializeToString()


@dataclass(slots=True)
class CyclicCounters:
    """Counters since the loop started (see `KortexCyclicStats` for their meaning)."""

    cycles: int = 0
    replies: int = 0
    dropped: int = 0
    late: int = 0
    errors: int = 0
    skipped: int = 0


class _AtomicRouter(Router):
    """A Router whose message ids may be drawn from two threads (the event loop's RPCs and the cycles)."""

    def __init__(self) -> None:
        super().__init__()
        self._ids = itertools.count(1)

    def next_message_id(self) -> int:
        """Pre-incremented and wrapped at 65536 like the vendor's; `next` on a count is atomic."""
        return next(self._ids) & 0xFFFF


class CyclicLink:
    """The UDP 10001 link: one connected socket, read and written by one real-time thread.

    Until a `CyclicLoop` runs on it (and after), the thread only hands every datagram to the
    connection on the event loop; while one runs, it also cycles and keeps the loop's replies.
    """

    def __init__(
        self,
        connection: KortexConnection,
        sock: socket.socket,
        policy: SchedulingPolicy,
        spin_ns: int,
        switch_interval_s: float | None = SWITCH_INTERVAL_S,
    ) -> None:
        self.connection = connection
        self._sock = sock
        loop = asyncio.get_running_loop()
        self._frames: ToLoop[bytes] = ToLoop(loop, connection.frame_received, _FRAME_BACKLOG)
        self._errors: ToLoop[OSError] = ToLoop(loop, connection.transport_error, 16)
        self._cyclic: CyclicLoop | None = None
        self.thread = RealtimeThread(f"{connection.name} cyclic", self._run, policy, spin_ns, switch_interval_s)

    def send(self, frame: bytes) -> None:
        """Send one Frame (from either thread: a datagram goes out whole)."""
        try:
            self._sock.send(check_udp(frame))
        except OSError as error:
            self._errors.post(error)

    def close(self) -> None:
        """Stop the thread (bounded) and close the socket."""
        self._cyclic = None
        if self.thread.stop(_JOIN_TIMEOUT_S):
            self._sock.close()

    def _run(self, thread: RealtimeThread) -> None:
        while not thread.stopping:
            cyclic = self._cyclic
            if cyclic is None:
                if thread.wait_readable(self._sock, _IDLE_POLL_S):
                    self._receive(None)
                continue
            cyclic._tick(thread)

    def _receive(self, cyclic: CyclicLoop | None) -> None:
        """Read every datagram waiting; the cycles' replies go to `cyclic`, the rest to the connection."""
        sock = self._sock
        while True:
            try:
                data = sock.recv(_MAX_DATAGRAM)
            except BlockingIOError:
                return
            except OSError as error:  # e.g. ICMP port unreachable: counted, not fatal
                self._errors.post(error)
                return
            if cyclic is None or not cyclic._take(data):
                self._frames.post(data)


async def open_cyclic_udp(
    connection: KortexConnection,
    host: str,
    port: int,
    policy: SchedulingPolicy = NORMAL,
    spin_ns: int = 100_000,
    switch_interval_s: float | None = SWITCH_INTERVAL_S,
) -> CyclicLink:
    """Connect `connection` to the robot's UDP port (10001) through a `CyclicLink`'s thread."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setblocking(False)
        sock.connect(address)
    except OSError:
        sock.close()
        raise
    # Both threads send requests on this link: ids must come from one atomic counter.
    connection.router = _AtomicRouter()
    link = CyclicLink(connection, sock, policy, spin_ns, switch_interval_s)
    connection.attach(link.send, link.close)
    link.thread.start()
    return link


class CyclicLoop:
    """Runs BaseCyclic at `rate_hz` on `link`'s thread; hands decoded feedback to `on_feedback`.

    `on_feedback` runs on the event loop, for at most one reply per `publish_interval_s` (0: every
    reply); `latest_feedback` always holds the newest reply. Counters are written by the thread
    and read anywhere.
    """

    def __init__(
        self,
        link: CyclicLink,
        codec: CyclicCodec,
        rate_hz: float,
        reply_timeout_s: float,
        on_feedback: Callable[[Message], None],
        publish_interval_s: float = 0.0,
    ) -> None:
        self.link = link
        self.connection = link.connection
        self.codec = codec
        self.period_s = 1.0 / rate_hz
        self.reply_timeout_s = reply_timeout_s
        self.counters = CyclicCounters()
        self.frame_id = 0
        self.latest_feedback: Latest[Message | None] = Latest(None)
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._feedback: ToLoop[Message] = ToLoop(loop, on_feedback, FEEDBACK_BACKLOG)
        self._sent: ToLoop[tuple[int, int]] = ToLoop(loop, self._on_sent, _PLAN_BACKLOG)
        #: (version, frame id) of the first cycle that carried the newest plan sent.
        self._first_of_plan: Latest[tuple[int, int]] = Latest((-1, 0))
        self._last_version = -1
        self._period_ns = round(1e9 / rate_hz)
        self._timeout_ns = round(reply_timeout_s * 1e9)
        # Half a period of tolerance, so a sample every `publish_interval_s` is not aliased to every other.
        self._publish_ns = max(0, round(publish_interval_s * 1e9) - self._period_ns // 2)
        self._last_post_ns = 0
        self._inflight: OrderedDict[int, int] = OrderedDict()
        self._expired: OrderedDict[int, None] = OrderedDict()
        self._periods: list[float] = []
        self._last_send_ns: int | None = None
        self._deadline_ns = 0
        self._waiters: list[tuple[asyncio.Future[int], int]] = []
        self._failure: asyncio.Future[KortexRequestError] = loop.create_future()
        self._failed = False  # the thread's own view of `_failure`
        #: `time.perf_counter_ns` of the event loop's last sign of life (written by `run`).
        self._heartbeat_ns = time.perf_counter_ns()
        self._stall_ns = round(EVENT_LOOP_STALL_S * 1e9)
        self._stalled = False
        #: Cycles sent with the outputs at 0 because the event loop had stalled.
        self.stalled_cycles = 0
        self._first_error_logged = False

    @property
    def feedback_overwritten(self) -> int:
        """Feedback samples dropped because the event loop had not taken them yet."""
        return self._feedback.overwritten

    async def run(self) -> None:
        """Cycle on the link's thread until cancelled; raise when the session is gone or the thread died."""
        link = self.link
        self._deadline_ns = self._heartbeat_ns = time.perf_counter_ns()
        link._cyclic = self
        try:
            while True:
                self._heartbeat_ns = time.perf_counter_ns()
                await asyncio.wait([self._failure], timeout=_THREAD_CHECK_S)
                if self._failure.done():
                    raise self._failure.result()
                if not link.thread.alive:
                    raise LinkLost(f"{self.connection.name}: the cyclic thread ended ({link.thread.error!r})")
        finally:
            if link._cyclic is self:
                link._cyclic = None

    def next_cycle(self) -> asyncio.Future[int]:
        """A future of the frame id of the first request that carries the current command."""
        future: asyncio.Future[int] = self._loop.create_future()
        wanted = self.codec.version
        # The thread records the first cycle of a plan, then posts it: if it is not recorded yet,
        # its post reaches `_on_sent` after this waiter is registered.
        version, frame_id = self._first_of_plan.value
        if version >= wanted:
            future.set_result(frame_id)  # the thread sent it already
        else:
            self._waiters.append((future, wanted))
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

    # -- on the link's thread ----------------------------------------------------------------------

    def _tick(self, thread: RealtimeThread) -> None:
        """Send the cycles due, read the replies, expire the old requests, sleep to the next deadline."""
        period = self._period_ns
        now = time.perf_counter_ns()
        behind = now - self._deadline_ns
        if behind > MAX_CATCH_UP_S * 1e9:
            missed = behind // period
            self.counters.skipped += missed
            self._deadline_ns += missed * period
        while self._deadline_ns <= now and not self._failed:
            self._cycle(now)
            self._deadline_ns += period
        self.link._receive(self)
        self._expire(time.perf_counter_ns())
        thread.wait(self._deadline_ns)

    def _cycle(self, now: int) -> None:
        self.frame_id = frame_id = (self.frame_id + 1) & 0xFFFF
        stalled = now - self._heartbeat_ns > self._stall_ns
        if stalled != self._stalled:
            self._stalled = stalled
            if stalled:
                log.warning(
                    "%s: the event loop has not run for %.1f s: wrist outputs to 0 from the cyclic thread",
                    self.connection.name,
                    (now - self._heartbeat_ns) / 1e9,
                )
            else:
                log.warning("%s: the event loop runs again: the commanded outputs resume", self.connection.name)
        # Under the codec's lock: once a change is published, no cycle built before it is sent.
        with self.codec.sending:
            function, payload, version = self.codec.cycle(frame_id, stalled)
            try:
                message_id = self.connection.send_request(function, payload)
            except ConnectionError:
                return  # the link is gone: the adapter's watchdog sees its failure
        self._inflight[message_id] = now
        self.counters.cycles += 1
        if stalled:
            self.stalled_cycles += 1
        if self._last_send_ns is not None:
            self._periods.append((now - self._last_send_ns) / 1e9)
        self._last_send_ns = now
        if version != self._last_version:
            # Recorded, then posted: `next_cycle` finds it in one or the other (a handful a second at most).
            self._last_version = version
            self._first_of_plan.put((version, frame_id))
            self._sent.post((frame_id, version))

    def _expire(self, now: int) -> None:
        inflight = self._inflight
        limit = now - self._timeout_ns
        while inflight:
            message_id, sent_at = next(iter(inflight.items()))
            if sent_at > limit:
                return
            del inflight[message_id]
            self.counters.dropped += 1
            self._expired[message_id] = None
            if len(self._expired) > _EXPIRED_MEMORY:
                self._expired.popitem(last=False)

    def _take(self, data: bytes) -> bool:
        """Handle `data` if it answers one of the cycles (True); anything else is the connection's."""
        try:
            event = self.connection.router.receive(data)
        except ProtocolError:
            return False  # the connection counts it
        if not isinstance(event, Response | ErrorResponse):
            return False
        if self._inflight.pop(event.message_id, None) is None:
            if event.message_id not in self._expired:
                return False
            del self._expired[event.message_id]
            self.counters.late += 1
            self.connection.last_received = time.monotonic()
            return True
        self.connection.last_received = time.monotonic()
        if isinstance(event, ErrorResponse):
            self.counters.errors += 1
            if event.error.sub_code in _SESSION_LOST:
                self._fail(KortexRequestError("BaseCyclic", event.error))
            elif not self._first_error_logged:
                self._first_error_logged = True
                log.warning("%s: BaseCyclic refused (counted from now on): %s", self.connection.name, event.error)
            return True
        try:
            feedback = self.codec.parse(event.frame.payload)
        except ProtocolError as error:
            self.counters.errors += 1
            log.debug("%s: undecodable BaseCyclic feedback: %s", self.connection.name, error)
            return True
        self.counters.replies += 1
        self.latest_feedback.put(feedback)
        now = time.perf_counter_ns()
        if now - self._last_post_ns >= self._publish_ns:
            self._last_post_ns = now
            self._feedback.post(feedback)
        return True

    def _fail(self, error: KortexRequestError) -> None:
        self._failed = True  # no more cycles on a session that is gone

        def fail() -> None:
            if not self._failure.done():
                self._failure.set_result(error)

        self._loop.call_soon_threadsafe(fail)

    # -- on the event loop -------------------------------------------------------------------------

    def _on_sent(self, sent: tuple[int, int]) -> None:
        frame_id, version = sent
        waiting = []
        for future, wanted in self._waiters:
            if future.done():
                continue
            if version >= wanted:
                future.set_result(frame_id)
            else:
                waiting.append((future, wanted))
        self._waiters = waiting
