"""The MQTT bridge against Debian's mosquitto: two gateway processes federated, a broker restart, the
documented topics and retained values, MQTT 3.1.1 `transaction` commands, bad input, HA discovery."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import signal
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import aiomqtt
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from tests.harness import RunningGateway, connect, gateway_config, health_faults, healthz, start_gateway
from tests.mosquitto_broker import Broker, mosquitto

__all__ = ["mosquitto"]

LAMP = """
[devices.lamp]
kind = "sim"
rate_hz = 20.0
leds = 2
"""


def mqtt_section(broker: Broker, name: str, extra: str = "") -> str:
    return (
        f'[mqtt]\nurl = "{broker.url}"\ngateway = "{name}"\nkeepalive_s = 2\n'
        f"reconnect_initial_s = 0.05\nreconnect_max_s = 0.3\n{extra}\n"
    )


async def start_a(tmp_path: Path, broker: Broker, extra: str = "", server: str = "") -> RunningGateway:
    config = gateway_config(tmp_path, server=server, extra=mqtt_section(broker, "lab-a", extra))
    return await start_gateway(tmp_path, config)


async def start_b(tmp_path: Path, broker: Broker) -> RunningGateway:
    config = gateway_config(tmp_path, devices=LAMP, extra=mqtt_section(broker, "lab-b", "import = true"))
    return await start_gateway(tmp_path, config.replace(str(tmp_path / "gw.sock"), str(tmp_path / "gw-b.sock")))


def is_device(device: str, status: str):
    return lambda m: m["op"] == "device" and m["device"] == device and m["status"] == status


async def metrics(gateway: RunningGateway) -> str:
    async with aiohttp.ClientSession() as session, session.get(gateway.base_url + "/metrics") as response:
        return await response.text()


def mqtt_client(broker: Broker, protocol: aiomqtt.ProtocolVersion = aiomqtt.ProtocolVersion.V5) -> aiomqtt.Client:
    return aiomqtt.Client("127.0.0.1", broker.port, protocol=protocol, identifier=f"test-{uuid.uuid4().hex[:8]}")


async def test_gateway_b_shows_and_commands_gateway_a_devices(tmp_path: Path, mosquitto: Broker) -> None:
    a = await start_a(tmp_path, mosquitto)
    b = await start_b(tmp_path, mosquitto)
    client = await connect(b, "ws")
    try:
        await client.wait_for(is_device("lab-a:sim-1", "connected"), timeout=10)
        devices = {d["id"]: d for d in (await client.ok("list_devices"))["devices"]}
        assert devices["lab-a:sim-1"]["kind"] == "sim"
        assert "led" in devices["lab-a:sim-1"]["accepts"]
        assert devices["lab-a:sim-1"]["capabilities"]["gateway"] == "lab-a"
        assert "lamp" in devices  # B's own device is there too, and not re-imported under another name
        assert not any(d.startswith("lab-b:") for d in devices)
        await client.ok("subscribe", topics=["lab-a:sim-1/**"])
        state = await client.wait_for(lambda m: m["op"] == "state" and m["topic"] == "lab-a:sim-1/state")
        assert state["type"] == "creos_messages/ControllerState"
        answer = await client.request(
            "command", device="lab-a:sim-1", type="led", data={"index": 1, "rgb": [0.0, 1.0, 0.0]}, timeout_s=3.0
        )
        assert answer["ok"], answer
        assert answer["data"] == {"outputs": "led"}
        effect = await client.wait_for(
            lambda m: m["op"] == "state" and m["topic"] == "lab-a:sim-1/outputs" and m["data"]["leds"][1] == [0, 1, 0]
        )
        assert effect["data"]["last_command"] == "led"
        # A refusal on A comes back with A's error code.
        refused = await client.request("command", device="lab-a:sim-1", type="led", data={"index": 9})
        assert refused["error"]["code"] == "invalid_argument", refused
        # A is killed: its last will (`offline`, which the broker sends for it) turns its devices
        # disconnected on B. The timeout only guards a hang: keepalive_s = 2 would send it by 3 s anyway.
        a.proc.send_signal(signal.SIGKILL)
        gone = await client.wait_for(is_device("lab-a:sim-1", "disconnected"), timeout=10.0)
        assert gone["detail"] == "gateway 'lab-a' is offline", gone
        client.pushed.clear()  # an earlier `connected` kept there must not pass for A's return below
        await a.stop()
        down = await client.request("command", device="lab-a:sim-1", type="led", data={})
        assert down["error"]["code"] == "unavailable"
        a = await start_a(tmp_path, mosquitto)
        await client.wait_for(is_device("lab-a:sim-1", "connected"), timeout=10)
        assert (await client.request("command", device="lab-a:sim-1", type="led", data={}))["ok"]
    finally:
        await client.close()
        assert await b.stop() == 0
        assert await a.stop() == 0


async def test_an_imported_device_says_connecting_then_connected_once(tmp_path: Path, mosquitto: Broker) -> None:
    b = await start_b(tmp_path, mosquitto)
    client = await connect(b, "ws")
    a = None
    try:
        a = await start_a(tmp_path, mosquitto)  # imported while the client watches
        statuses: list[str] = []

        async def watch(until: Callable[[], bool], timeout: float) -> None:
            async with asyncio.timeout(timeout):
                while not until():
                    message = await client.recv(timeout)
                    if message["op"] == "device" and message["device"] == "lab-a:sim-1":
                        statuses.append(message["status"])

        await watch(lambda: "connected" in statuses, 10.0)
        with contextlib.suppress(TimeoutError):
            await watch(lambda: False, 0.5)  # whatever follows the first `connected`
        first = statuses.index("connected")
        assert statuses[0] == "connecting", statuses
        assert set(statuses[first:]) == {"connected"}, statuses  # it was: connected, connecting, connected
        assert (await client.request("command", device="lab-a:sim-1", type="led", data={}))["ok"]
    finally:
        await client.close()
        assert await b.stop() == 0
        if a is not None:
            assert await a.stop() == 0


async def test_leases_end_when_the_remote_client_or_gateway_goes(tmp_path: Path, mosquitto: Broker) -> None:
    a = await start_a(tmp_path, mosquitto)
    b = await start_b(tmp_path, mosquitto)
    holder = await connect(b, "ws")
    watcher = await connect(a, "ws")  # watches the real device on A
    try:
        await holder.wait_for(is_device("lab-a:sim-1", "connected"), timeout=10)
        await watcher.ok("subscribe", topics=["sim-1/outputs"])

        def rumbling(on: bool):
            return lambda m: m["op"] == "state" and (m["data"]["rumble_low"] > 0) == on

        rumble = {"low": 0.5, "high": 0.5, "duration_s": 30.0}
        assert (await holder.request("command", device="lab-a:sim-1", type="rumble", data=rumble))["ok"]
        await watcher.wait_for(rumbling(True))
        await holder.close()  # B's client leaves: its lease on A's device ends
        await watcher.wait_for(rumbling(False), timeout=3)
        holder = await connect(b, "ws")
        assert (await holder.request("command", device="lab-a:sim-1", type="rumble", data=rumble))["ok"]
        await watcher.wait_for(rumbling(True))
        b.proc.send_signal(signal.SIGKILL)  # B's last will: A ends the leases of B's clients
        await watcher.wait_for(rumbling(False), timeout=3)
    finally:
        await holder.close()
        await watcher.close()
        await b.stop()
        assert await a.stop() == 0


async def test_broker_restart_is_survived(tmp_path: Path, mosquitto: Broker) -> None:
    a = await start_a(tmp_path, mosquitto)
    b = await start_b(tmp_path, mosquitto)
    client = await connect(b, "ws")
    try:
        await client.wait_for(is_device("lab-a:sim-1", "connected"), timeout=10)
        assert (await healthz(b))["mqtt"]["state"] == "connected"
        await mosquitto.stop()
        await client.wait_for(is_device("lab-a:sim-1", "disconnected"), timeout=15)  # hang guards only
        client.pushed.clear()  # an earlier `connected` kept there must not pass for the return below
        async with asyncio.timeout(15):
            while (health := await healthz(b))["mqtt"]["state"] == "connected":  # noqa: ASYNC110 - polled over HTTP
                await asyncio.sleep(0.05)
        assert health_faults(health) == []  # degraded: an imported device is away, the process is fine
        assert health["mqtt"]["state"] in ("connecting", "disconnected")
        # Local devices keep working while the broker is away.
        assert (await client.request("command", device="lamp", type="led", data={}))["ok"]
        await mosquitto.start()  # a fresh broker: nothing retained, so both gateways must republish
        await client.wait_for(is_device("lab-a:sim-1", "connected"), timeout=10)
        assert (await client.request("command", device="lab-a:sim-1", type="led", data={}))["ok"]
        assert (await healthz(a))["mqtt"]["state"] == "connected"
        assert (await healthz(b))["mqtt"]["connects"] >= 2
    finally:
        await client.close()
        assert await b.stop() == 0
        assert await a.stop() == 0


async def test_documented_topics_commands_bad_input_and_discovery(tmp_path: Path, mosquitto: Broker) -> None:
    budget = "max_requests_per_s = 50.0\nrequest_burst = 100"
    a = await start_a(tmp_path, mosquitto, "ha_discovery = true\nmax_payload_bytes = 1024", server=budget)
    try:
        await asyncio.sleep(0.5)
        # mosquitto_sub, Debian's own client, sees the documented retained topics.
        sub = shutil.which("mosquitto_sub")
        assert sub is not None, "mosquitto-clients is not installed (make test installs it)"
        proc = await asyncio.create_subprocess_exec(
            sub, "-h", "127.0.0.1", "-p", str(mosquitto.port), "-t", "hwgw/lab-a/#", "--retained-only", "-W", "3",
            "-v", "-V", "mqttv311", stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, _ = await proc.communicate()
        retained = dict(line.split(" ", 1) for line in out.decode().splitlines())
        assert retained["hwgw/lab-a/status"] == "online"
        listing = json.loads(retained["hwgw/lab-a/devices"])
        assert listing["gateway"] == "lab-a"
        assert [d["id"] for d in listing["devices"]] == ["sim-1"]
        availability = json.loads(retained["hwgw/lab-a/sim-1/availability"])
        assert availability["state"] == "online"
        assert availability["status"] == "connected"
        state = json.loads(retained["hwgw/lab-a/sim-1/state"])
        assert state["op"] == "state"
        assert state["topic"] == "sim-1/state"
        assert json.loads(retained["hwgw/lab-a/sim-1/outputs"])["type"] == "hwgateway/SimOutputs"

        # An MQTT 3.1.1 client commands through `transaction` and reads `<device>/response`.
        async with mqtt_client(mosquitto, aiomqtt.ProtocolVersion.V311) as old:
            await old.subscribe("hwgw/lab-a/sim-1/response", qos=1)
            command = {"type": "led", "data": {"index": 0, "rgb": [1, 0, 0]}, "transaction": "t-1"}
            await old.publish("hwgw/lab-a/sim-1/set", json.dumps(command), qos=1)
            async with asyncio.timeout(5):
                async for message in old.messages:
                    result = json.loads(message.payload)
                    break
            assert result == {"op": "result", "id": "t-1", "ok": True, "data": {"outputs": "led"}}

        # MQTT 5: Response Topic and Correlation Data; bad input answered with errors, never stopping the bridge.
        async with mqtt_client(mosquitto) as v5:
            await v5.subscribe("test/replies", qos=1)

            answered: list[bytes | None] = []  # the correlation data of every answer read

            async def ask(topic: str, payload: bytes, correlation: bytes) -> dict[str, Any]:
                properties = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
                properties.ResponseTopic = "test/replies"
                properties.CorrelationData = correlation
                await v5.publish(topic, payload, qos=1, properties=properties)
                async with asyncio.timeout(5):
                    async for message in v5.messages:
                        answered.append(message.properties.CorrelationData)  # type: ignore[union-attr]
                        if message.properties.CorrelationData == correlation:  # type: ignore[union-attr]
                            answer: dict[str, Any] = json.loads(message.payload)
                            return answer
                raise AssertionError("no answer")

            ok = await ask("hwgw/lab-a/sim-1/set", b'{"type": "sound", "data": {"frequency_hz": 880}}', b"c1")
            assert ok["ok"]
            assert ok["data"] == {"outputs": "sound"}
            cases = {
                b"not json": "bad_request",
                b"[1, 2]": "bad_request",
                b'{"type": 5}': "bad_request",
                b'{"type": "led", "colour": 1}': "bad_request",
                b'{"type": "led", "data": {"rgb": [2, 0, 0]}}': "invalid_argument",
                b'{"type": "led", "timeout_s": -1}': "invalid_argument",
                b'{"type": "nope"}': "unknown_command",
                b'{"type": "led", "data": "' + b"x" * 2000 + b'"}': "too_large",
            }
            for index, (payload, code) in enumerate(cases.items()):
                answer = await ask("hwgw/lab-a/sim-1/set", payload, f"bad{index}".encode())
                assert answer["ok"] is False, (payload, answer)
                assert answer["error"]["code"] == code, (payload, answer)
            unknown = await ask("hwgw/lab-a/ghost/set", b'{"type": "led"}', b"ghost")
            assert unknown["error"]["code"] == "unknown_device"
            # A flood: far past the request budget, the excess is refused with rate_limited.
            properties = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
            properties.ResponseTopic = "test/replies"
            properties.CorrelationData = b"flood"
            for _ in range(300):
                await v5.publish("hwgw/lab-a/sim-1/set", b'{"type": "sound", "data": {}}', qos=0, properties=properties)
            codes: list[str] = []
            with contextlib.suppress(TimeoutError):  # QoS 0 requests may be dropped on a busy host
                async with asyncio.timeout(15):
                    async for message in v5.messages:
                        answer = json.loads(message.payload)
                        codes.append("ok" if answer["ok"] else answer["error"]["code"])
                        if len(codes) == 300:
                            break
            assert "rate_limited" in codes
            assert "ok" in codes
            estop = await ask("hwgw/lab-a/estop", b"", b"stop")
            assert estop["ok"]
            assert estop["data"]["devices"] == [{"device": "sim-1", "ok": True}]
            # Without auth an unreadable estop stops too, and is answered once: with the stop's outcome.
            garbled = await ask("hwgw/lab-a/estop", b"\x00not json", b"garbled")
            assert garbled["ok"], garbled
            assert garbled["data"]["devices"] == [{"device": "sim-1", "ok": True}]
            after = await ask("hwgw/lab-a/sim-1/set", b'{"type": "led", "data": {}}', b"after")
            assert after["ok"], "the bridge keeps working after bad input"
            assert answered.count(b"garbled") == 1, answered[-5:]
        text = await metrics(a)
        for reason in (
            "bad_request",
            "invalid_argument",
            "unknown_command",
            "too_large",
            "unknown_device",
            "rate_limited",
        ):
            line = next(x for x in text.splitlines() if x.startswith(f'hwgw_mqtt_rejected_total{{reason="{reason}"}}'))
            assert float(line.rsplit(" ", 1)[1]) >= 1, line

        # Home Assistant discovery: the documents validate against the documented fields.
        documents = await retained_documents(mosquitto, "homeassistant/#")
        check_discovery(documents)
        components = {topic.split("/")[1] for topic in documents}
        assert components == {"binary_sensor", "light"}
        light = next(doc for topic, doc in documents.items() if topic.startswith("homeassistant/light/"))
        assert light["command_topic"] == "hwgw/lab-a/sim-1/set"
        async with mqtt_client(mosquitto) as ha:  # what Home Assistant sends when the light is turned off
            await ha.publish(light["command_topic"], light["command_off_template"], qos=1)
        assert (await healthz(a))["mqtt"]["state"] == "connected"
    finally:
        assert await a.stop() == 0


async def retained_documents(broker: Broker, pattern: str) -> dict[str, dict[str, Any]]:
    documents: dict[str, dict[str, Any]] = {}
    async with mqtt_client(broker) as client:
        await client.subscribe(pattern)
        try:
            async with asyncio.timeout(2.0):
                async for message in client.messages:
                    documents[str(message.topic)] = json.loads(message.payload)
        except TimeoutError:
            pass
    return documents


# The discovery fields of Home Assistant's MQTT integration docs (integrations/sensor.mqtt,
# binary_sensor.mqtt, light.mqtt "template schema", and the shared availability and device blocks).
COMMON = {"name", "unique_id", "object_id", "device", "availability", "availability_mode", "qos"}
FIELDS = {
    "sensor": COMMON | {"state_topic", "value_template", "device_class", "unit_of_measurement", "state_class",
                        "suggested_display_precision"},
    "binary_sensor": COMMON | {"state_topic", "value_template", "payload_on", "payload_off", "device_class"},
    "light": COMMON | {"schema", "command_topic", "command_on_template", "command_off_template", "optimistic",
                       "state_topic", "state_template", "red_template", "green_template", "blue_template"},
}  # fmt: skip
REQUIRED = {
    "sensor": {"state_topic"},
    "binary_sensor": {"state_topic"},
    "light": {"schema", "command_topic", "command_on_template", "command_off_template"},
}
DEVICE_FIELDS = {"identifiers", "connections", "name", "manufacturer", "model", "sw_version", "via_device"}
AVAILABILITY_FIELDS = {"topic", "payload_available", "payload_not_available", "value_template"}


def check_discovery(documents: dict[str, dict[str, Any]]) -> None:
    assert documents, "no discovery documents"
    for topic, document in documents.items():
        prefix, component, node, object_id, config = topic.split("/")
        assert (prefix, config) == ("homeassistant", "config")
        assert all(part.replace("_", "").replace("-", "").isalnum() for part in (node, object_id)), topic
        assert set(document) <= FIELDS[component], (topic, set(document) - FIELDS[component])
        assert REQUIRED[component] <= set(document), topic
        assert set(document["device"]) <= DEVICE_FIELDS
        assert document["device"]["identifiers"]
        assert document["availability_mode"] in ("all", "any", "latest")
        for entry in document["availability"]:
            assert set(entry) <= AVAILABILITY_FIELDS
            assert entry["topic"].startswith("hwgw/lab-a/")
        if component == "light":
            assert document["schema"] == "template"
            for key in ("command_on_template", "command_off_template"):
                assert json.loads(document[key])["type"] == "led"
        else:
            assert document["value_template"].startswith("{{")
            assert document["state_topic"].startswith("hwgw/lab-a/")


@pytest.mark.parametrize(
    ("table", "path"),
    [
        ('url = "http://x"', "mqtt.url"),
        ('url = "mqtt://"', "mqtt.url"),
        ('url = "mqtt://h/path"', "mqtt.url"),
        ('url = "mqtt://h:99999"', "mqtt.url"),
        ('url = "mqtt://h"\ngateway = "a/b"', "mqtt.gateway"),
        ('url = "mqtt://h"\ngateway = "a+"', "mqtt.gateway"),
        ('url = "mqtt://h"\ntopics = ["a//b"]', "mqtt.topics[0]"),
        ('url = "mqtt://h"\ncert_file = "c.pem"', "mqtt.key_file"),
        ('url = "mqtt://h"\nca_file = "ca.pem"', "mqtt.url"),
        ('url = "mqtt://h"\npublish_rate_hz = 0', "mqtt.publish_rate_hz"),
        ('url = "mqtt://h"\nimport = "yes"', "mqtt.import_"),
        ('url = "mqtt://h"\nbogus = 1', "mqtt.bogus"),
    ],
)
def test_mqtt_config_errors_name_their_key(table: str, path: str) -> None:
    from gateway.config import loads
    from gateway.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        loads(f"[mqtt]\n{table}\n")
    assert caught.value.path == path


def test_mqtt_is_off_unless_configured() -> None:
    from gateway.config import loads

    assert not loads("").mqtt.enabled
    config = loads('[mqtt]\nurl = "mqtts://user:pw@broker.example:8884"\nimport = true\n').mqtt
    assert config.enabled
    assert config.import_
    assert config.base == "hwgw"
