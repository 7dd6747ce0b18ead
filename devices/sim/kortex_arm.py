"""A simulated Kinova arm that speaks the Kortex wire protocol on loopback TCP and UDP, and Link 6's MQTT.

Built from the spec's facts (the shared notes' specs/kortex.md) and Kinova's public code, not from
the gateway's adapter, and checked against the spec's golden hex vectors in tests/test_kortex_sim.py. It implements:

- the TCP splitter (magic + big-endian length) and bare UDP datagrams;
- with `mqtt` (a broker's address): Kortex 3's MQTT path as Link 6 clients use it, through that
  broker (protocols/kortex/mqtt.py: requests on `req/...`, answered on their MQTT 5 Response
  Topic, one session per response topic, notifications on `notif/...`, `ping_mqtt_sessions` and
  pongs, and the `sessions/killed` will closing a vanished client's sessions); messages whose topic
  and frame disagree are answered with an error frame (or dropped when they hold no header), and
  the arm reconnects to a broker that went away;
- Session: CreateSession (credentials checked, the id returned in the response header, one session
  per TCP connection or UDP peer), KeepAlive, CloseSession, GetConnections, and the session
  inactivity timeout;
- BaseCyclic: RefreshFeedback in any servoing mode; Refresh only in LOW_LEVEL_SERVOING, refused
  with WRONG_SERVOING_MODE otherwise (Gen3, Kinova-kortex2_Gen3_G3L issue 106; on Kortex 3 this is
  an assumption: Kinova's ros2_link6 driver never sends Refresh outside low level), where the
  actuators go to the commanded positions; Kortex 2 RefreshCustomData; RefreshCommand refused as
  Gen3 firmware 2.3 does; Kortex 3's Refresh carries the C61 wrist command; a moving arm and a wrist
  whose inputs are wired to its outputs;
- Base: ArmStateTopic notifications (Kortex 2 layout, or Kortex 3's with the timestamp inside
  generic_info), Unsubscribe, SetServoingMode, and 0x20091: ApplyEmergencyStop on Kortex 2 (the arm
  goes IN_FAULT), ApplyQuickStop on Kortex 3 (counted; what a real Link 6 then reports is not in the
  public code); Kortex 3 feedback's is_emergency_stop_activated follows `press_emergency_stop`;
- Kortex 3 operating modes: SelectOperatingMode and GetCurrentOperatingMode (feedback field 41 shows
  the mode); the arm starts in MONITORED_STOP, where ros2_link6's drivers leave it at start-up and
  shutdown [L]. With `requires_hold_to_run` (the default) it models the firmware of Kinova's Link 6
  low-level example (Kinova-Kortex3-Link6 api_cpp/300-Low_Level/01-low_level_cyclic_control/main.cpp:
  HOLD_TO_RUN is "required on some firmware versions before entering LOW_LEVEL_SERVOING"):
  SetServoingMode(LOW_LEVEL_SERVOING) in any other operating mode is refused with WRONG_MODE (which
  error a real arm sends is not public [L]);
- error frames: INVALID_SESSION, UNSUPPORTED_SERVICE / UNSUPPORTED_METHOD, PAYLOAD_DECODING_ERR,
  USER_NOT_FOUND / INVALID_PASSWORD, WRONG_SERVOING_MODE. Which major error code a real robot pairs
  with each sub-code is not in the notes; this arm uses ERROR_PROTOCOL_SERVER for protocol faults and
  ERROR_DEVICE for refusals by the arm [L];
- fault injection (`ArmFaults`): lose or delay a share of BaseCyclic replies on UDP, act on every
  BaseCyclic request late (a loaded arm or host: a TCP request sent after it may be handled first), refuse sessions
  (with an error or silently), answer successes with error code 0 and a non-zero sub-code (which
  Kinova's client takes as success), and `close_tcp_connections()`.

Run alone (the benchmark does): ``python -m devices.sim.kortex_arm --api kortex3`` (``--mqtt-port N``
to serve the MQTT path through a broker on 127.0.0.1:N); it prints a JSON
`listening` line, answers `stats` on stdin with the BaseCyclic request timing of each UDP session,
and exits at end of input.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import math
import random
import socket
import statistics
import sys
import time
from array import array
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import aiomqtt
from google.protobuf.message import Message

from protocols.errors import ProtocolError
from protocols.kortex import mqtt as topics
from protocols.kortex.errors import ErrorCode, sub_error_code
from protocols.kortex.frame import (
    decode_frame,
    encode_error,
    encode_frame,
    encode_notification,
    encode_pong,
    encode_response,
    parse_payload,
)
from protocols.kortex.framing import TcpSplitter, encode_tcp
from protocols.kortex.generated import (
    Base_pb2,
    BaseCyclic_pb2,
    BaseCyclicKortex3_pb2,
    BaseKortex3_pb2,
    Common_pb2,
    CommonKortex3_pb2,
    Session_pb2,
    WristCyclicC61_pb2,
)
from protocols.kortex.header import HEADER_VERSION, FrameType, Header
from protocols.kortex.services import Function, ServiceId

Api = Literal["kortex2", "kortex3"]
Refusal = Literal["no", "error", "silent"]

_INVALID_SESSION = sub_error_code("INVALID_SESSION")
_UNSUPPORTED_SERVICE = sub_error_code("UNSUPPORTED_SERVICE")
_UNSUPPORTED_METHOD = sub_error_code("UNSUPPORTED_METHOD")
_PAYLOAD_DECODING_ERR = sub_error_code("PAYLOAD_DECODING_ERR")
_USER_NOT_FOUND = sub_error_code("USER_NOT_FOUND")
_INVALID_PASSWORD = sub_error_code("INVALID_PASSWORD")
_WRONG_SERVOING_MODE = sub_error_code("WRONG_SERVOING_MODE")
_ROBOT_NOT_READY = sub_error_code("ROBOT_NOT_READY")
_WRONG_MODE = sub_error_code("WRONG_MODE")
_INVALID_PARAM = sub_error_code("INVALID_PARAM")
#: How soon the arm retries a broker that went away (s).
MQTT_RETRY_S = 0.1
_CYCLIC = frozenset(
    {
        Function.BASE_CYCLIC_REFRESH,
        Function.BASE_CYCLIC_REFRESH_COMMAND,
        Function.BASE_CYCLIC_REFRESH_FEEDBACK,
        Function.BASE_CYCLIC_REFRESH_CUSTOM_DATA,
    }
)
_KNOWN_SERVICES = frozenset(service.value for service in ServiceId)
#: Arrival times kept per session for `cycle_stats` (ten minutes at 1 kHz).
_MAX_TIMES = 600_000


@dataclass
class ArmFaults:
    """Faults to inject; change them at any time.

    `udp_reply_loss`: share [0, 1] of BaseCyclic replies on UDP never sent (session replies always
    go out, so a test's set-up stays deterministic). `udp_reply_delay_s`: delay of every BaseCyclic
    reply on UDP. `udp_request_delay_s`: delay (s) before the arm handles each BaseCyclic request on
    UDP (it acts on the command, then answers, that much later; TCP requests are handled at once, so
    one sent after it can be handled before it). `refuse_sessions`: answer CreateSession with an
    error ("error") or not at all ("silent", a hung robot). `success_sub_code`: the sub-code every
    successful response carries in frame_info, with error code 0 (0: none). `unsupported`: function
    UIDs answered as a firmware without them answers (UNSUPPORTED_METHOD). `garbled`: function UIDs
    whose successful answers carry bytes that are no protobuf message.
    """

    udp_reply_loss: float = 0.0
    udp_reply_delay_s: float = 0.0
    udp_request_delay_s: float = 0.0
    refuse_sessions: Refusal = "no"
    success_sub_code: int = 0
    unsupported: frozenset[int] = frozenset()
    garbled: frozenset[int] = frozenset()


@dataclass(eq=False)
class _Link:
    """One peer: a TCP connection or a UDP source address."""

    kind: Literal["tcp", "udp", "mqtt"]
    peer: str
    send: Callable[[bytes], None]
    close: Callable[[], None] = lambda: None


@dataclass(eq=False)
class SimSession:
    """A session the arm granted: to whom, its timeouts (s), its subscriptions and what it sent."""

    id: int
    link: _Link
    username: str
    inactivity_timeout_s: float
    connection_timeout_s: float
    last_seen: float
    #: Subscription handle -> the subscribing function's UID.
    subscriptions: dict[int, int] = field(default_factory=dict)
    #: Arrival times (monotonic s) of this session's BaseCyclic requests.
    cyclic_times: array[float] = field(default_factory=lambda: array("d"))
    #: (frame id, command) each time the C61 command this session sends changes.
    wrist_commands: list[tuple[int, WristCyclicC61_pb2.Command]] = field(default_factory=list)


#: Seconds the simulated arm keeps reading its UDP port when stopped, for datagrams already sent.
UDP_GRACE_S = 0.05


class SimulatedArm:
    """The arm: `await start()`, then point a client at `host`, `tcp_port`, `udp_port`."""

    def __init__(
        self,
        api: Api = "kortex3",
        *,
        host: str = "127.0.0.1",
        tcp_port: int = 0,
        udp_port: int = 0,
        username: str = "admin",
        password: str = "admin",
        actuator_count: int = 7,
        faults: ArmFaults | None = None,
        first_session_id: int = 1,
        seed: int = 0,
        mqtt: tuple[str, int] | None = None,
        requires_hold_to_run: bool = True,
    ) -> None:
        self.api = api
        self.host = host
        self.username = username
        self.password = password
        self.actuator_count = actuator_count
        self.faults = faults or ArmFaults()
        self._requested_ports = (tcp_port, udp_port)
        self._random = random.Random(seed)
        self._session_ids = itertools.count(first_session_id)
        self._handles = itertools.count(1)
        self._started = time.monotonic()
        self._server: asyncio.Server | None = None
        self._udp: asyncio.DatagramTransport | None = None
        self._tcp_links: set[_Link] = set()
        self._udp_links: dict[Any, _Link] = {}
        self._feedback_frame = 0
        self.tcp_port = 0
        self.udp_port = 0
        #: Live sessions by id, and every session ever closed with CloseSession.
        self.sessions: dict[int, SimSession] = {}
        self.closed_sessions: list[SimSession] = []
        #: Requests received by function UID, and BaseCyclic replies the loss fault swallowed.
        self.requests: Counter[int] = Counter()
        self.udp_replies_lost = 0
        self.arm_state = Common_pb2.ARMSTATE_SERVOING_READY
        self.servoing_mode = Base_pb2.SINGLE_LEVEL_SERVOING
        #: Every servoing mode set, in order.
        self.servoing_modes: list[int] = []
        #: Kortex 3: the operating mode, every one selected (in order), and whether low-level
        #: servoing needs HOLD_TO_RUN first.
        self.operating_mode = CommonKortex3_pb2.OPERATING_MODE_MONITORED_STOP
        self.operating_modes: list[int] = []
        self.requires_hold_to_run = requires_hold_to_run
        #: (function UID, mode) of every SetServoingMode and SelectOperatingMode, in order.
        self.mode_calls: list[tuple[int, int]] = []
        #: Calls of 0x20091: ApplyEmergencyStop on Kortex 2, ApplyQuickStop on Kortex 3.
        self.emergency_stops = 0
        self.quick_stops = 0
        #: The arm's emergency-stop input (Kortex 3 feedback field 48).
        self.emergency_stop_activated = False
        self.wrist = WristCyclicC61_pb2.Command()
        #: Positions (deg) the actuators hold in low-level servoing, from the last Refresh; None outside it.
        self.actuator_targets: list[float] | None = None
        #: The MQTT broker (host, port) whose Kortex topics the arm serves, if any.
        self.mqtt = mqtt
        self._mqtt_client: aiomqtt.Client | None = None
        self._mqtt_task: asyncio.Task[None] | None = None
        self._mqtt_ready = asyncio.Event()
        self._mqtt_links: dict[str, _Link] = {}
        #: MQTT messages refused (why), pongs received, connections to the broker made, and sessions
        #: closed by a `sessions/killed` will.
        self.mqtt_rejected: list[str] = []
        self.mqtt_pongs = 0
        self.mqtt_connections = 0
        #: TCP connections ever accepted (a Link 6 client opens none).
        self.tcp_connections = 0
        self.killed_sessions = 0

    # -- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        """Listen on TCP and UDP (port 0 picks a free one; see `tcp_port` / `udp_port`)."""
        loop = asyncio.get_running_loop()
        tcp_port, udp_port = self._requested_ports
        self._server = await loop.create_server(lambda: _TcpServerProtocol(self), self.host, tcp_port)
        self.tcp_port = self._server.sockets[0].getsockname()[1]
        self._udp, _ = await loop.create_datagram_endpoint(
            lambda: _UdpServerProtocol(self), local_addr=(self.host, udp_port)
        )
        self.udp_port = self._udp.get_extra_info("sockname")[1]
        if self.mqtt is not None:
            self._mqtt_task = asyncio.create_task(self._serve_mqtt(*self.mqtt), name="kortex-sim:mqtt")
            await self.wait_mqtt_ready()

    async def wait_mqtt_ready(self, timeout_s: float = 5.0) -> None:
        """Wait until the arm is subscribed to its topics on the broker."""
        async with asyncio.timeout(timeout_s):
            await self._mqtt_ready.wait()

    async def stop(self) -> None:
        """Close every connection and stop listening."""
        if self._mqtt_task is not None:
            self._mqtt_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._mqtt_task
            self._mqtt_task = None
        self.close_tcp_connections()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        if self._udp is not None:
            # Datagrams sent just before the stop (a gateway's CloseSession as it exits) are read
            # first, as a real arm would: closing the socket at once would drop what the loop has not
            # read yet (seen on a loaded host).
            await asyncio.sleep(UDP_GRACE_S)
            self._udp.close()

    def close_tcp_connections(self) -> None:
        """Fault: drop every TCP connection now (their sessions die with them)."""
        for link in list(self._tcp_links):
            link.close()

    def press_emergency_stop(self, pressed: bool = True) -> None:
        """The arm's emergency-stop input: published in Kortex 3 feedback (field 48); the arm goes IN_FAULT."""
        self.emergency_stop_activated = pressed
        if pressed:
            self.set_arm_state(Common_pb2.ARMSTATE_IN_FAULT)

    def set_arm_state(self, state: int, stamp: float | None = None) -> None:
        """Change the arm state and notify every ArmStateTopic subscriber (at Unix time `stamp`, default now)."""
        self.arm_state = state  # type: ignore[assignment]
        now = time.time() if stamp is None else stamp
        timestamp = Common_pb2.Timestamp(sec=int(now), usec=round(now % 1 * 1e6) % 1_000_000)
        payload: Message
        if self.api == "kortex3":
            payload = BaseKortex3_pb2.ArmStateNotification(
                active_state=state,  # type: ignore[arg-type]
                generic_info=CommonKortex3_pb2.NotificationInformation(
                    severity=CommonKortex3_pb2.NOTIF_INFO, timestamp=timestamp
                ),
            )
        else:
            payload = Base_pb2.ArmStateNotification(active_state=state, timestamp=timestamp)  # type: ignore[arg-type]
        notification = payload.SerializeToString()
        for session in list(self.sessions.values()):
            for handle, function_uid in session.subscriptions.items():
                if function_uid == Function.BASE_ARM_STATE_TOPIC:
                    session.link.send(encode_notification(function_uid, handle, session.id, notification))

    def udp_sessions(self) -> list[SimSession]:
        """Live and closed sessions created over UDP, oldest first."""
        every = [*self.closed_sessions, *self.sessions.values()]
        return sorted((s for s in every if s.link.kind == "udp"), key=lambda s: s.id)

    # -- protocol ----------------------------------------------------------------------------------

    def handle(self, data: bytes, link: _Link) -> list[bytes]:
        """The serialized Frames answering one received Frame."""
        try:
            frame = decode_frame(data)
        except ProtocolError:
            return []  # no header to answer to
        header = frame.header
        if header.frame_type == FrameType.PING:
            return [encode_pong(header)]
        if header.frame_type != FrameType.REQUEST:
            return []
        if header.header_version != HEADER_VERSION:
            return [
                encode_error(header, ErrorCode.ERROR_PROTOCOL_SERVER, sub_error_code("INCOMPATIBLE_HEADER_VERSION"))
            ]
        uid = header.function_uid
        self.requests[uid] += 1
        if uid == Function.SESSION_CREATE_SESSION:
            return self._create_session(header, frame.payload, link)
        session = self._session_of(header, link)
        if session is None:
            return [
                encode_error(
                    header,
                    ErrorCode.ERROR_PROTOCOL_SERVER,
                    _INVALID_SESSION,
                    f"session {header.session_id} is not open on this connection",
                )
            ]
        session.last_seen = time.monotonic()
        try:
            return self._dispatch(header, frame.payload, session)
        except ProtocolError as error:
            return [encode_error(header, ErrorCode.ERROR_PROTOCOL_SERVER, _PAYLOAD_DECODING_ERR, str(error))]

    def _dispatch(self, header: Header, payload: bytes, session: SimSession) -> list[bytes]:
        uid = header.function_uid
        if uid in self.faults.unsupported:
            return self._unsupported(header)
        if uid in _CYCLIC:
            session.cyclic_times.append(time.monotonic())
            if len(session.cyclic_times) > _MAX_TIMES:
                del session.cyclic_times[: _MAX_TIMES // 2]
        if uid == Function.SESSION_KEEP_ALIVE:
            return [self._success(header)]
        if uid == Function.SESSION_CLOSE_SESSION:
            reply = self._success(header)
            del self.sessions[session.id]
            self.closed_sessions.append(session)
            return [reply]
        if uid == Function.SESSION_GET_CONNECTIONS:
            connections = Session_pb2.ConnectionList(
                connection=[
                    Common_pb2.Connection(connection_information=s.link.peer, connection_identifier=s.id)
                    for s in self.sessions.values()
                ]
            )
            return [self._success(header, connections.SerializeToString())]
        if uid == Function.BASE_CYCLIC_REFRESH:
            return self._refresh(header, payload, session)
        if uid == Function.BASE_CYCLIC_REFRESH_FEEDBACK:
            self._feedback_frame = (self._feedback_frame + 1) & 0xFFFF
            return [self._success(header, self._feedback(self._feedback_frame))]
        if uid == Function.BASE_CYCLIC_REFRESH_CUSTOM_DATA and self.api == "kortex2":
            custom = parse_payload(BaseCyclic_pb2.CustomData, payload)
            return [self._success(header, custom.SerializeToString())]
        if uid == Function.BASE_ARM_STATE_TOPIC:
            parse_payload(Common_pb2.NotificationOptions, payload)
            handle = next(self._handles)
            session.subscriptions[handle] = uid
            return [self._success(header, Common_pb2.NotificationHandle(identifier=handle).SerializeToString())]
        if uid == Function.BASE_UNSUBSCRIBE:
            handle = parse_payload(Common_pb2.NotificationHandle, payload).identifier
            session.subscriptions.pop(handle, None)
            return [self._success(header)]
        if uid == Function.BASE_SET_SERVOING_MODE:
            mode = parse_payload(Base_pb2.ServoingModeInformation, payload).servoing_mode
            self.mode_calls.append((uid, mode))
            if (
                self.api == "kortex3"
                and self.requires_hold_to_run
                and mode == Base_pb2.LOW_LEVEL_SERVOING
                and self.operating_mode != CommonKortex3_pb2.OPERATING_MODE_HOLD_TO_RUN
            ):
                name = CommonKortex3_pb2.OperatingModeType.Name(self.operating_mode)
                return [
                    encode_error(
                        header, ErrorCode.ERROR_DEVICE, _WRONG_MODE, f"low level needs HOLD_TO_RUN, not {name}"
                    )
                ]
            self.servoing_mode = mode
            self.servoing_modes.append(mode)
            if mode != Base_pb2.LOW_LEVEL_SERVOING:
                self.actuator_targets = None  # the base controls the actuators again
            self._notify_after_reply(
                Common_pb2.ARMSTATE_SERVOING_LOW_LEVEL
                if mode == Base_pb2.LOW_LEVEL_SERVOING
                else Common_pb2.ARMSTATE_SERVOING_READY
            )
            return [self._success(header)]
        if uid == Function.BASE_SELECT_OPERATING_MODE and self.api == "kortex3":
            operating = parse_payload(CommonKortex3_pb2.ModeSelection, payload).operating_mode
            if operating == CommonKortex3_pb2.OPERATING_MODE_UNSPECIFIED:
                return [encode_error(header, ErrorCode.ERROR_DEVICE, _INVALID_PARAM, "no operating mode")]
            self.mode_calls.append((uid, operating))
            self.operating_mode = operating
            self.operating_modes.append(operating)
            return [self._success(header)]
        if uid == Function.BASE_GET_CURRENT_OPERATING_MODE and self.api == "kortex3":
            selection = CommonKortex3_pb2.ModeSelection(operating_mode=self.operating_mode)
            return [self._success(header, selection.SerializeToString())]
        if uid == Function.BASE_GET_SERVOING_MODE:
            # The mode outlives the sessions: a client that never left low level leaves the arm there.
            current = Base_pb2.ServoingModeInformation(servoing_mode=self.servoing_mode)
            return [self._success(header, current.SerializeToString())]
        if uid == Function.BASE_APPLY_EMERGENCY_STOP:
            if self.api == "kortex3":
                self.quick_stops += 1  # ApplyQuickStop in API 3.4
            else:
                self.emergency_stops += 1
                self._notify_after_reply(Common_pb2.ARMSTATE_IN_FAULT)
            return [self._success(header)]
        # RefreshCommand lands here too: Gen3 firmware 2.3 answers it with UNSUPPORTED_METHOD.
        return self._unsupported(header)

    def _unsupported(self, header: Header) -> list[bytes]:
        sub_code = _UNSUPPORTED_METHOD if header.service_id in _KNOWN_SERVICES else _UNSUPPORTED_SERVICE
        where = f"<srv: {header.service_id}, fct: {header.function_id}, msgType: {FrameType.RESPONSE.value}>"
        return [encode_error(header, ErrorCode.ERROR_PROTOCOL_SERVER, sub_code, where)]

    def _success(self, request: Header, payload: bytes = b"", session_id: int | None = None) -> bytes:
        if request.function_uid in self.faults.garbled:
            payload = b"\xff\xff\xff"  # a field tag with no end: no protobuf parser accepts it
        return encode_response(request, payload, session_id, sub_code=self.faults.success_sub_code)

    def _notify_after_reply(self, state: int) -> None:
        # The reply is sent when the handler returns; the notification it causes comes after it.
        asyncio.get_running_loop().call_soon(self.set_arm_state, state)

    def _create_session(self, header: Header, payload: bytes, link: _Link) -> list[bytes]:
        refusal = self.faults.refuse_sessions
        if refusal == "silent":
            return []
        if refusal == "error":
            return [encode_error(header, ErrorCode.ERROR_DEVICE, _ROBOT_NOT_READY, "sessions refused (fault)")]
        try:
            info = parse_payload(Session_pb2.CreateSessionInfo, payload)
        except ProtocolError as error:
            return [encode_error(header, ErrorCode.ERROR_PROTOCOL_SERVER, _PAYLOAD_DECODING_ERR, str(error))]
        if info.username != self.username:
            return [encode_error(header, ErrorCode.ERROR_DEVICE, _USER_NOT_FOUND, f"no user {info.username!r}")]
        if info.password != self.password:
            return [encode_error(header, ErrorCode.ERROR_DEVICE, _INVALID_PASSWORD, "wrong password")]
        # One session per connection: a second CreateSession on the same link replaces the first.
        for old in [s for s in self.sessions.values() if s.link is link]:
            del self.sessions[old.id]
        session = SimSession(
            id=self._new_session_id(),
            link=link,
            username=info.username,
            inactivity_timeout_s=info.session_inactivity_timeout / 1000,
            connection_timeout_s=info.connection_inactivity_timeout / 1000,
            last_seen=time.monotonic(),
        )
        self.sessions[session.id] = session
        return [self._success(header, session_id=session.id)]

    def _new_session_id(self) -> int:
        # 16 bits in message_info; 0 means "no session".
        while True:
            candidate = next(self._session_ids) & 0xFFFF
            if candidate and candidate not in self.sessions:
                return candidate

    def _session_of(self, header: Header, link: _Link) -> SimSession | None:
        session = self.sessions.get(header.session_id)
        if session is None or session.link is not link:
            return None
        if session.inactivity_timeout_s and time.monotonic() - session.last_seen > session.inactivity_timeout_s:
            del self.sessions[session.id]
            return None
        return session

    def _refresh(self, header: Header, payload: bytes, session: SimSession) -> list[bytes]:
        command: BaseCyclic_pb2.Command | BaseCyclicKortex3_pb2.Command
        if self.api == "kortex2":
            command = parse_payload(BaseCyclic_pb2.Command, payload)
        else:
            command = parse_payload(BaseCyclicKortex3_pb2.Command, payload)
        if self.servoing_mode != Base_pb2.LOW_LEVEL_SERVOING:
            return [encode_error(header, ErrorCode.ERROR_DEVICE, _WRONG_SERVOING_MODE, "not in low-level servoing")]
        if command.actuators:
            self.actuator_targets = [actuator.position for actuator in command.actuators]
        if isinstance(command, BaseCyclic_pb2.Command):
            return [self._success(header, self._feedback(command.frame_id))]
        command3 = command
        if command3.HasField("wrist") and command3.wrist.HasField("c61"):
            wrist = WristCyclicC61_pb2.Command()
            wrist.CopyFrom(command3.wrist.c61)
            wrist.ClearField("command_id")
            if not session.wrist_commands or session.wrist_commands[-1][1] != wrist:
                session.wrist_commands.append((command3.frame_id, wrist))
            self.wrist = wrist
        return [self._success(header, self._feedback(command3.frame_id))]

    # -- the simulated arm's state ------------------------------------------------------------------

    def _feedback(self, frame_id: int) -> bytes:
        t = time.monotonic() - self._started
        feedback: Message
        actuators: Any  # either API's repeated actuator field
        if self.api == "kortex2":
            feedback = BaseCyclic_pb2.Feedback(frame_id=frame_id)
            actuators = feedback.actuators
            feedback.interconnect.feedback_id.identifier = frame_id
            _fill_imu(feedback.interconnect, t)
            feedback.interconnect.voltage = 24.0
            feedback.interconnect.temperature_core = 38.0
        else:
            feedback = BaseCyclicKortex3_pb2.Feedback(frame_id=frame_id)
            actuators = feedback.actuators
            self._fill_wrist(feedback.wrist.c61, frame_id, t)
            feedback.base.is_emergency_stop_activated = self.emergency_stop_activated
            feedback.base.operating_mode = self.operating_mode
        base = feedback.base
        base.active_state = self.arm_state
        base.arm_voltage = 24.0
        base.arm_current = 1.2
        base.temperature_cpu = 45.0
        base.temperature_ambient = 25.0
        for index in range(self.actuator_count):
            actuator = actuators.add()
            if self.api == "kortex2":
                actuator.command_id = frame_id
            else:
                actuator.feedback_id.identifier = frame_id
            phase = 2 * math.pi * 0.1 * t + index
            if self.actuator_targets is not None and index < len(self.actuator_targets):
                actuator.position = self.actuator_targets[index]
            else:
                actuator.position = (180.0 + 30.0 * math.sin(phase)) % 360.0
                actuator.velocity = 30.0 * 2 * math.pi * 0.1 * math.cos(phase)
            actuator.torque = 0.5 * math.sin(phase)
            actuator.current_motor = 0.3
            actuator.voltage = 24.0
            actuator.temperature_motor = 35.0 + index
            actuator.temperature_core = 40.0 + index
        return feedback.SerializeToString()

    def _fill_wrist(self, wrist: WristCyclicC61_pb2.Feedback, frame_id: int, t: float) -> None:
        command = self.wrist
        wrist.feedback_id.identifier = frame_id
        # The inputs are wired to the outputs, so a test sees its command come back.
        wrist.digital_inputs_state = command.digital_outputs_state
        wrist.analog_input_a_channel_1_value = command.analog_output_a_channel_1_value
        wrist.analog_input_a_channel_2_value = command.analog_output_a_channel_2_value
        wrist.analog_input_b_channel_1_value = command.analog_output_b_channel_1_value
        wrist.analog_input_b_channel_2_value = command.analog_output_b_channel_2_value
        wrist.force_x = 2.0 * math.sin(t)
        wrist.force_z = -9.81 * 0.5
        wrist.torque_y = 0.1 * math.cos(t)
        _fill_imu(wrist, t)
        wrist.voltage = 24.0
        wrist.temperature_core = 41.0

    # -- transports --------------------------------------------------------------------------------

    def _udp_reply(self, header_uid: int, replies: list[bytes], send: Callable[[bytes], None]) -> None:
        if header_uid in _CYCLIC:
            if self._random.random() < self.faults.udp_reply_loss:
                self.udp_replies_lost += len(replies)
                return
            if self.faults.udp_reply_delay_s > 0:
                loop = asyncio.get_running_loop()
                for reply in replies:
                    loop.call_later(self.faults.udp_reply_delay_s, send, reply)
                return
        for reply in replies:
            send(reply)

    def datagram(self, data: bytes, addr: Any) -> None:
        """One UDP datagram from `addr` (a BaseCyclic request handled `udp_request_delay_s` later)."""
        delay = self.faults.udp_request_delay_s
        if delay > 0 and _function_uid(data) in _CYCLIC:
            asyncio.get_running_loop().call_later(delay, self._datagram, data, addr)
        else:
            self._datagram(data, addr)

    def _datagram(self, data: bytes, addr: Any) -> None:
        if self._udp is None or self._udp.is_closing():  # stopped while a delayed request waited
            return
        udp = self._udp
        link = self._udp_links.get(addr)
        if link is None:

            def send(frame: bytes, _addr: Any = addr) -> None:
                udp.sendto(frame, _addr)

            link = self._udp_links[addr] = _Link("udp", f"{addr[0]}:{addr[1]}", send)
        replies = self.handle(data, link)
        self._udp_reply(_function_uid(data), replies, link.send)

    def cycle_stats(self, session: SimSession) -> dict[str, Any]:
        """How regularly `session` sent BaseCyclic requests: count, rate and period percentiles (ms)."""
        times = session.cyclic_times
        periods = [later - earlier for earlier, later in itertools.pairwise(times)]
        if len(periods) < 2:
            return {"session": session.id, "requests": len(times)}
        cuts = statistics.quantiles(periods, n=1000, method="inclusive")
        duration = times[-1] - times[0]
        return {
            "session": session.id,
            "requests": len(times),
            "duration_s": duration,
            "rate_hz": len(periods) / duration,
            "period_p50_ms": cuts[499] * 1000,
            "period_p99_ms": cuts[989] * 1000,
            "period_max_ms": max(periods) * 1000,
            "periods_ms": [p * 1000 for p in periods],
        }

    # -- MQTT (Kortex 3) ----------------------------------------------------------------------------

    async def _serve_mqtt(self, host: str, port: int) -> None:
        while True:
            client = aiomqtt.Client(
                host,
                port,
                identifier=f"kortex-sim-{id(self):x}",
                protocol=aiomqtt.ProtocolVersion.V5,
                keepalive=10,
                timeout=2.0,
                socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
            )
            try:
                async with client:
                    for pattern in ("req/#", "dev/+/req/#", "pong/+", topics.SESSION_KILLED_TOPIC):
                        await client.subscribe(pattern)
                    self._mqtt_client = client
                    self.mqtt_connections += 1
                    self._mqtt_ready.set()
                    async for message in client.messages:
                        self._mqtt_message(message)
            except aiomqtt.MqttError:
                pass
            finally:
                self._mqtt_client = None
                self._mqtt_ready.clear()
            await asyncio.sleep(MQTT_RETRY_S)

    def _publish(self, topic: str, frame: bytes) -> None:
        client = self._mqtt_client
        if client is not None:
            client._client.publish(topic, frame, 0)  # aiomqtt's publish would make every reply a task

    def _mqtt_link(self, reply_to: str) -> _Link:
        link = self._mqtt_links.get(reply_to)
        if link is None:

            def send(frame: bytes, _reply_to: str = reply_to) -> None:
                self._publish(topics.topic_for(decode_frame(frame).header, _reply_to), frame)

            link = self._mqtt_links[reply_to] = _Link("mqtt", reply_to, send)
        return link

    def _mqtt_message(self, message: aiomqtt.Message) -> None:
        topic = str(message.topic)
        payload = message.payload if isinstance(message.payload, bytes) else str(message.payload).encode()
        reply_to = getattr(message.properties, "ResponseTopic", None) if message.properties else None
        try:
            parsed, frame = topics.decode_message(topic, payload)
        except ProtocolError as error:
            self.mqtt_rejected.append(f"{topic}: {error}")
            self._answer_refused(topic, payload, reply_to, str(error))
            return
        if parsed.family == "req":
            if not reply_to:
                self.mqtt_rejected.append(f"{topic}: request without a response topic")
                return
            link = self._mqtt_link(reply_to)
            for reply in self.handle(payload, link):
                link.send(reply)
        elif parsed.family == "pong":
            self.mqtt_pongs += 1
        elif parsed.family == "raw" and topic == topics.SESSION_KILLED_TOPIC:
            _, client_id = topics.decode_raw(frame)
            try:
                link_name = topics.response_topic(client_id.decode())
            except (UnicodeDecodeError, ValueError) as error:
                self.mqtt_rejected.append(f"{topic}: {error}")
                return
            for session in [s for s in self.sessions.values() if s.link.peer == link_name]:
                del self.sessions[session.id]
                self.killed_sessions += 1

    def _answer_refused(self, topic: str, payload: bytes, reply_to: str | None, reason: str) -> None:
        """A request whose topic and frame disagree gets an error frame; what has no header, nothing."""
        if not reply_to:
            return
        try:
            header = decode_frame(payload).header
        except ProtocolError:
            return
        if header.frame_type != FrameType.REQUEST:
            return
        with contextlib.suppress(ProtocolError):
            self._publish(reply_to, encode_error(header, ErrorCode.ERROR_PROTOCOL_SERVER, _INVALID_PARAM, reason))

    def ping_mqtt_sessions(self) -> int:
        """Send a PING to every session opened over MQTT; return how many were pinged."""
        pinged = 0
        for session in self.sessions.values():
            if session.link.kind == "mqtt":
                ping = Header(frame_type=FrameType.PING, session_id=session.id)
                self._publish(topics.ping_topic(session.id), encode_frame(ping))
                pinged += 1
        return pinged


def _function_uid(data: bytes) -> int:
    """The function UID of the request in `data`; 0 for a malformed frame."""
    try:
        return decode_frame(data).header.function_uid
    except ProtocolError:
        return 0


def _fill_imu(target: Any, t: float) -> None:
    target.imu_acceleration_x = 0.05 * math.sin(3 * t)
    target.imu_acceleration_y = 0.05 * math.cos(3 * t)
    target.imu_acceleration_z = 9.81
    target.imu_angular_velocity_z = 2.0 * math.sin(t)


class _TcpServerProtocol(asyncio.Protocol):
    def __init__(self, arm: SimulatedArm) -> None:
        self._arm = arm
        self._splitter = TcpSplitter()
        self._link: _Link | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        peer = transport.get_extra_info("peername")

        def send(frame: bytes) -> None:
            if not transport.is_closing():
                transport.write(encode_tcp(frame))

        self._link = _Link("tcp", f"{peer[0]}:{peer[1]}", send, transport.abort)
        self._arm.tcp_connections += 1
        self._arm._tcp_links.add(self._link)

    def data_received(self, data: bytes) -> None:
        assert self._link is not None
        try:
            frames = self._splitter.feed(data)
        except ProtocolError:
            self._link.close()
            return
        for frame in frames:
            for reply in self._arm.handle(frame, self._link):
                self._link.send(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._link is None:
            return
        self._arm._tcp_links.discard(self._link)
        for session in [s for s in self._arm.sessions.values() if s.link is self._link]:
            del self._arm.sessions[session.id]


class _UdpServerProtocol(asyncio.DatagramProtocol):
    def __init__(self, arm: SimulatedArm) -> None:
        self._arm = arm

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        self._arm.datagram(data, addr)


async def _serve(args: argparse.Namespace) -> None:
    arm = SimulatedArm(
        args.api,
        tcp_port=args.tcp_port,
        udp_port=args.udp_port,
        faults=ArmFaults(udp_reply_loss=args.loss, udp_reply_delay_s=args.delay),
        mqtt=("127.0.0.1", args.mqtt_port) if args.mqtt_port else None,
    )
    await arm.start()
    print(json.dumps({"event": "listening", "tcp": arm.tcp_port, "udp": arm.udp_port}), flush=True)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    reported: set[int] = set()
    while line := (await reader.readline()).decode().strip():
        if line == "stats":
            sessions = [s for s in arm.udp_sessions() if s.id not in reported and len(s.cyclic_times) > 1]
            reported.update(s.id for s in sessions)
            stats = [arm.cycle_stats(s) for s in sessions]
            print(json.dumps({"event": "stats", "sessions": stats, "lost": arm.udp_replies_lost}), flush=True)
    await arm.stop()


def main() -> None:
    """Run a simulated arm until standard input ends."""
    parser = argparse.ArgumentParser(description="A simulated Kinova arm on loopback (Kortex TCP/UDP).")
    parser.add_argument("--api", choices=("kortex2", "kortex3"), default="kortex3")
    parser.add_argument("--tcp-port", type=int, default=0)
    parser.add_argument("--udp-port", type=int, default=0)
    parser.add_argument("--loss", type=float, default=0.0, help="share of BaseCyclic UDP replies to drop")
    parser.add_argument("--delay", type=float, default=0.0, help="delay of BaseCyclic UDP replies (s)")
    parser.add_argument(
        "--mqtt-port", type=int, default=0, help="also serve Kortex 3's MQTT path via this loopback broker"
    )
    asyncio.run(_serve(parser.parse_args()))


if __name__ == "__main__":
    main()
