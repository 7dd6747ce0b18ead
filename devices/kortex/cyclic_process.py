"""The Kortex BaseCyclic loop in a process of its own: `python -m devices.kortex.cyclic_process FD PPID`.

Why a process: in the gateway's process the loop shares the interpreter lock with the event loop
that serves the clients, and every garbage collection there stops every thread for 1-45 ms. Here
nothing else runs: the loop owns the UDP socket to port 10001, sends one request per period on an
absolute deadline (`gateway.realtime.Pacer`: sleep, then a short spin), reads the replies right
after each send, and never blocks on the gateway. Its garbage collector is off (the loop creates
no reference cycles; what it allocates is freed by reference counting).

With the gateway it speaks `cyclic_wire` over the SOCK_SEQPACKET descriptor FD, both ends
non-blocking: each reply's payload goes up as it comes (at most one per `publish_interval_s`).
The socket's send buffer holds a few hundred packets (`_SEND_BUFFER`): once the gateway has
left it full, the newest feedback waits in a one-packet slot, sent at the next cycle that finds
room, and each one it replaces is counted (`feedback_dropped`), never queued. Packets the gateway
must get (plan sent, answered, failed, logs, counters) go first.
Each cycle it reads every packet the gateway sent and keeps the last plan.

Safety, whatever happens to the gateway:

- it dies with it: PR_SET_PDEATHSIG sends it SIGTERM when the gateway's thread that started it
  ends, and a closed socket (EOF) means the same;
- a gateway that has sent nothing for `stall_s` (1 s: a heartbeat comes every 0.1 s) can no longer
  end leases or e-stop: the cycles carry the wrist's outputs at 0 until it is heard from again;
- the last Refresh of low level (a `once` plan, the outputs at 0) goes out again each time the one
  before got no answer within the reply timeout, until the arm answers one (late answers count): a
  request the arm lost or handles late (a loaded host) does not leave the outputs on;
- on STOP, SIGTERM or the gateway's end it sends one Refresh with the outputs at 0 if it was in
  low-level servoing or that last Refresh is still unanswered, then CloseSession, and exits within
  `SHUTDOWN_BUDGET_S`. SIGINT and SIGHUP are ignored: Ctrl-C and a closed terminal reach the
  gateway too (the whole process group gets them), which stops it in order, after the e-stop has
  reached the arm through this loop.

Counting is as before: a request unanswered after the reply timeout is a dropped cycle, counted
and forgotten (spec kortex.md §5); a late wake-up sends the cycles that fell due back to back,
beyond `MAX_CATCH_UP_S` they are skipped (counted); an INVALID_SESSION answer, or silence from
the arm for `link_timeout_s`, ends the process with FAILED.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import logging
import os
import select
import signal
import socket
import sys
import time
from array import array
from collections import OrderedDict, deque
from typing import Any

from devices.kortex import cyclic_wire as wire
from gateway.realtime import Pacer, SchedulingPolicy, apply_policy
from protocols.errors import ProtocolError
from protocols.kortex.errors import sub_error_code
from protocols.kortex.framing import check_udp
from protocols.kortex.generated import BaseCyclicKortex3_pb2, Session_pb2
from protocols.kortex.router import ErrorResponse, Ping, Response, Router
from protocols.kortex.services import Function

#: Beyond this lag the loop skips the missed cycles (counted) instead of sending a burst.
MAX_CATCH_UP_S = 0.05
#: KeepAlive after this much time without a request (the vendor's SessionManager's 150 ms).
KEEPALIVE_IDLE_S = 0.150
#: How often the counters and send periods go to the gateway (s).
STATS_INTERVAL_S = 0.25
#: The last Refresh and CloseSession at the end, together (s): inside the gateway's stop budget.
SHUTDOWN_BUDGET_S = 1.0
#: Message ids remembered after expiry, so a late reply is told apart from a stray one.
_EXPIRED_MEMORY = 1024
#: Error sub-codes meaning the session is gone.
_SESSION_LOST = frozenset(sub_error_code(name) for name in ("INVALID_SESSION", "INVALID_USER_SESSION_ACCESS"))
_MAX_DATAGRAM = 65536
#: Socket buffer toward the gateway (bytes): a few hundred feedbacks, then drops.
_SEND_BUFFER = 256 * 1024
_PR_SET_PDEATHSIG = 1
#: Log lines waiting for a gateway that does not read; older ones are dropped.
_LOG_BACKLOG = 16


class LinkFailed(Exception):
    """The UDP link cannot go on (refused or lost session, a silent arm)."""


class CyclicChild:
    """The loop: one `CyclicChild` per UDP session, `run` until stopped or failed."""

    def __init__(self, control: socket.socket, config: wire.ChildConfig) -> None:
        self.control = control
        self.config = config
        self.pacer = Pacer(config.spin_ns)
        self.pacer.watch(control)  # below ~500 Hz a period is long enough to sleep in poll()
        self.router = Router()
        self.stats = wire.ChildStats()
        self.plan = wire.Plan(0)
        self._plan_command: BaseCyclicKortex3_pb2.Command | None = None
        self._safe_command: BaseCyclicKortex3_pb2.Command | None = None
        self._last_version = -1
        #: A `once` plan's Refresh goes out again while none is in flight, until the arm answers one (a
        #: request lost or handled late must not leave the outputs it zeroes on): their message ids, and
        #: whether one was answered.
        self._once_ids: set[int] = set()
        self._once_version = -1
        self._once_answered = False
        self.frame_id = 0
        self._period_ns = round(1e9 / config.rate_hz)
        self._timeout_ns = round(config.reply_timeout_s * 1e9)
        self._publish_ns = max(0, round(config.publish_interval_s * 1e9) - self._period_ns // 2)
        self._stall_ns = round(config.stall_s * 1e9)
        self._silence_ns = round(config.link_timeout_s * 1e9)
        self._inflight: OrderedDict[int, int] = OrderedDict()
        self._expired: OrderedDict[int, None] = OrderedDict()
        self._periods = array("q")
        self._last_send_ns: int | None = None
        self._last_request_ns = time.perf_counter_ns()
        self._last_post_ns = 0
        self._deadline_ns = 0
        self._heard_ns = time.perf_counter_ns()  # the gateway's last packet
        self._received_ns = time.perf_counter_ns()  # the arm's last frame
        self._stalled = False
        self._parent_gone = False
        #: Why the loop ends, in words (for CLOSED).
        self.stop_reason = "asked to stop"
        self._reliable: deque[bytes] = deque()
        self._stats_packet: bytes | None = None
        #: The newest feedback, while the socket toward the gateway is full.
        self._feedback: bytes | None = None
        self._logs: deque[bytes] = deque(maxlen=_LOG_BACKLOG)
        self._next_stats_ns = 0
        self.sock: socket.socket | None = None

    # -- the gateway side --------------------------------------------------------------------------

    def log(self, level: str, text: str, prefix: bool = True) -> None:
        """A line for the gateway's log (dropped, oldest first, while it does not read)."""
        self._logs.append(wire.pack(wire.LOG, level, f"{self.config.name}: {text}" if prefix else text))
        self._flush()

    def _tell(self, packet: bytes) -> None:
        """A packet the gateway must get (session, plan sent, answered, failed): kept until sent."""
        self._reliable.append(packet)
        self._flush()

    def _flush(self) -> bool:
        """Send what waits, in order; True if nothing is left."""
        control = self.control
        for queue in (self._reliable, self._logs):
            while queue:
                try:
                    control.send(queue[0])
                except BlockingIOError:
                    return False
                except OSError:
                    self._gone()
                    queue.clear()
                    return False
                queue.popleft()
        for slot in ("_stats_packet", "_feedback"):
            packet = getattr(self, slot)
            if packet is None:
                continue
            try:
                control.send(packet)
            except BlockingIOError:
                return False
            except OSError:
                self._gone()
            setattr(self, slot, None)
        return True

    def _gone(self) -> None:
        """The gateway closed its end: stop, nobody is left to hear from."""
        self._parent_gone = True
        self.pacer.stop()

    def _read_control(self, now: int) -> None:
        """Every packet the gateway sent: the last plan wins; EOF or STOP end the loop."""
        control = self.control
        plan: wire.Plan | None = None
        while True:
            try:
                packet = control.recv(_MAX_DATAGRAM)
            except BlockingIOError:
                break
            except OSError:
                packet = b""
            if not packet:  # the gateway is gone
                self.stop_reason = "the gateway closed its end"
                self._gone()
                break
            self._heard_ns = now
            tag = packet[:1]
            if tag == wire.PLAN:
                plan = wire.unpack_plan(wire.unpack(packet)[1])
            elif tag == wire.STOP:
                self.pacer.stop()
        if plan is not None:
            self._set_plan(plan)

    def _set_plan(self, plan: wire.Plan) -> None:
        self.plan = plan
        if plan.low_level or plan.once:
            command = BaseCyclicKortex3_pb2.Command.FromString(plan.command)
            safe = BaseCyclicKortex3_pb2.Command()
            safe.CopyFrom(command)
            c61 = safe.wrist.c61
            c61.digital_outputs_state = 0
            c61.analog_output_a_channel_1_value = c61.analog_output_a_channel_2_value = 0.0
            c61.analog_output_b_channel_1_value = c61.analog_output_b_channel_2_value = 0.0
            self._plan_command, self._safe_command = command, safe
        else:
            self._plan_command = self._safe_command = None

    # -- the arm side ------------------------------------------------------------------------------

    def connect(self) -> None:
        """Open the UDP socket and create the session (blocking, within `rpc_timeout_s`)."""
        config = self.config
        try:
            infos = socket.getaddrinfo(config.host, config.port, type=socket.SOCK_DGRAM)
            family, kind, proto, _, address = infos[0]
            sock = socket.socket(family, kind, proto)
            sock.connect(address)
        except OSError as error:
            raise LinkFailed(f"robot unreachable at {config.host}:{config.port} (UDP): {error}") from None
        sock.setblocking(False)
        self.sock = sock
        info = Session_pb2.CreateSessionInfo(
            username=config.username,
            password=config.password,
            session_inactivity_timeout=config.session_inactivity_timeout_ms,
            connection_inactivity_timeout=config.connection_inactivity_timeout_ms,
        )
        self.router.reset()
        event = self._call(Function.SESSION_CREATE_SESSION, info.SerializeToString(), config.rpc_timeout_s)
        if event is None:
            raise LinkFailed(
                f"robot unreachable: no reply to CreateSession within {config.rpc_timeout_s * 1000:.0f} ms"
            )
        if isinstance(event, ErrorResponse):
            raise LinkFailed(f"robot unreachable: UDP session refused: robot refused CreateSession: {event.error}")
        if not self.router.session_id:
            raise LinkFailed("CreateSession was answered without a session id")

    def _send(self, function_uid: int, payload: bytes = b"") -> int:
        assert self.sock is not None
        message_id, data = self.router.request(function_uid, payload)
        self._last_request_ns = time.perf_counter_ns()
        try:
            self.sock.send(check_udp(data))
        except OSError as error:  # e.g. ICMP port unreachable: the cycle is dropped, not fatal
            self.stats.errors += 1
            if not isinstance(error, BlockingIOError | ConnectionRefusedError):
                raise LinkFailed(f"UDP send failed: {error}") from None
        return message_id

    def _call(self, function_uid: int, payload: bytes, timeout_s: float) -> Response | ErrorResponse | None:
        """Send a request and wait (blocking) for its answer; None on timeout. Other frames are handled."""
        assert self.sock is not None
        message_id = self._send(function_uid, payload)
        end = time.monotonic() + timeout_s
        poller = select.poll()
        poller.register(self.sock, select.POLLIN)
        while (remaining := end - time.monotonic()) > 0:
            if not poller.poll(remaining * 1000):
                continue
            for event in self._datagrams():
                if isinstance(event, Response | ErrorResponse) and event.message_id == message_id:
                    return event
                if isinstance(event, Response | ErrorResponse):
                    self._reply(event)
        return None

    def _datagrams(self) -> list[Response | ErrorResponse]:
        """Read every datagram waiting; answer pings; return the responses."""
        assert self.sock is not None
        sock = self.sock
        events: list[Response | ErrorResponse] = []
        while True:
            try:
                data = sock.recv(_MAX_DATAGRAM)
            except BlockingIOError:
                return events
            except OSError:  # e.g. ICMP port unreachable: counted, not fatal
                self.stats.errors += 1
                return events
            try:
                event = self.router.receive(data)
            except ProtocolError:
                self.stats.errors += 1
                continue
            self._received_ns = time.perf_counter_ns()
            if isinstance(event, Response | ErrorResponse):
                events.append(event)
            elif isinstance(event, Ping):
                with contextlib.suppress(OSError):
                    sock.send(event.reply)

    def _reply(self, event: Response | ErrorResponse) -> None:
        """A reply during the loop: a cycle's, a late one, or something else (KeepAlive's: ignored)."""
        message_id = event.message_id
        if message_id in self._once_ids:
            # Answered even late: the gateway waits for it (up to its own timeout) before leaving low level.
            self._once_ids.clear()
            self._once_answered = True
            error = str(event.error) if isinstance(event, ErrorResponse) else None
            self._tell(wire.pack(wire.ANSWERED, self._once_version, error))
        if self._inflight.pop(message_id, None) is None:
            if message_id in self._expired:
                del self._expired[message_id]
                self.stats.late += 1
            return
        if isinstance(event, ErrorResponse):
            self.stats.errors += 1
            if event.error.sub_code in _SESSION_LOST:
                raise LinkFailed(f"robot refused BaseCyclic: {event.error}")
            if self.stats.errors == 1:
                self.log("warning", f"BaseCyclic refused (counted from now on): {event.error}")
            return
        self.stats.replies += 1
        now = time.perf_counter_ns()
        if now - self._last_post_ns >= self._publish_ns:
            self._last_post_ns = now
            if self._feedback is not None:
                self.stats.feedback_dropped += 1  # the gateway has not read the older ones: newest wins
            self._feedback = wire.FEEDBACK + event.frame.payload
            self._flush()

    # -- the loop ----------------------------------------------------------------------------------

    def run(self) -> None:
        """Cycle until stopped (STOP, SIGTERM, the gateway gone); `LinkFailed` when the link fails."""
        self._deadline_ns = self._heard_ns = self._next_stats_ns = time.perf_counter_ns()
        pacer = self.pacer
        while not pacer.stopping:
            self._tick()
        self._send_stats()

    def _tick(self) -> None:
        now = time.perf_counter_ns()
        self._read_control(now)
        if self.pacer.stopping:
            return
        period = self._period_ns
        behind = now - self._deadline_ns
        if behind > MAX_CATCH_UP_S * 1e9:
            missed = behind // period
            self.stats.skipped += missed
            self._deadline_ns += missed * period
        while self._deadline_ns <= now:
            self._cycle(now)
            self._deadline_ns += period
        for event in self._datagrams():
            self._reply(event)
        now = time.perf_counter_ns()
        self._expire(now)
        if now - self._received_ns > self._silence_ns:
            raise LinkFailed(f"nothing from the robot for {self.config.link_timeout_s:g} s")
        if now - self._last_request_ns > KEEPALIVE_IDLE_S * 1e9:
            self._send(Function.SESSION_KEEP_ALIVE)  # only below ~7 Hz: every cycle is a request
        if now >= self._next_stats_ns:
            self._next_stats_ns = now + round(STATS_INTERVAL_S * 1e9)
            self._send_stats()
        if self._reliable or self._logs or self._stats_packet is not None or self._feedback is not None:
            self._flush()
        self.pacer.wait(self._deadline_ns)

    def _cycle(self, now: int) -> None:
        self.frame_id = frame_id = (self.frame_id + 1) & 0xFFFF
        stalled = now - self._heard_ns > self._stall_ns
        if stalled != self._stalled:
            self._stalled = stalled
            if stalled:
                self.log(
                    "warning",
                    f"the gateway has not been heard for {(now - self._heard_ns) / 1e9:.1f} s: "
                    "wrist outputs to 0 from the cyclic process",
                )
            else:
                self.log("warning", "the gateway is heard again: the commanded outputs resume")
        plan = self.plan
        if plan.once and plan.version != self._once_version:
            self._once_version = plan.version
            self._once_ids.clear()
            self._once_answered = False
        if plan.once and not self._once_answered and self._once_ids.isdisjoint(self._inflight):
            assert self._plan_command is not None
            message_id = self._send(Function.BASE_CYCLIC_REFRESH, _stamped(self._plan_command, frame_id))
            self._once_ids.add(message_id)
        elif plan.low_level:
            command = self._safe_command if stalled else self._plan_command
            assert command is not None
            message_id = self._send(Function.BASE_CYCLIC_REFRESH, _stamped(command, frame_id))
            if stalled:
                self.stats.stalled_cycles += 1
        else:
            message_id = self._send(Function.BASE_CYCLIC_REFRESH_FEEDBACK)
        self._inflight[message_id] = now
        self.stats.cycles += 1
        if self._last_send_ns is not None:
            self._periods.append(now - self._last_send_ns)
        self._last_send_ns = now
        if plan.version != self._last_version:
            self._last_version = plan.version
            self._tell(wire.pack(wire.SENT, plan.version, frame_id))

    def _expire(self, now: int) -> None:
        inflight = self._inflight
        limit = now - self._timeout_ns
        while inflight:
            message_id, sent_at = next(iter(inflight.items()))
            if sent_at > limit:
                return
            del inflight[message_id]
            self.stats.dropped += 1
            self._expired[message_id] = None
            if len(self._expired) > _EXPIRED_MEMORY:
                self._expired.popitem(last=False)

    def _send_stats(self) -> None:
        self.stats.periods = self._periods.tobytes()
        self.stats.inflight = len(self._inflight)
        self._periods = array("q")
        # Only the newest waits: a gateway that does not read gets the counters, not every window.
        self._stats_packet = wire.pack_stats(self.stats)
        self._flush()

    # -- the end -----------------------------------------------------------------------------------

    def close_session(self) -> None:
        """The safe command (in low level, or low level's last Refresh unanswered), then CloseSession.

        Both within `SHUTDOWN_BUDGET_S`.
        """
        if self.sock is None or not self.router.session_id:
            return
        end = time.monotonic() + SHUTDOWN_BUDGET_S
        unanswered = self.plan.once and not self._once_answered
        if (self.plan.low_level or unanswered) and self._safe_command is not None:
            self.frame_id = (self.frame_id + 1) & 0xFFFF
            event = self._call(Function.BASE_CYCLIC_REFRESH, _stamped(self._safe_command, self.frame_id), 0.4)
            self.log("info", "outputs at 0 in a last Refresh" + ("" if event is not None else " (unanswered)"))
        event = self._call(Function.SESSION_CLOSE_SESSION, b"", max(0.05, end - time.monotonic()))
        if event is None or isinstance(event, ErrorResponse):
            self.log("info", f"CloseSession failed: {'no reply' if event is None else event.error}")


def _stamped(command: BaseCyclicKortex3_pb2.Command, frame_id: int) -> bytes:
    """`command` serialized for `frame_id`; command ids are the frame id, as the vendor sets them."""
    command.frame_id = frame_id
    for actuator in command.actuators:
        actuator.command_id.identifier = frame_id
    command.wrist.c61.command_id.identifier = frame_id
    return command.SerializeToString()


class _ToGateway(logging.Handler):
    """Log records of this process (gateway.realtime's SCHED_FIFO refusal) as lines of the gateway's log."""

    def __init__(self, child: CyclicChild) -> None:
        super().__init__(logging.INFO)
        self._child = child

    def emit(self, record: logging.LogRecord) -> None:
        """Hand the record's text to the gateway."""
        self._child.log(record.levelname.lower(), record.getMessage(), prefix=False)


def _terminated(child: CyclicChild) -> None:
    child.stop_reason = "SIGTERM"
    child.pacer.stop()


def _die_with_parent(parent_pid: int) -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent_pid:  # it died before the prctl
        sys.exit(0)


def _read_config(control: socket.socket) -> wire.ChildConfig:
    control.settimeout(10.0)
    packet = control.recv(_MAX_DATAGRAM)
    control.setblocking(False)
    if not packet:
        sys.exit(0)
    tag, fields = wire.unpack(packet)
    if tag != wire.CONFIG:
        raise ValueError(f"expected the config first, got {tag!r}")
    return wire.unpack_config(fields)


def main(argv: list[str] | None = None) -> int:
    """Run the loop on descriptor argv[0] for the gateway of pid argv[1]; the exit status."""
    args = sys.argv[1:] if argv is None else argv
    fd, parent_pid = int(args[0]), int(args[1])
    _die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    control = socket.socket(fileno=fd)
    control.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _SEND_BUFFER)
    config = _read_config(control)
    child = CyclicChild(control, config)
    signal.signal(signal.SIGTERM, lambda signum, frame: _terminated(child))
    logging.basicConfig(level=logging.INFO, handlers=[_ToGateway(child)])
    scheduling = apply_policy(SchedulingPolicy(config.priority, config.cpus), config.name)
    # Everything loaded: nothing of it is garbage, and the loop makes no reference cycles.
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        child.connect()
        child._tell(wire.pack(wire.SESSION, child.router.session_id, scheduling))
        child.run()
        child.close_session()
        child._tell(wire.pack(wire.CLOSED, child.stop_reason))
    except LinkFailed as error:
        child._tell(wire.pack(wire.FAILED, str(error)))
    _flush_before_exit(child)
    return 0


def _flush_before_exit(child: CyclicChild) -> None:
    """The last packets, waiting up to 0.2 s for a gateway that still reads."""
    end = time.monotonic() + 0.2
    while not child._flush() and not child._parent_gone and time.monotonic() < end:
        time.sleep(0.005)


def _entry() -> Any:
    sys.exit(main())


if __name__ == "__main__":
    _entry()
