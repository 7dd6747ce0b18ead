"""Thin asyncio transports for a `KortexConnection`: TCP with the magic/length splitter, UDP bare, MQTT.

They hold no protocol logic: bytes in are cut into Frames and handed to the connection, Frames out
are framed (TCP), size-checked (UDP) or published on the topic their header names (MQTT, Kortex 3:
`protocols.kortex.mqtt`). The MQTT transport uses aiomqtt like the gateway's MQTT bridge.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from dataclasses import dataclass

import aiomqtt
import paho.mqtt.client as paho_mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from devices.kortex.connection import KortexConnection
from protocols.errors import ProtocolError
from protocols.kortex import mqtt as topics
from protocols.kortex.frame import decode_frame
from protocols.kortex.framing import TcpSplitter, check_udp, encode_tcp
from protocols.kortex.header import FrameType

log = logging.getLogger(__name__)


class _TcpProtocol(asyncio.Protocol):
    def __init__(self, connection: KortexConnection) -> None:
        self._connection = connection
        self._splitter = TcpSplitter()
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        discarded = self._splitter.discarded_bytes
        try:
            frames = self._splitter.feed(data)
        except ProtocolError as error:
            if self._transport is not None:
                self._transport.abort()
            self._connection.lost(error)
            return
        if self._splitter.discarded_bytes != discarded:
            log.warning(
                "%s: skipped %d bytes that did not start with the Kortex magic",
                self._connection.name,
                self._splitter.discarded_bytes - discarded,
            )
        for frame in frames:
            self._connection.frame_received(frame)

    def connection_lost(self, exc: Exception | None) -> None:
        self._connection.lost(exc)


class _UdpProtocol(asyncio.DatagramProtocol):
    def __init__(self, connection: KortexConnection) -> None:
        self._connection = connection

    def datagram_received(self, data: bytes, addr: tuple[str | object, int]) -> None:
        self._connection.frame_received(data)

    def error_received(self, exc: Exception) -> None:
        self._connection.transport_error(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        self._connection.lost(exc)


async def open_tcp(connection: KortexConnection, host: str, port: int, timeout_s: float) -> None:
    """Connect `connection` to the robot's TCP port (10000)."""
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(timeout_s):
        transport, _ = await loop.create_connection(lambda: _TcpProtocol(connection), host, port)

    def send(frame: bytes) -> None:
        transport.write(encode_tcp(frame))

    connection.attach(send, transport.close)


async def open_udp(connection: KortexConnection, host: str, port: int) -> None:
    """Connect `connection` to the robot's UDP port (10001) from one fixed local port."""
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(lambda: _UdpProtocol(connection), remote_addr=(host, port))

    def send(frame: bytes) -> None:
        transport.sendto(check_udp(frame))

    connection.attach(send, transport.close)


@dataclass(frozen=True, slots=True)
class MqttSettings:
    """How to reach a Link 6's broker.

    `client_id` (also in our response topic), `qos` of every publish and subscription,
    `keepalive_s` the MQTT keep-alive (s), `connect_timeout_s` (s).
    """

    client_id: str
    qos: int = 0
    keepalive_s: int = 10
    connect_timeout_s: float = 2.0


class MqttTransport:
    """One MQTT connection carrying a `KortexConnection`'s Frames (Kortex 3, TCP 1883).

    Requests go to their `req` topic with our `res/<client id>` as MQTT 5 Response Topic; pongs go
    to `pong/<session>`. At connect it subscribes to that response topic, to pings and to the `notif`
    topics of the subscribing RPCs it may send (Base.ArmStateTopic); notifications and pings of other
    sessions on the same broker are ignored (counted in `foreign`). What arrives is checked against
    its topic (`topics.decode_message`); a bad message is counted in the connection's
    `decode_errors` and dropped. Losing the broker loses the link.
    """

    def __init__(self, connection: KortexConnection, client: aiomqtt.Client, settings: MqttSettings) -> None:
        self._connection = connection
        self._client = client
        self._settings = settings
        self._reply_to = topics.response_topic(settings.client_id)
        self._tasks: set[asyncio.Task[None]] = set()
        self._reader: asyncio.Task[None] | None = None
        #: Messages dropped because their topic or payload was not a Kortex one (also in decode_errors).
        self.rejected = 0
        #: Notifications and pings addressed to other sessions on the broker.
        self.foreign = 0

    async def start(self) -> None:
        """Subscribe to our response topic and to pings, then read in the background."""
        qos = self._settings.qos
        await self._client.subscribe(self._reply_to, qos=qos)
        await self._client.subscribe("ping/+", qos=qos)
        for function_uid in sorted(topics.SUBSCRIBING_FUNCTIONS):
            await self._client.subscribe(topics.notification_topic(function_uid >> 16, function_uid & 0xFFFF), qos=qos)
        self._reader = asyncio.create_task(self._read(), name=f"{self._connection.name}:mqtt-read")

    def send(self, frame: bytes) -> None:
        """Publish one serialized Frame on its topic (raises `LinkLost` via the connection when down)."""
        header = decode_frame(frame).header
        properties: Properties | None = None
        if header.frame_type == FrameType.REQUEST:
            properties = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
            properties.ResponseTopic = self._reply_to
        topic = topics.topic_for(header)
        # aiomqtt's publish waits for the write (and, above QoS 0, the broker's ack); the connection's
        # send is synchronous, so hand the frame to paho at once like the MQTT bridge's publish_now.
        info = self._client._client.publish(topic, frame, self._settings.qos, False, properties)
        if info.rc != paho_mqtt.MQTT_ERR_SUCCESS:
            self._connection.lost(aiomqtt.MqttCodeError(info.rc, f"could not publish on {topic}"))

    async def _read(self) -> None:
        connection = self._connection
        try:
            async for message in self._client.messages:
                payload = message.payload
                if not isinstance(payload, bytes):  # paho hands bytes; aiomqtt's type says more
                    payload = str(payload).encode()  # type: ignore[unreachable]
                try:
                    parsed, frame = topics.decode_message(str(message.topic), payload)
                except ProtocolError as error:
                    self.rejected += 1
                    connection.decode_errors += 1
                    log.warning("%s: dropping an MQTT message: %s", connection.name, error)
                    continue
                if parsed.family in ("notif", "ping") and frame.header.session_id != connection.session_id:
                    self.foreign += 1
                    continue
                connection.frame_received(payload)
        except aiomqtt.MqttError as error:
            connection.lost(error)
        else:
            connection.lost(None)

    def close(self) -> None:
        """Stop reading and disconnect (in the background: the connection's close is synchronous)."""
        if self._reader is not None:
            self._reader.cancel()
        task = asyncio.get_running_loop().create_task(self._disconnect())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def wait_closed(self) -> None:
        """Wait until `close` has disconnected from the broker."""
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _disconnect(self) -> None:
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError, aiomqtt.MqttError):
                await self._reader
        with contextlib.suppress(aiomqtt.MqttError, OSError, TimeoutError):
            async with asyncio.timeout(1.0):
                await self._client.__aexit__(None, None, None)
        # After a lost broker aiomqtt leaves paho's socket open: close it ourselves.
        sock = self._client._client.socket()
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()


async def open_mqtt(connection: KortexConnection, host: str, port: int, settings: MqttSettings) -> MqttTransport:
    """Connect `connection` to a Link 6's MQTT broker (1883) in MQTT 5, leaving a `sessions/killed` will.

    Raises `aiomqtt.MqttError` (or `TimeoutError`) when the broker does not accept the connection.
    """
    will = aiomqtt.Will(
        topics.SESSION_KILLED_TOPIC, topics.session_killed_will(settings.client_id, 0), qos=settings.qos
    )
    client = aiomqtt.Client(
        host,
        port,
        identifier=settings.client_id,
        protocol=aiomqtt.ProtocolVersion.V5,
        will=will,
        keepalive=settings.keepalive_s,
        timeout=settings.connect_timeout_s,
        # Without it, replies wait for Nagle (tens of ms per RPC through a broker).
        socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
    )
    async with asyncio.timeout(settings.connect_timeout_s * 2):
        await client.__aenter__()
    transport = MqttTransport(connection, client, settings)
    try:
        await transport.start()
    except BaseException:
        transport.close()
        raise
    connection.attach(transport.send, transport.close)
    return transport
