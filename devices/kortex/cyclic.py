"""The BaseCyclic loop on the UDP link, run by a process of its own; what each cycle sends.

The loop itself is devices/kortex/cyclic_process.py, started here by `CyclicProcess.start`
(`python -m devices.kortex.cyclic_process`, a fresh interpreter: never a fork of the gateway). It
owns the UDP socket and the UDP session, cycles on absolute deadlines, and talks to the gateway
over a non-blocking SOCK_SEQPACKET socketpair (`cyclic_wire`): the event loop reads feedback with
`add_reader` and hands it to the adapter; commands go down as whole plans, the latest winning.
Neither side ever waits for the other: client work and garbage collections in the gateway cannot
move a cycle, and a gateway that falls behind loses feedback samples (counted), not cycles.

A codec turns the adapter's wishes into plans (`cyclic_wire.Plan`): Kortex 2 always reads with
RefreshFeedback; Kortex 3 switches to Refresh in low-level servoing, where each cycle holds the
actuators and carries the C61 wrist command.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import statistics
import sys
from array import array
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from google.protobuf.message import Message

from devices.kortex import cyclic_wire as wire
from devices.kortex.convert import c61_command
from devices.kortex.errors import LinkLost
from gateway.messages.kortex import Command as C61Command
from gateway.messages.kortex import KortexCyclicStats
from protocols.errors import ProtocolError
from protocols.kortex.frame import parse_payload
from protocols.kortex.generated import BaseCyclic_pb2, BaseCyclicKortex3_pb2

log = logging.getLogger(__name__)

#: The cyclic process's module, run with `python -m`.
CHILD_MODULE = "devices.kortex.cyclic_process"
#: A gateway silent this long (s) can no longer end leases or e-stop: the cyclic process zeroes the
#: wrist's outputs itself (joints still held) until it hears from it again.
EVENT_LOOP_STALL_S = 1.0
#: Starting the interpreter and importing protobuf, on a loaded machine (s), before the session's RPC timeout.
START_BUDGET_S = 10.0
#: How long `CyclicProcess.close` waits for the process to end (s) before killing it: its own budget
#: (a last Refresh and CloseSession, 1 s) and some.
STOP_TIMEOUT_S = 1.5
#: Feedback samples handed to the adapter per readable event; older waiting ones are dropped (counted).
FEEDBACK_BACKLOG = 32
_MAX_PACKET = 1 << 20
#: The socket buffer the gateway reads from (bytes).
_RECEIVE_BUFFER = 256 * 1024
_LOG_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


class CyclicCodec(Protocol):
    """What one API version sends each cycle, and how it reads the answer."""

    #: Called with every new plan (set by `CyclicProcess`).
    on_plan: Callable[[wire.Plan], None] | None

    @property
    def plan(self) -> wire.Plan:
        """What the cycles send now."""

    @property
    def version(self) -> int:
        """Bumped by every change of what the cycles send (read by `CyclicProcess.next_cycle`)."""

    def parse(self, payload: bytes) -> Message:
        """The feedback in a reply payload; `ProtocolError` if malformed."""


class Kortex2Codec:
    """Gen3 / Gen3 lite: RefreshFeedback (0x30003), which works in any servoing mode.

    Refresh would need LOW_LEVEL_SERVOING and actuator commands; a Kortex 2 arm has no C61 wrist,
    so the gateway never has anything to send with it.
    """

    version = 0
    plan = wire.Plan(0)

    def __init__(self) -> None:
        self.on_plan: Callable[[wire.Plan], None] | None = None

    def parse(self, payload: bytes) -> BaseCyclic_pb2.Feedback:
        """A Kortex 2 BaseCyclic.Feedback."""
        return parse_payload(BaseCyclic_pb2.Feedback, payload)


class Kortex3Codec:
    """Link 6: RefreshFeedback (0x30003) in single-level servoing; Refresh (0x30001) in low level.

    Like Kinova's ros2_link6 driver (kortex3_hardware_interface_low_level.cpp `write`): Refresh only
    while the arm is in LOW_LEVEL_SERVOING and the gateway commands its actuators; there each
    actuator is held at the position it had when low level began (velocity 0, flags 0, as the
    driver's `sendJointPositionCommands` does), and the Command carries the C61 wrist command.

    `hold`, `release` and `set_wrist` each make a new plan, a whole serialized Command, handed to
    `on_plan` at once: the cyclic process applies plans in order and sends each whole, so a
    zeroing is never overtaken by the outputs it replaced.
    """

    def __init__(self) -> None:
        self._command = BaseCyclicKortex3_pb2.Command()
        self._command.wrist.c61.SetInParent()
        self._plan = wire.Plan(0, command=self._command.SerializeToString())
        self.on_plan: Callable[[wire.Plan], None] | None = None

    @property
    def plan(self) -> wire.Plan:
        """The newest plan."""
        return self._plan

    @property
    def version(self) -> int:
        """The current plan's number."""
        return self._plan.version

    @property
    def low_level(self) -> bool:
        """Whether each cycle is a Refresh commanding the actuators (the arm is in low-level servoing)."""
        return self._plan.low_level

    def hold(self, positions: Sequence[float]) -> None:
        """Command every actuator to stay at `positions` (deg, joint 1 first) from the next cycle on."""
        del self._command.actuators[:]
        for position in positions:
            self._command.actuators.add(position=position, velocity=0.0, flags=0)
        self._publish(low_level=True)

    def release(self) -> None:
        """One more Refresh with the current Command (answered: `CyclicProcess.answered`), then RefreshFeedback."""
        self._publish(low_level=False, once=True)

    def set_wrist(self, command: C61Command) -> None:
        """Send `command` with the next Refresh on."""
        self._command.wrist.c61.CopyFrom(c61_command(command))
        self._publish(self._plan.low_level)

    def parse(self, payload: bytes) -> BaseCyclicKortex3_pb2.Feedback:
        """A Kortex 3 BaseCyclic.Feedback."""
        return parse_payload(BaseCyclicKortex3_pb2.Feedback, payload)

    def _publish(self, low_level: bool, once: bool = False) -> None:
        self._plan = wire.Plan(self._plan.version + 1, low_level, once, self._command.SerializeToString())
        if self.on_plan is not None:
            self.on_plan(self._plan)


class CyclicProcess:
    """The gateway's end of one cyclic process (one UDP session): plans down, feedback and counters up.

    `on_feedback` runs on the event loop with each decoded feedback the process sent (at most one
    per `publish_interval_s`). Use `start`, then `run` until it raises (the link failed or the
    process ended), then `close`.
    """

    def __init__(
        self,
        config: wire.ChildConfig,
        codec: CyclicCodec,
        on_feedback: Callable[[Message], None],
        proc: asyncio.subprocess.Process,
        sock: socket.socket,
    ) -> None:
        self.name = config.name
        self.codec = codec
        self.proc = proc
        self._sock = sock
        self._on_feedback = on_feedback
        self._loop = asyncio.get_running_loop()
        #: The UDP session's id, and the scheduling the process got, in words (once it reported them).
        self.session_id = 0
        self.scheduling = ""
        #: The newest counters from the process.
        self.counters = wire.ChildStats()
        #: Feedback the gateway read but skipped (more than FEEDBACK_BACKLOG waited), and undecodable.
        self.feedback_overwritten = 0
        self.decode_errors = 0
        #: Frame id of the newest cycle the process reported carrying a new plan.
        self.frame_id = 0
        self._periods = array("q")
        self._session: asyncio.Future[None] = self._loop.create_future()
        self._failure: asyncio.Future[LinkLost] = self._loop.create_future()
        self._first_of_plan = (-1, 0)
        self._waiters: list[tuple[asyncio.Future[int], int]] = []
        self._answers: dict[int, asyncio.Future[str | None]] = {}
        self._unsent: bytes | None = None  # the newest plan, when the socket was full
        self._closed = False
        self._reading = False
        self._reporting: asyncio.Task[None] | None = None

    @classmethod
    async def start(
        cls, config: wire.ChildConfig, codec: CyclicCodec, on_feedback: Callable[[Message], None]
    ) -> CyclicProcess:
        """Start the process, send it `config` and the codec's plan, and wait for its UDP session.

        Raises `LinkLost` (its reason: robot unreachable, session refused) when there is none.
        """
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            parent.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _RECEIVE_BUFFER)
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", CHILD_MODULE, str(child.fileno()), str(os.getpid()),
                pass_fds=(child.fileno(),), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
            )  # fmt: skip
        except BaseException:
            parent.close()
            raise
        finally:
            child.close()
        parent.setblocking(False)
        handle = cls(config, codec, on_feedback, proc, parent)
        try:
            parent.send(wire.pack_config(config))
            plan = codec.plan
            # A pending last Refresh belonged to the previous session.
            parent.send(wire.pack_plan(wire.Plan(plan.version, plan.low_level, False, plan.command)))
            codec.on_plan = handle.send_plan
            handle._loop.add_reader(parent.fileno(), handle._readable)
            handle._reading = True
            async with asyncio.timeout(START_BUDGET_S + config.rpc_timeout_s):
                await asyncio.wait(_either(handle._session, handle._failure), return_when=asyncio.FIRST_COMPLETED)
        except TimeoutError:
            await handle.close()
            raise LinkLost(f"{config.name}: the cyclic process did not open the UDP session in time") from None
        except BaseException:
            await handle.close()
            raise
        if handle._failure.done():
            failure = handle._failure.result()
            await handle.close()
            raise failure
        log.info("%s: cyclic process %d, %s", config.name, proc.pid, handle.scheduling)
        return handle

    @property
    def pid(self) -> int:
        """The process's id."""
        return self.proc.pid

    @property
    def failure(self) -> LinkLost | None:
        """Why the loop ended, once it did."""
        return self._failure.result() if self._failure.done() else None

    def send_plan(self, plan: wire.Plan) -> None:
        """Hand `plan` to the process (never blocks: a full socket keeps the newest for when it drains)."""
        self._send(wire.pack_plan(plan))

    async def run(self) -> None:
        """Tell the process every `HEARTBEAT_S` that the event loop runs; raise `LinkLost` when it ends."""
        while True:
            self._send(wire.BEAT)
            await asyncio.wait([self._failure], timeout=wire.HEARTBEAT_S)
            if self._failure.done():
                raise self._failure.result()

    def next_cycle(self) -> asyncio.Future[int]:
        """A future of the frame id of the first request that carries the codec's current plan."""
        future: asyncio.Future[int] = self._loop.create_future()
        wanted = self.codec.version
        version, frame_id = self._first_of_plan
        if version >= wanted:
            future.set_result(frame_id)
        elif self._failure.done():
            future.set_exception(self._failure.result())
        else:
            self._waiters.append((future, wanted))
        return future

    async def answered(self, timeout_s: float) -> None:
        """Wait for the answer to the last Refresh of the codec's current (`once`) plan.

        Raises `LinkLost` if the process ends first, `TimeoutError` after `timeout_s`, and
        `LinkLost` naming the arm's error if it refused it.
        """
        version = self.codec.version
        future = self._answers.setdefault(version, self._loop.create_future())
        async with asyncio.timeout(timeout_s):
            await asyncio.wait(_either(future, self._failure), return_when=asyncio.FIRST_COMPLETED)
        self._answers.pop(version, None)
        if future.done():
            error = future.result()
            if error is not None:
                raise LinkLost(f"{self.name}: the last Refresh was refused: {error}")
            return
        raise self._failure.result()

    def stats(self, api: str) -> KortexCyclicStats:
        """The counters, and the send rate and period percentiles since the previous call."""
        periods, self._periods = self._periods, array("q")
        window_ns = sum(periods)
        p50 = p99 = 0.0
        if len(periods) >= 2:
            cuts = statistics.quantiles(periods, n=100, method="inclusive")
            p50, p99 = cuts[49] / 1e6, cuts[98] / 1e6
        counters = self.counters
        return KortexCyclicStats(
            api=api,
            window_s=window_ns / 1e9,
            rate_hz=len(periods) / (window_ns / 1e9) if window_ns > 0 else 0.0,
            period_p50_ms=p50,
            period_p99_ms=p99,
            cycles=counters.cycles,
            replies=counters.replies,
            dropped=counters.dropped,
            late=counters.late,
            errors=counters.errors + self.decode_errors,
            skipped=counters.skipped,
            feedback_dropped=counters.feedback_dropped + self.feedback_overwritten,
        )

    async def close(self) -> None:
        """Ask the process to stop (a last safe Refresh if in low level, CloseSession); kill it if it lingers."""
        if self._closed:
            return
        self._closed = True
        if self.codec.on_plan == self.send_plan:
            self.codec.on_plan = None
        with contextlib.suppress(OSError):
            self._sock.send(wire.STOP)
        try:
            async with asyncio.timeout(STOP_TIMEOUT_S):
                await self.proc.wait()
        except TimeoutError:
            log.warning("%s: the cyclic process did not stop within %.1f s: killed", self.name, STOP_TIMEOUT_S)
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()
        finally:
            with contextlib.suppress(BaseException):
                self._drain()  # its last words (CloseSession's outcome)
            if self._reading:
                self._loop.remove_reader(self._sock.fileno())
                self._reading = False
            self._sock.close()
            self._fail(LinkLost(f"{self.name}: the cyclic process was stopped"))

    # -- the socket --------------------------------------------------------------------------------

    def _send(self, packet: bytes) -> None:
        if self._closed:
            return
        if self._unsent is not None and packet[:1] == wire.PLAN:
            self._unsent = packet  # the newer plan replaces the waiting one
            return
        try:
            self._sock.send(packet)
        except BlockingIOError:
            if packet[:1] == wire.PLAN:
                self._unsent = packet
                self._loop.add_writer(self._sock.fileno(), self._writable)
        except OSError as error:
            self._ended(f"its socket failed ({error})")

    def _writable(self) -> None:
        packet = self._unsent
        if packet is None or self._closed:
            with contextlib.suppress(Exception):
                self._loop.remove_writer(self._sock.fileno())
            return
        try:
            self._sock.send(packet)
        except BlockingIOError:
            return
        except OSError as error:
            self._ended(f"its socket failed ({error})")
        self._unsent = None
        self._loop.remove_writer(self._sock.fileno())

    def _readable(self) -> None:
        feedback = self._drain()
        for payload in feedback[-FEEDBACK_BACKLOG:]:
            try:
                message = self.codec.parse(payload)
            except ProtocolError as error:
                self.decode_errors += 1
                log.debug("%s: undecodable BaseCyclic feedback: %s", self.name, error)
                continue
            self._on_feedback(message)
        self.feedback_overwritten += max(0, len(feedback) - FEEDBACK_BACKLOG)

    def _drain(self) -> list[bytes]:
        """Read every packet waiting; handle the control ones, return the feedback payloads."""
        feedback: list[bytes] = []
        sock = self._sock
        while True:
            try:
                packet = sock.recv(_MAX_PACKET)
            except BlockingIOError:
                return feedback
            except OSError as error:
                self._ended(f"its socket failed ({error})")
                return feedback
            if not packet:
                self._ended(None)
                return feedback
            if packet[:1] == wire.FEEDBACK:
                feedback.append(packet[1:])
                continue
            try:
                self._control(*wire.unpack(packet))
            except (ValueError, TypeError) as error:  # a bug on one side: say so, keep going
                log.error("%s: bad packet from the cyclic process: %s", self.name, error)

    def _control(self, tag: bytes, fields: list[Any]) -> None:
        if tag == wire.STATS:
            stats = wire.unpack_stats(fields)
            self._periods.frombytes(stats.periods)
            stats.periods = b""
            # In place: whoever holds `counters` sees them move.
            for name in wire.ChildStats.__slots__:
                setattr(self.counters, name, getattr(stats, name))
        elif tag == wire.SENT:
            version, frame_id = (int(field) for field in fields)
            self._first_of_plan = (version, frame_id)
            self.frame_id = frame_id
            waiting = []
            for future, wanted in self._waiters:
                if future.done():
                    continue
                if version >= wanted:
                    future.set_result(frame_id)
                else:
                    waiting.append((future, wanted))
            self._waiters = waiting
        elif tag == wire.ANSWERED:
            version, error = fields
            assert isinstance(version, int)
            answer = self._answers.setdefault(version, self._loop.create_future())
            if not answer.done():
                answer.set_result(None if error is None else str(error))
        elif tag == wire.LOG:
            level, text = fields
            log.log(_LOG_LEVELS.get(str(level), logging.WARNING), "%s", text)
        elif tag == wire.SESSION:
            session_id, scheduling = fields
            self.session_id, self.scheduling = int(session_id), str(scheduling)
            if not self._session.done():
                self._session.set_result(None)
        elif tag == wire.FAILED:
            [reason] = fields
            self._fail(LinkLost(f"{self.name}: {reason}"))
        elif tag == wire.CLOSED:
            [why] = fields
            self._fail(LinkLost(f"{self.name}: the cyclic process closed its session and ended ({why})"))
        else:
            raise ValueError(f"unknown tag {tag!r}")

    def _ended(self, why: str | None) -> None:
        """The process closed its end: it exited (or `why`); report how, once its status is known."""
        if self._reading:
            self._loop.remove_reader(self._sock.fileno())
            self._reading = False
        if self._failure.done() or self._closed:
            return
        self._reporting = self._loop.create_task(self._report_end(why))

    async def _report_end(self, why: str | None) -> None:
        try:
            async with asyncio.timeout(1.0):
                code = await self.proc.wait()
        except TimeoutError:
            code = None
        if code is None:
            how = why or "it closed its socket"
        elif code < 0:
            how = f"killed by signal {signal.Signals(-code).name}"
        else:
            how = f"exit status {code}"
        self._fail(LinkLost(f"{self.name}: the cyclic process ended unexpectedly ({how})"))

    def _fail(self, error: LinkLost) -> None:
        if not self._failure.done():
            self._failure.set_result(error)
        for future, _ in self._waiters:
            if not future.done():
                future.set_exception(error)
        self._waiters = []


def _either(*futures: asyncio.Future[Any]) -> list[asyncio.Future[Any]]:
    """`futures` as one list for `asyncio.wait`, whatever their result types."""
    return list(futures)
