"""The simulated arm, checked over raw sockets against the spec's golden bytes, not through the adapter."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest

from devices.sim.kortex_arm import ArmFaults, SimulatedArm
from protocols.kortex.errors import ErrorCode, sub_error_code
from protocols.kortex.frame import Frame, decode_error, decode_frame, encode_frame
from protocols.kortex.framing import TcpSplitter, encode_tcp
from protocols.kortex.generated import (
    Base_pb2,
    BaseCyclic_pb2,
    BaseCyclicKortex3_pb2,
    Common_pb2,
    Session_pb2,
)
from protocols.kortex.header import FrameType, Header
from protocols.kortex.services import Function
from tests.test_kortex_codec import (
    GOLDEN_CREATE_SESSION_FRAME,
    GOLDEN_CREATE_SESSION_TCP,
    GOLDEN_REFRESH_FEEDBACK_UDP,
)


@pytest.fixture
async def arm() -> AsyncIterator[SimulatedArm]:
    simulated = SimulatedArm("kortex2", first_session_id=3)
    await simulated.start()
    yield simulated
    await simulated.stop()


class RawTcp:
    """A bare socket client: bytes out, frames in through the splitter."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer, self.splitter = reader, writer, TcpSplitter()
        self.frames: list[bytes] = []

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def frame(self) -> Frame:
        async with asyncio.timeout(2):
            while not self.frames:
                data = await self.reader.read(65536)
                assert data, "connection closed"
                self.frames += self.splitter.feed(data)
        return decode_frame(self.frames.pop(0))

    async def request(self, function: int, session: int, message: int, payload: bytes = b"") -> Frame:
        header = Header(
            frame_type=FrameType.REQUEST,
            session_id=session,
            message_id=message,
            service_id=function >> 16,
            function_id=function & 0xFFFF,
        )
        await self.send(encode_tcp(encode_frame(header, payload)))
        return await self.frame()

    def close(self) -> None:
        self.writer.close()


async def raw_tcp(arm: SimulatedArm) -> RawTcp:
    return RawTcp(*await asyncio.open_connection("127.0.0.1", arm.tcp_port))


def udp_exchange(arm: SimulatedArm, sock: socket.socket, datagram: bytes) -> Frame:
    sock.sendto(datagram, ("127.0.0.1", arm.udp_port))
    return decode_frame(sock.recv(65535))


async def test_golden_create_session_on_tcp_then_golden_refresh_feedback_on_udp(arm: SimulatedArm) -> None:
    client = await raw_tcp(arm)
    # Garbage first: the arm's splitter must resynchronize on the magic.
    await client.send(b"\x00junk" + GOLDEN_CREATE_SESSION_TCP)
    reply = await client.frame()
    assert reply.header.frame_type == FrameType.RESPONSE
    assert (reply.header.message_id, reply.header.function_uid) == (1, 0x10001)
    assert reply.header.session_id == 3
    assert not reply.is_error
    assert [session.username for session in arm.sessions.values()] == ["admin"]
    # UDP needs its own session: the golden CreateSession frame, bare, in one datagram.
    loop = asyncio.get_running_loop()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(2)
        sock.bind(("127.0.0.1", 0))
        created = await loop.run_in_executor(None, udp_exchange, arm, sock, GOLDEN_CREATE_SESSION_FRAME)
        assert created.header.session_id == 4
        # Not session 3: that one belongs to the TCP connection.
        refused = await loop.run_in_executor(None, udp_exchange, arm, sock, GOLDEN_REFRESH_FEEDBACK_UDP)
        assert refused.is_error
        assert decode_error(refused).sub_name == "INVALID_SESSION"
    client.close()


async def test_golden_refresh_feedback_answered(arm: SimulatedArm) -> None:
    loop = asyncio.get_running_loop()
    # The fixture's arm numbers sessions from 3: the golden datagram is for session 3.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(2)
        sock.bind(("127.0.0.1", 0))
        created = await loop.run_in_executor(None, udp_exchange, arm, sock, GOLDEN_CREATE_SESSION_FRAME)
        assert created.header.session_id == 3
        reply = await loop.run_in_executor(None, udp_exchange, arm, sock, GOLDEN_REFRESH_FEEDBACK_UDP)
    assert not reply.is_error
    assert (reply.header.message_id, reply.header.session_id, reply.header.function_uid) == (5, 3, 0x30003)
    feedback = BaseCyclic_pb2.Feedback.FromString(reply.payload)
    assert len(feedback.actuators) == 7
    assert all(0 <= actuator.position < 360 for actuator in feedback.actuators)
    assert feedback.interconnect.imu_acceleration_z == pytest.approx(9.81)
    assert reply.header.payload_length == len(reply.payload)


async def test_error_frames(arm: SimulatedArm) -> None:
    client = await raw_tcp(arm)
    no_session = await client.request(Function.BASE_CYCLIC_REFRESH_FEEDBACK, session=0, message=1)
    assert decode_error(no_session).sub_name == "INVALID_SESSION"
    bad_user = Session_pb2.CreateSessionInfo(username="root", password="admin").SerializeToString()
    refused = await client.request(Function.SESSION_CREATE_SESSION, session=0, message=2, payload=bad_user)
    assert (decode_error(refused).error_name, decode_error(refused).sub_name) == ("ERROR_DEVICE", "USER_NOT_FOUND")
    bad_password = Session_pb2.CreateSessionInfo(username="admin", password="x").SerializeToString()
    refused = await client.request(Function.SESSION_CREATE_SESSION, session=0, message=3, payload=bad_password)
    assert decode_error(refused).sub_name == "INVALID_PASSWORD"
    good = Session_pb2.CreateSessionInfo(username="admin", password="admin").SerializeToString()
    session = (await client.request(Function.SESSION_CREATE_SESSION, session=0, message=4, payload=good)).header
    sid = session.session_id
    unsupported = await client.request(Function.BASE_CYCLIC_REFRESH_COMMAND, session=sid, message=5)
    error = decode_error(unsupported)
    assert (error.error_code, error.sub_name) == (ErrorCode.ERROR_PROTOCOL_SERVER, "UNSUPPORTED_METHOD")
    assert error.text == "<srv: 3, fct: 2, msgType: 3>"
    unknown_service = await client.request(0x7770001, session=sid, message=6)
    assert decode_error(unknown_service).sub_name == "UNSUPPORTED_SERVICE"
    # Kortex 2 Refresh needs low-level servoing, as on a Gen3.
    wrong_mode = await client.request(Function.BASE_CYCLIC_REFRESH, session=sid, message=7, payload=b"")
    assert decode_error(wrong_mode).sub_code == sub_error_code("WRONG_SERVOING_MODE")
    garbage = await client.request(Function.BASE_ARM_STATE_TOPIC, session=sid, message=8, payload=b"\xff\xff")
    assert decode_error(garbage).sub_name == "PAYLOAD_DECODING_ERR"
    client.close()


async def test_notifications_servoing_and_close_session(arm: SimulatedArm) -> None:
    client = await raw_tcp(arm)
    good = Session_pb2.CreateSessionInfo(username="admin", password="admin").SerializeToString()
    sid = (await client.request(Function.SESSION_CREATE_SESSION, session=0, message=1, payload=good)).header.session_id
    options = Common_pb2.NotificationOptions(type=Common_pb2.NOTIFICATION_TYPE_EVENT).SerializeToString()
    reply = await client.request(Function.BASE_ARM_STATE_TOPIC, session=sid, message=2, payload=options)
    handle = Common_pb2.NotificationHandle.FromString(reply.payload).identifier
    low = Base_pb2.ServoingModeInformation(servoing_mode=Base_pb2.LOW_LEVEL_SERVOING).SerializeToString()
    reply = await client.request(Function.BASE_SET_SERVOING_MODE, session=sid, message=3, payload=low)
    assert not reply.is_error
    notification = await client.frame()
    assert notification.header.frame_type == FrameType.NOTIFICATION
    assert (notification.header.message_id, notification.header.service_id) == (handle, 2)
    assert notification.header.function_uid == Function.BASE_ARM_STATE_TOPIC
    state = Base_pb2.ArmStateNotification.FromString(notification.payload)
    assert state.active_state == Common_pb2.ARMSTATE_SERVOING_LOW_LEVEL
    command = BaseCyclic_pb2.Command(frame_id=9, actuators=[BaseCyclic_pb2.ActuatorCommand(position=12.5)])
    reply = await client.request(
        Function.BASE_CYCLIC_REFRESH, session=sid, message=4, payload=command.SerializeToString()
    )
    feedback = BaseCyclic_pb2.Feedback.FromString(reply.payload)
    assert (feedback.frame_id, feedback.actuators[0].position) == (9, 12.5)
    await client.request(Function.BASE_UNSUBSCRIBE, session=sid, message=5, payload=reply.payload[:0])
    closed = await client.request(Function.SESSION_CLOSE_SESSION, session=sid, message=6)
    assert not closed.is_error
    assert [s.id for s in arm.closed_sessions] == [sid]
    after = await client.request(Function.SESSION_KEEP_ALIVE, session=sid, message=7)
    assert decode_error(after).sub_name == "INVALID_SESSION"
    ping = Header(frame_type=FrameType.PING, message_id=99)
    await client.send(encode_tcp(encode_frame(ping)))
    assert (await client.frame()).header.frame_type == FrameType.PONG
    client.close()


async def test_faults_refuse_sessions_and_close_tcp() -> None:
    arm = SimulatedArm("kortex3", faults=ArmFaults(refuse_sessions="error"))
    await arm.start()
    try:
        client = await raw_tcp(arm)
        good = Session_pb2.CreateSessionInfo(username="admin", password="admin").SerializeToString()
        refused = await client.request(Function.SESSION_CREATE_SESSION, session=0, message=1, payload=good)
        assert decode_error(refused).sub_name == "ROBOT_NOT_READY"
        arm.faults.refuse_sessions = "silent"
        await client.send(encode_tcp(encode_frame(Header(frame_type=1, message_id=2, service_id=1, function_id=1))))
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await client.frame()
        arm.faults.refuse_sessions = "no"
        created = await client.request(Function.SESSION_CREATE_SESSION, session=0, message=3, payload=good)
        assert created.header.session_id in arm.sessions
        arm.close_tcp_connections()
        assert await client.reader.read() == b""
        client.close()
        await asyncio.sleep(0.05)
        assert arm.sessions == {}
    finally:
        await arm.stop()


async def test_udp_reply_loss_and_kortex3_wrist_echo() -> None:
    # A firmware that needs no HOLD_TO_RUN before low level: this test is about the UDP path alone.
    arm = SimulatedArm("kortex3", faults=ArmFaults(udp_reply_loss=0.5), seed=1, requires_hold_to_run=False)
    await arm.start()
    loop = asyncio.get_running_loop()
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.settimeout(0.05)
            sock.bind(("127.0.0.1", 0))
            sid = (
                await loop.run_in_executor(None, udp_exchange, arm, sock, GOLDEN_CREATE_SESSION_FRAME)
            ).header.session_id
            # Refresh is answered in low-level servoing only (SetServoingMode is no BaseCyclic call: never lost).
            low = Base_pb2.ServoingModeInformation(servoing_mode=Base_pb2.LOW_LEVEL_SERVOING).SerializeToString()
            header = Header(frame_type=1, session_id=sid, message_id=1, service_id=2, function_id=0x98)
            mode_set = await loop.run_in_executor(None, udp_exchange, arm, sock, encode_frame(header, low))
            assert not mode_set.is_error
            command = BaseCyclicKortex3_pb2.Command(frame_id=1)
            command.wrist.c61.digital_outputs_state = 0b101
            command.wrist.c61.analog_output_b_channel_2_value = 7.5
            answered = 0
            for message in range(2, 42):
                header = Header(frame_type=1, session_id=sid, message_id=message, service_id=3, function_id=1)
                sock.sendto(encode_frame(header, command.SerializeToString()), ("127.0.0.1", arm.udp_port))
                try:
                    reply = decode_frame(await loop.run_in_executor(None, sock.recv, 65535))
                except TimeoutError:
                    continue
                answered += 1
                wrist = BaseCyclicKortex3_pb2.Feedback.FromString(reply.payload).wrist.c61
                assert wrist.digital_inputs_state == 0b101
                assert wrist.analog_input_b_channel_2_value == 7.5
        assert answered + arm.udp_replies_lost == 40
        assert 5 <= arm.udp_replies_lost <= 35
        [session] = arm.udp_sessions()
        assert [frame for frame, _ in session.wrist_commands] == [1]
    finally:
        await arm.stop()
