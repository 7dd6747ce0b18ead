"""The MQTT bridge: one broker connection (aiomqtt, MQTT 5) shared by export, commands, federation and discovery.

It connects with a retained last will `offline` on `<base>/<gateway>/status`, sets TCP_NODELAY on
its socket (with Nagle on, command round trips through mosquitto take 44-88 ms instead of about 1 ms;
the broker needs `set_tcp_nodelay true` too), publishes `online`, subscribes, republishes everything
retained, then serves until the connection drops; it reconnects with capped exponential backoff.
Local devices never wait on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import aiomqtt
import orjson
import paho.mqtt.client as mqtt
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gateway.bus import Sample
from gateway.core.client import Hub
from gateway.core.config import MqttConfig
from gateway.faces.mqtt.commands import CommandService, request_of
from gateway.faces.mqtt.discovery import Discovery
from gateway.faces.mqtt.export import Exporter
from gateway.faces.mqtt.federation import ImportAdapter, Importer
from gateway.faces.mqtt.reader import BatchReader
from gateway.faces.mqtt.topics import TopicMap
from gateway.topics import check_device_id

log = logging.getLogger(__name__)

#: How long a connect may take, TCP and TLS handshakes and the CONNACK (s).
CONNECT_TIMEOUT_S = 10.0


def default_gateway_name() -> str:
    """The host's name as a topic segment (the `gateway` default)."""
    name = "".join(c if c.isalnum() or c in "_-" else "-" for c in socket.gethostname().split(".")[0])
    try:
        return check_device_id(name[:128])
    except ValueError:
        return "gateway"


def _payload(value: object) -> bytes:
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    if value is None:
        return b""
    return str(value).encode()


class MqttBridge:
    """The gateway on an MQTT broker (docs/mqtt.md)."""

    def __init__(self, config: MqttConfig, hub: Hub, import_adapter: ImportAdapter) -> None:
        self.config = config
        self._hub = hub
        url = urlsplit(config.url)
        self._host = url.hostname or "localhost"
        self._port = url.port or (8883 if url.scheme == "mqtts" else 1883)
        self._username = unquote(url.username) if url.username else None
        self._password = unquote(url.password) if url.password else None
        self._tls = url.scheme == "mqtts"
        self.topics = TopicMap(config.base, config.gateway or default_gateway_name())
        self.exporter = Exporter(
            hub, self.topics, self, config.topics, config.publish_rate_hz, self._is_local, self._new_topic
        )
        self.commands = CommandService(hub, self.topics, self, config.max_payload_bytes)
        token = Path(config.token_file).read_text(encoding="utf-8").strip() if config.token_file else ""
        self.importer = Importer(hub, import_adapter, self.topics, self, token) if config.import_ else None
        self.discovery = Discovery(self.topics, config.ha_prefix) if config.ha_discovery else None
        self._discovered: dict[str, bytes] = {}
        self._client: aiomqtt.Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.state = "stopped"
        self.connected_since: float | None = None
        self.connects = 0
        self.last_error = ""
        self.received = 0
        self.rejected_topics = 0
        #: Imported samples superseded by a newer one of the same topic in the same read batch.
        self.coalesced = 0
        self._batch: dict[str, tuple[str, str, str, bytes]] = {}

    # -- the Link the parts use --------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """True while the broker connection is up."""
        return self._client is not None

    async def publish(
        self, topic: str, payload: bytes, qos: int = 0, retain: bool = False, properties: Properties | None = None
    ) -> None:
        """Publish one message; raise `aiomqtt.MqttError` when the broker is not connected."""
        client = self._client
        if client is None:
            raise aiomqtt.MqttError("not connected to the MQTT broker")
        await client.publish(topic, payload, qos=qos, retain=retain, properties=properties)

    def publish_now(self, messages: list[tuple[str, bytes]]) -> None:
        """Queue retained QoS 0 messages (states) at once and let the kernel send them as few segments.

        With TCP_NODELAY every small write is its own segment, and on a busy host each such send
        cost about 1 ms; corking the socket around a batch keeps NODELAY's low command latency
        while a batch of states goes out together. aiomqtt's `publish` would wait for each write.
        """
        client = self._client
        if client is None:
            raise aiomqtt.MqttError("not connected to the MQTT broker")
        paho = client._client  # aiomqtt exposes no batch or non-waiting publish
        sock = paho.socket()
        cork = sock is not None and hasattr(socket, "TCP_CORK") and len(messages) > 1
        if cork:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)  # type: ignore[union-attr]
        try:
            for topic, payload in messages:
                info = paho.publish(topic, payload, 0, True)
                if info.rc != mqtt.MQTT_ERR_SUCCESS:
                    raise aiomqtt.MqttCodeError(info.rc, "could not publish")
            # Write now rather than on the writer callback paho registered (a loop turn per
            # message); what the socket cannot take, paho keeps for that callback. Not from inside
            # one of paho's callbacks (a sample published while a message is handled): paho holds
            # its non-reentrant callback lock there, which loop_write takes again; its writer sends it.
            if paho._in_callback_mutex.acquire(False):
                paho._in_callback_mutex.release()
                paho.loop_write()
        finally:
            if cork:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)  # type: ignore[union-attr]

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start exporting and connecting (in the background; the gateway never waits for the broker)."""
        self.exporter.start()
        self.state = "connecting"
        self._task = asyncio.create_task(self._run(), name="mqtt-bridge")

    async def stop(self) -> None:
        """Say `offline` (a clean stop sends no last will), then disconnect."""
        client = self._client
        if client is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(1.0):
                    await client.publish(self.topics.gateway(self.topics.own, "status"), b"offline", qos=1, retain=True)
        if self._task is not None:
            self._task.cancel()
            # aiomqtt waits for the broker to see the DISCONNECT; a stopping gateway waits at most 2 s.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(2.0):
                    await asyncio.gather(self._task, return_exceptions=True)
        for task in self._tasks:
            task.cancel()
        self.exporter.stop()
        self.commands.close()
        if self.importer is not None:
            self.importer.close()
        self.state = "stopped"

    def health(self) -> dict[str, Any]:
        """The bridge's part of /healthz."""
        return {
            "state": self.state,
            "broker": f"{'mqtts' if self._tls else 'mqtt'}://{self._host}:{self._port}",
            "gateway": self.topics.own,
            "connected_for_s": round(time.monotonic() - self.connected_since, 3) if self.connected_since else None,
            "connects": self.connects,
            "last_error": self.last_error,
            "import": self.importer is not None,
            "peers": self.commands.peers,
            "auth": bool(self._hub.credentials),
        }

    def collector(self) -> Collector:
        """Prometheus metrics of the bridge."""
        return _BridgeCollector(self)

    # -- connection --------------------------------------------------------------------------

    def _make_client(self) -> aiomqtt.Client:
        tls: ssl.SSLContext | None = None
        if self._tls:
            tls = ssl.create_default_context(cafile=self.config.ca_file or None)
            if self.config.cert_file:
                tls.load_cert_chain(self.config.cert_file, self.config.key_file)
        status = self.topics.gateway(self.topics.own, "status")
        return aiomqtt.Client(
            self._host,
            self._port,
            username=self._username,
            password=self._password,
            identifier=f"hwgw-{self.topics.own}",
            protocol=aiomqtt.ProtocolVersion.V5,
            will=aiomqtt.Will(status, b"offline", qos=1, retain=True),
            keepalive=self.config.keepalive_s,
            timeout=5.0,
            tls_context=tls,
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        )

    async def _run(self) -> None:
        delay = self.config.reconnect_initial_s
        while True:
            self.state = "connecting"
            started = time.monotonic()
            try:
                async with contextlib.AsyncExitStack() as stack:
                    client = self._make_client()
                    await self._connect(client)
                    stack.push_async_exit(client)
                    await self._serve(client)
            except aiomqtt.MqttError as error:
                self.last_error = str(error)
            except OSError as error:
                self.last_error = f"{type(error).__name__}: {error}"
            finally:
                self._lost()
            if time.monotonic() - started > 10 * self.config.reconnect_initial_s:
                delay = self.config.reconnect_initial_s
            log.warning("MQTT broker %s:%s unreachable (%s); retrying in %.2f s", self._host, self._port,
                        self.last_error, delay)  # fmt: skip
            await asyncio.sleep(delay * random.uniform(0.9, 1.1))
            delay = min(delay * 2, self.config.reconnect_max_s)

    async def _connect(self, client: aiomqtt.Client) -> None:
        """Connect, or raise `MqttError` with the reason (a refused TLS handshake, a CONNACK error, no answer).

        aiomqtt waits for the CONNACK without end, and when the broker drops the connection after
        the TLS handshake (a TLS 1.3 broker refusing a missing client certificate) it only records
        the error: race both, and give up after `CONNECT_TIMEOUT_S`.
        """
        disconnected: asyncio.Future[None] = client._disconnected
        entering: asyncio.Future[Any] = asyncio.ensure_future(client.__aenter__())
        await asyncio.wait({entering, disconnected}, timeout=CONNECT_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED)
        if entering.done():
            entering.result()  # raises the broker's refusal as MqttError
            return
        entering.cancel()
        await asyncio.gather(entering, return_exceptions=True)
        paho = client._client
        sock = paho.socket()
        if sock is not None:
            loop = asyncio.get_running_loop()
            loop.remove_reader(sock.fileno())
            loop.remove_writer(sock.fileno())
            sock.close()
        if disconnected.done() and disconnected.exception() is not None:
            error = disconnected.exception()
            raise aiomqtt.MqttError(f"{type(error).__name__}: {error}")
        raise aiomqtt.MqttError(f"the broker did not answer the connect within {CONNECT_TIMEOUT_S:g} s")

    def _lost(self) -> None:
        was_connected = self._client is not None
        self._client = None
        self.connected_since = None
        self.state = "disconnected"
        if was_connected and self.importer is not None:
            self.importer.broker_lost()

    async def _serve(self, client: aiomqtt.Client) -> None:
        self._client = client  # before subscribing: retained messages are dispatched as they arrive
        self.state = "connected"
        self.connected_since = time.monotonic()
        self.connects += 1
        self.last_error = ""
        BatchReader(client, self._on_message, self._flush_batch).install()
        options = SubscribeOptions(qos=1, noLocal=True)
        await client.subscribe([(f, options) for f in self.topics.subscriptions(self.importer is not None)])
        await client.publish(self.topics.gateway(self.topics.own, "status"), b"online", qos=1, retain=True)
        await self.exporter.republish()
        await self._republish_discovery()
        log.info("MQTT bridge connected to %s:%s as %s", self._host, self._port, self.topics.own)
        writer = asyncio.create_task(self.exporter.run(), name="mqtt-export")
        reader = asyncio.create_task(self._read(client), name="mqtt-read")
        try:
            done, _ = await asyncio.wait({writer, reader}, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()  # raises the MqttError that ended the connection
        finally:
            for task in (writer, reader):
                task.cancel()
            await asyncio.gather(writer, reader, return_exceptions=True)

    async def _read(self, client: aiomqtt.Client) -> None:
        # The BatchReader hands every message to `_on_message`; aiomqtt's queue stays empty, and
        # iterating it only ends (with MqttError) when the connection drops.
        async for _ in client.messages:
            pass

    # -- incoming ----------------------------------------------------------------------------

    def _on_message(self, message: mqtt.MQTTMessage) -> None:
        """One message off the socket: imported samples wait for the batch's end, the rest go now."""
        self.received += 1
        topic = message.topic
        payload = _payload(message.payload)
        if self.importer is not None:
            parsed = self.topics.parse(topic)
            if parsed is not None and parsed.kind == "state" and parsed.gateway != self.topics.own:
                if self._batch.pop(topic, None) is not None:
                    self.coalesced += 1  # latest value wins, as on the bus
                self._batch[topic] = (parsed.gateway, parsed.device, parsed.bus_topic, payload)
                return
        self._dispatch(topic, payload, message.properties)

    def _flush_batch(self) -> None:
        """Import the samples of one read batch (the newest of each topic)."""
        importer, batch = self.importer, self._batch
        if importer is None or not batch:
            return
        self._batch = {}
        for topic, (gateway, device, bus_topic, payload) in batch.items():
            try:
                importer.on_state(gateway, device, bus_topic, payload)
            except Exception:
                log.exception("MQTT message on %s failed", topic)

    def _dispatch(self, topic: str, payload: bytes, properties: Properties | None) -> None:
        parsed = self.topics.parse(topic)
        if parsed is None:
            self.rejected_topics += 1
            return
        importer = self.importer
        if parsed.gateway == self.topics.own:
            if parsed.kind == "set":
                self.commands.command(parsed.device, request_of(payload, properties))
            elif parsed.kind == "estop":
                self.commands.estop(request_of(payload, properties))
            elif parsed.kind == "release":
                self.commands.release(request_of(payload, properties))
            elif parsed.kind == "reply" and importer is not None:
                importer.on_reply(properties, payload)
            return  # our own state, read back through a wildcard, is never imported (loop guard)
        if parsed.kind == "status":
            online = (
                importer.on_status(parsed.gateway, payload) if importer is not None else payload.strip() != b"offline"
            )
            if online is False:
                self.commands.peer_gone(parsed.gateway)
        elif importer is None:
            return
        elif parsed.kind == "devices":
            importer.on_devices(parsed.gateway, payload)
        elif parsed.kind == "availability":
            importer.on_availability(parsed.gateway, parsed.device, payload)
        elif parsed.kind == "state":
            importer.on_state(parsed.gateway, parsed.device, parsed.bus_topic, payload)

    # -- helpers -----------------------------------------------------------------------------

    def _is_local(self, device: str) -> bool:
        imported = self.importer is not None and self.importer.imports(device)
        return not imported and self._hub.device(device) is not None

    def _new_topic(self, sample: Sample) -> None:
        if self.discovery is None:
            return
        device = sample.topic.split("/", 1)[0]
        handle = self._hub.device(device)
        if handle is None:  # removed since (an imported device gone): nothing to discover
            return
        documents = self.discovery.for_topic(device, handle.kind, sample.topic, sample.type, sample.data())
        self._publish_documents(documents)

    def _publish_documents(self, documents: list[tuple[str, dict[str, Any]]]) -> None:
        fresh = []
        for topic, document in documents:
            payload = orjson.dumps(document)
            if self._discovered.get(topic) != payload:
                self._discovered[topic] = payload
                fresh.append((topic, payload))
        if fresh:
            task = asyncio.create_task(self._send_documents(fresh))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _send_documents(self, documents: list[tuple[str, bytes]]) -> None:
        with contextlib.suppress(aiomqtt.MqttError):
            for topic, payload in documents:
                await self.publish(topic, payload, qos=1, retain=True)

    async def _republish_discovery(self) -> None:
        if self.discovery is None:
            return
        for handle in self._hub.devices():
            if self._is_local(handle.id):
                for topic, document in self.discovery.for_device(handle.id, handle.kind, handle.adapter.accepts):
                    self._discovered[topic] = orjson.dumps(document)
        for topic, payload in list(self._discovered.items()):
            await self.publish(topic, payload, qos=1, retain=True)


class _BridgeCollector(Collector):
    def __init__(self, bridge: MqttBridge) -> None:
        self._bridge = bridge

    def collect(self) -> Iterator[Metric]:
        bridge = self._bridge
        yield GaugeMetricFamily(
            "hwgw_mqtt_connected", "1 while the MQTT bridge is connected", value=int(bridge.connected)
        )
        yield CounterMetricFamily("hwgw_mqtt_connects", "Successful connections to the broker", value=bridge.connects)
        yield CounterMetricFamily("hwgw_mqtt_received", "Messages received from the broker", value=bridge.received)
        yield CounterMetricFamily(
            "hwgw_mqtt_coalesced",
            "Imported samples superseded by a newer one of their topic read in the same batch",
            value=bridge.coalesced,
        )
        yield CounterMetricFamily(
            "hwgw_mqtt_published", "Messages the exporter published", value=bridge.exporter.published
        )
        yield CounterMetricFamily("hwgw_mqtt_commands", "Commands accepted from MQTT", value=bridge.commands.accepted)
        rejected = CounterMetricFamily(
            "hwgw_mqtt_rejected", "MQTT requests and imported messages refused, by reason", labels=["reason"]
        )
        reasons = dict(bridge.commands.rejected)
        if bridge.importer is not None:
            for reason, count in bridge.importer.rejected.items():
                reasons[reason] = reasons.get(reason, 0) + count
        reasons["unknown_topic"] = bridge.rejected_topics
        for reason, count in sorted(reasons.items()):
            rejected.add_metric([reason], count)
        yield rejected
        imported = bridge.importer.imported if bridge.importer is not None else 0
        yield CounterMetricFamily("hwgw_mqtt_imported", "Samples imported from other gateways", value=imported)
