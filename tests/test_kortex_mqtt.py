"""Kortex 3 (Link 6) over MQTT: the topic codec, and the adapter against the simulated arm through mosquitto."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

import aiomqtt
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from devices.kortex.adapter import KortexAdapter
from devices.kortex.errors import LinkLost
from devices.kortex.options import KortexOptions
from devices.sim.kortex_arm import SimulatedArm
from gateway.config import loads
from gateway.errors import ConfigError
from gateway.messages.generic import Led
from gateway.messages.kortex import ArmStateNotification
from protocols.errors import ProtocolError
from protocols.kortex import mqtt as topics
from protocols.kortex.errors import sub_error_code
from protocols.kortex.frame import decode_frame, encode_frame, encode_notification
from protocols.kortex.generated import Common_pb2
from protocols.kortex.header import FrameType, Header
from protocols.kortex.services import Function
from tests.adapter_rig import AdapterRig
from tests.mosquitto_broker import Broker, mosquitto  # noqa: F401  (the fixture)

# -- golden vectors ---------------------------------------------------------------------------------

#: CreateSession admin/admin, 60000 / 2000 ms, message 1, session 0: the spec's bytes (kortex.md §1.4),
#: without TCP's 8-byte magic and length. On MQTT the payload is this Frame as it is.
GOLDEN_CREATE_SESSION_FRAME = bytes.fromhex(
    "0a140d00000011 1501000000 1d01000110 2515000000 12150a0561646d696e10e0d4031a0561646d696e20d00f".replace(" ", "")
)
#: Our last will: Frame{header{frame_info 0x12000000 (version 1, RAW), service_info 0x10000000,
#: payload_info 29}, payload PayloadFrameTypeRaw{topic "sessions/killed", payload "hwgw-arm-1"}},
#: written out by hand from the field numbers of Frame.proto.
GOLDEN_WILL = bytes.fromhex(
    "0a0f 0d00000012 1d00000010 251d000000 121d 0a0f 73657373696f6e732f6b696c6c6564 120a 687767772d61726d2d31".replace(
        " ", ""
    )
)

TOPIC_TABLE = [
    (Header(FrameType.REQUEST, message_id=1, service_id=1, function_id=1), None, "req/1/1"),
    (Header(FrameType.REQUEST, service_id=2, function_id=0x91), None, "req/2/145"),
    (Header(FrameType.REQUEST, service_id=3, function_id=3, device_id=4), None, "dev/4/req/3/3"),
    (Header(FrameType.RESPONSE, service_id=1, function_id=1), "res/hwgw-arm-1", "res/hwgw-arm-1"),
    (Header(FrameType.NOTIFICATION, message_id=7, service_id=2, function_id=0xB0), None, "notif/2/176"),
    (Header(FrameType.PING, session_id=12), None, "ping/12"),
    (Header(FrameType.PONG, session_id=12), None, "pong/12"),
]


@pytest.mark.parametrize(("header", "reply_to", "topic"), TOPIC_TABLE)
def test_topic_of_each_frame_type(header: Header, reply_to: str | None, topic: str) -> None:
    assert topics.topic_for(header, reply_to) == topic
    parsed, frame = topics.decode_message(topic, encode_frame(header))
    assert frame.header.frame_type == header.frame_type
    assert (parsed.service_id, parsed.function_id) == (
        (header.service_id, header.function_id) if parsed.family in ("req", "notif") else (0, 0)
    )


def test_the_payload_is_the_bare_frame_of_tcp() -> None:
    parsed, frame = topics.decode_message("req/1/1", GOLDEN_CREATE_SESSION_FRAME)
    assert parsed == topics.Topic("req", service_id=1, function_id=1)
    assert frame.header.function_uid == Function.SESSION_CREATE_SESSION
    assert frame.header.message_id == 1


def test_last_will_bytes() -> None:
    assert topics.session_killed_will("hwgw-arm-1", 0) == GOLDEN_WILL
    parsed, frame = topics.decode_message(topics.SESSION_KILLED_TOPIC, GOLDEN_WILL)
    assert parsed.family == "raw"
    assert topics.decode_raw(frame) == ("sessions/killed", b"hwgw-arm-1")


@pytest.mark.parametrize(
    ("topic", "payload", "error"),
    [
        ("req/1/1", b"\xff\xff\xff", "not a Kortex Frame"),
        ("req/1/1", GOLDEN_CREATE_SESSION_FRAME[:-3], "not a Kortex Frame"),
        ("req/1/1", b"", "without a header"),
        ("req/1/2", GOLDEN_CREATE_SESSION_FRAME, "names service 1 function 2, the frame's header service 1 function 1"),
        ("dev/3/req/1/1", GOLDEN_CREATE_SESSION_FRAME, "names device 3"),
        ("res/hwgw", GOLDEN_CREATE_SESSION_FRAME, "carries RESPONSE frames, got frame type 1 \\(REQUEST\\)"),
        ("ping/5", encode_frame(Header(FrameType.PING, session_id=6)), "names session 5"),
        ("sessions/killed", encode_frame(Header(FrameType.RAW), b"\x0a\xff"), "not a PayloadFrameTypeRaw"),
        ("kinovafromserver", GOLDEN_CREATE_SESSION_FRAME, "not a Kortex topic"),
        ("req/1", GOLDEN_CREATE_SESSION_FRAME, "expected req/<service>/<function>"),
        ("req/01/1", GOLDEN_CREATE_SESSION_FRAME, "'01' is not a decimal number"),
        ("req/4096/1", GOLDEN_CREATE_SESSION_FRAME, "service id 4096 does not fit 12 bits"),
        ("res/a+b", GOLDEN_CREATE_SESSION_FRAME, "may hold only"),
        ("dev/x/req/1/1", GOLDEN_CREATE_SESSION_FRAME, "device id 'x'"),
    ],
)
def test_hostile_messages_are_refused_by_name(topic: str, payload: bytes, error: str) -> None:
    with pytest.raises(ProtocolError, match=error):
        topics.decode_message(topic, payload)


@pytest.mark.parametrize("client_id", ["", "a/b", "x#", "é", "a" * 65])
def test_client_ids_that_cannot_stand_in_a_topic(client_id: str) -> None:
    with pytest.raises(ValueError, match="client id"):
        topics.check_client_id(client_id)


def test_a_response_needs_its_response_topic() -> None:
    with pytest.raises(ProtocolError, match="needs the response topic"):
        topics.topic_for(Header(FrameType.RESPONSE))
    with pytest.raises(ProtocolError, match="RAW frames name theirs"):
        topics.topic_for(Header(FrameType.RAW))


# -- config ----------------------------------------------------------------------------------------


def test_transport_follows_the_api_unless_set() -> None:
    assert KortexOptions(api="kortex3", simulate=True).uses_mqtt
    assert not KortexOptions(api="kortex2", simulate=True).uses_mqtt
    assert not KortexOptions(api="kortex3", transport="tcp", simulate=True).uses_mqtt
    assert KortexOptions(simulate=True).mqtt_port == 1883


def test_config_errors_all_at_once() -> None:
    text = (
        '[devices.arm]\nkind = "kortex"\napi = "kortex3"\ntransport = "udp"\nmqtt_qos = 3\nmqtt_port = 0\n'
        'mqtt_broker = "cloud"\n\n'
        '[devices.gen3]\nkind = "kortex"\napi = "kortex2"\ntransport = "mqtt"\nmqtt_client_id = "a/b"\n\n'
        '[devices.demo]\nkind = "kortex"\napi = "kortex3"\nsimulate = true\nmqtt_qos = 1\n'
    )
    with pytest.raises(ConfigError) as caught:
        loads(text)
    text = str(caught.value)
    for expected in (
        "devices.arm.transport: expected one of 'auto', 'tcp', 'mqtt', got 'udp'",
        "devices.arm.mqtt_qos: 3 is outside [0, 2]",
        "devices.arm.mqtt_port: 0 is outside [1, 65535]",
        "devices.arm.mqtt_broker: expected one of 'embedded', 'external'",
        'transport = "mqtt" needs api = "kortex3"',
        "mqtt_client_id: the MQTT client id 'a/b' may hold only",
        "the embedded broker serves QoS 0 only",
    ):
        assert expected in text, text


# -- the adapter against the simulated arm through mosquitto ---------------------------------------


class Device(AdapterRig[KortexAdapter]):
    def __init__(self, options: KortexOptions) -> None:
        super().__init__(KortexAdapter, "arm-1", options)


def mqtt_options(arm: SimulatedArm, broker: Broker, **overrides: Any) -> KortexOptions:
    # tcp_port points at the arm's TCP server on purpose: the adapter must not use it.
    values: dict[str, Any] = {
        "host": "127.0.0.1",
        "username": "admin",
        "password": "admin",
        "mqtt_port": broker.port,
        "tcp_port": arm.tcp_port,
        "udp_port": arm.udp_port,
        "api": "kortex3",
        "cyclic_rate_hz": 200.0,
        "rpc_timeout_ms": 1000,
    }
    return KortexOptions(**{**values, **overrides})


@pytest.fixture
async def link6(mosquitto: Broker) -> AsyncIterator[SimulatedArm]:  # noqa: F811
    arm = SimulatedArm("kortex3", mqtt=("127.0.0.1", mosquitto.port))
    await arm.start()
    yield arm
    await arm.stop()


def raw_client(broker: Broker, client_id: str) -> aiomqtt.Client:
    return aiomqtt.Client("127.0.0.1", broker.port, identifier=client_id, protocol=aiomqtt.ProtocolVersion.V5)


async def test_sessions_rpcs_notifications_cyclic_and_quick_stop_over_mqtt(
    link6: SimulatedArm,
    mosquitto: Broker,  # noqa: F811
) -> None:
    device = Device(mqtt_options(link6, mosquitto))
    device.start()
    try:
        await device.connected()
        assert link6.tcp_connections == 0  # no TCP 10000 session, as on a real Link 6
        sessions = sorted(link6.sessions.values(), key=lambda s: s.id)
        assert [s.link.kind for s in sessions] == ["mqtt", "udp"]
        assert sessions[0].link.peer == "res/hwgw-arm-1"
        assert (
            device.statuses[-1][1]
            == f"kortex3 at 127.0.0.1, sessions {sessions[0].id} (MQTT) and {sessions[1].id} (UDP)"
        )
        assert device.adapter.capabilities()["transport"] == "mqtt"
        # Notifications: ArmStateTopic was subscribed over MQTT and its notifications arrive on notif/2/176.
        assert link6.requests[Function.BASE_ARM_STATE_TOPIC] == 1
        link6.set_arm_state(Common_pb2.ARMSTATE_SERVOING_MANUALLY_CONTROLLED, stamp=1700000000.000005)
        await device.until(lambda: isinstance(device.latest("arm_state"), ArmStateNotification))
        assert device.latest("arm_state").timestamp.sec == 1700000000
        # Cyclic feedback still on UDP.
        await device.until(lambda: device.latest("actuators") is not None)
        # An RPC over MQTT: the LED ring puts the arm in low level (Base.SetServoingMode on MQTT).
        await device.command(Led(rgb=(1.0, 0.0, 0.0)), "led")
        await device.until(lambda: link6.wrist.led_ring_rgb == 0xFF0000)
        # Pings from the arm are answered with pongs.
        assert link6.ping_mqtt_sessions() == 1
        await device.until(lambda: link6.mqtt_pongs == 1)
        # estop: ApplyQuickStop (0x20091) over MQTT, then out of low level.
        await device.adapter.estop()
        assert link6.quick_stops == 1
        assert link6.servoing_modes[-1] == 2  # SINGLE_LEVEL_SERVOING
        # KeepAlive keeps the MQTT session's silence watchdog fed.
        await asyncio.sleep(1.2)
        assert link6.requests[Function.SESSION_KEEP_ALIVE] >= 1
    finally:
        await device.stop()
    assert link6.sessions == {}  # both sessions closed at shutdown
    assert link6.requests[Function.BASE_UNSUBSCRIBE] == 1
    assert link6.mqtt_rejected == []


async def test_reconnects_after_the_broker_restarts(link6: SimulatedArm, mosquitto: Broker) -> None:  # noqa: F811
    device = Device(mqtt_options(link6, mosquitto))
    device.start()
    try:
        await device.connected()
        first = set(link6.sessions)
        await mosquitto.restart()
        assert device.task is not None
        with pytest.raises(LinkLost, match="MQTT link lost"):
            async with asyncio.timeout(3):
                await device.task
        await link6.wait_mqtt_ready()
        device.start()  # the gateway's supervisor does this with backoff
        await device.connected()
        assert link6.mqtt_connections == 2
        assert not first & set(link6.sessions)
        assert {s.link.kind for s in link6.sessions.values()} == {"mqtt", "udp"}
    finally:
        await device.stop()


async def test_no_broker_is_a_clear_unreachable(link6: SimulatedArm, mosquitto: Broker) -> None:  # noqa: F811
    device = Device(mqtt_options(link6, mosquitto, mqtt_port=link6.udp_port))
    device.start()
    assert device.task is not None
    with pytest.raises(LinkLost, match=rf"robot unreachable at 127.0.0.1:{link6.udp_port} \(MQTT\)"):
        async with asyncio.timeout(5):
            await device.task
    await device.stop()


async def test_hostile_mqtt_messages_are_answered_or_dropped(link6: SimulatedArm, mosquitto: Broker) -> None:  # noqa: F811
    device = Device(mqtt_options(link6, mosquitto))
    device.start()
    try:
        await device.connected()
        rpc = device.adapter._tcp
        assert rpc is not None
        async with raw_client(mosquitto, "hostile") as client:
            await client.subscribe("res/hostile")
            # To the gateway: garbage, a truncated frame, a request on its response topic.
            for payload in (b"\x00garbage", GOLDEN_CREATE_SESSION_FRAME[:-5], GOLDEN_CREATE_SESSION_FRAME):
                await client.publish("res/hwgw-arm-1", payload)
            await device.until(lambda: rpc.decode_errors == 3)
            # Another session's notification on the shared notif topic is not ours.
            mqtt = device.adapter._mqtt
            assert mqtt is not None
            other = encode_notification(Function.BASE_ARM_STATE_TOPIC, 1, rpc.session_id + 100, b"")
            await client.publish("notif/2/176", other)
            await device.until(lambda: mqtt.foreign == 1)
            assert device.latest("arm_state") is None
            # To the arm: a request whose topic names another function gets an error frame back.
            properties = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
            properties.ResponseTopic = "res/hostile"
            await client.publish("req/1/2", GOLDEN_CREATE_SESSION_FRAME, properties=properties)
            async with asyncio.timeout(2):
                message = await anext(aiter(client.messages))
            reply = decode_frame(message.payload)
            assert reply.header.frame_type == FrameType.RESPONSE
            assert reply.header.error_sub_code == sub_error_code("INVALID_PARAM")
            # Garbage and a request without a response topic are dropped by the arm, which keeps serving.
            await client.publish("req/1/1", b"\xff\xff")
            await client.publish("req/1/1", GOLDEN_CREATE_SESSION_FRAME)
            await device.until(lambda: len(link6.mqtt_rejected) == 3)
        assert "names service 1 function 2" in link6.mqtt_rejected[0]
        assert "without a response topic" in link6.mqtt_rejected[2]
        await device.command(Led(rgb=(0.0, 1.0, 0.0)), "led")
        await device.until(lambda: link6.wrist.led_ring_rgb == 0x00FF00)
        assert device.statuses[-1][0] == "connected"
    finally:
        await device.stop()


VANISHING_CLIENT = """
import asyncio, os, sys
from devices.kortex.connection import KortexConnection
from devices.kortex.transport import MqttSettings, open_mqtt

async def main():
    connection = KortexConnection("vanishing", api="kortex3")
    await open_mqtt(connection, "127.0.0.1", int(sys.argv[1]), MqttSettings("vanishing"))
    await connection.create_session("admin", "admin", 30000, 2000)
    print("session", flush=True)
    os._exit(0)  # gone without DISCONNECT, like a crashed gateway

asyncio.run(main())
"""


async def test_a_vanished_client_s_will_closes_its_session(link6: SimulatedArm, mosquitto: Broker) -> None:  # noqa: F811
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", VANISHING_CLIENT, str(mosquitto.port), stdout=asyncio.subprocess.PIPE
    )
    stdout, _ = await asyncio.wait_for(proc.communicate(), 10)
    assert stdout == b"session\n"
    for _ in range(250):  # the broker publishes the will as soon as it sees the socket close
        if link6.killed_sessions:
            break
        await asyncio.sleep(0.02)
    assert link6.killed_sessions == 1
    assert link6.sessions == {}
    assert link6.closed_sessions == []  # closed by the will, not by CloseSession


async def test_the_demo_arm_needs_no_installed_broker() -> None:
    device = Device(KortexOptions(api="kortex3", simulate=True, cyclic_rate_hz=100.0))
    device.start()
    try:
        await device.connected()
        sim = device.adapter._sim
        assert sim is not None
        assert sim.tcp_connections == 0
        assert {s.link.kind for s in sim.sessions.values()} == {"mqtt", "udp"}
        await device.command(Led(rgb=(0.0, 0.0, 1.0)), "led")
        await device.until(lambda: sim.wrist.led_ring_rgb == 0x0000FF)
    finally:
        await device.stop()


async def test_an_arm_gone_silent_behind_a_live_broker_is_lost(mosquitto: Broker) -> None:  # noqa: F811
    arm = SimulatedArm("kortex3", mqtt=("127.0.0.1", mosquitto.port))
    await arm.start()
    device = Device(mqtt_options(arm, mosquitto, link_timeout_ms=1500))
    try:
        device.start()
        await device.connected()
        await arm.stop()  # the broker stays up; only the KeepAlives go unanswered
        assert device.task is not None
        with pytest.raises(LinkLost, match=r"nothing from the robot for 1\.5 s"):
            async with asyncio.timeout(5):
                await device.task
    finally:
        await device.stop()


@pytest.mark.parametrize("qos", [1, 2])
async def test_requests_at_qos_above_0(link6: SimulatedArm, mosquitto: Broker, qos: int) -> None:  # noqa: F811
    device = Device(mqtt_options(link6, mosquitto, mqtt_qos=qos))
    device.start()
    try:
        await device.connected()
        await device.command(Led(rgb=(1.0, 1.0, 0.0)), "led")
        await device.until(lambda: link6.wrist.led_ring_rgb == 0xFFFF00)
    finally:
        await device.stop()
    assert link6.sessions == {}
