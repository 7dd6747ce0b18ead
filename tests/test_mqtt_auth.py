"""Tokens and roles on the MQTT face against Debian's mosquitto: MQTT 5 user property `token`, the
payload's `token` for MQTT 3.1.1, read/control/admin roles, device patterns, federation's `token_file`."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from gateway.credentials import hash_token
from tests.harness import connect, gateway_config, healthz
from tests.inprocess import start_in_process
from tests.mosquitto_broker import Broker, mosquitto
from tests.test_mqtt import is_device, mqtt_section

__all__ = ["mosquitto"]

READER = "reader-token-0123456789"
CONTROLLER = "thymio-teacher-0123456789"
ADMIN = "admin-token-0123456789abcdef"

DEVICES = """
[devices.sim-1]
kind = "sim"
rate_hz = 10.0
leds = 2

[devices.thymio-1]
kind = "sim"
rate_hz = 10.0
leds = 2
"""


def auth_section(tmp_path: Path) -> str:
    admin_file = tmp_path / "admin.token"
    admin_file.write_text(ADMIN + "\n")
    return f"""
[auth.tokens.reader]
hash = "{hash_token(READER)}"
role = "read"

[auth.tokens.teacher]
hash = "{hash_token(CONTROLLER)}"
role = "control"
devices = ["thymio-*"]

[auth.tokens.admin]
token_file = "{admin_file}"
role = "admin"
"""


class Requester:
    """An MQTT 5 client asking gateway `lab-a` and reading its answers by Correlation Data."""

    def __init__(self, client: aiomqtt.Client) -> None:
        self.client = client
        self.answers: dict[bytes, asyncio.Future[dict[str, Any]]] = {}

    async def run(self) -> None:
        async for message in self.client.messages:
            correlation = getattr(message.properties, "CorrelationData", None)
            future = self.answers.pop(correlation, None) if isinstance(correlation, bytes) else None
            if future is not None:
                future.set_result(json.loads(message.payload))

    async def ask(self, topic: str, body: dict[str, Any], token: str | None = None) -> dict[str, Any]:
        properties = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
        properties.ResponseTopic = "test/replies"
        correlation = uuid.uuid4().bytes
        properties.CorrelationData = correlation
        if token is not None:
            properties.UserProperty = [("token", token)]
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.answers[correlation] = future
        await self.client.publish(topic, json.dumps(body), qos=1, properties=properties)
        async with asyncio.timeout(15):
            return await future


LED = {"type": "led", "data": {"index": 0, "rgb": [1, 0, 0]}}


async def test_mqtt_commands_need_a_token_with_the_right_role_and_devices(tmp_path: Path, mosquitto: Broker) -> None:
    config = gateway_config(tmp_path, devices=DEVICES, extra=auth_section(tmp_path) + mqtt_section(mosquitto, "lab-a"))
    a = await start_in_process(tmp_path, config)
    token_file = tmp_path / "federation.token"
    token_file.write_text(CONTROLLER + "\n")
    b_extra = mqtt_section(mosquitto, "lab-b", f'import = true\ntoken_file = "{token_file}"')
    b_config = gateway_config(tmp_path, devices="", extra=b_extra)
    b = await start_in_process(tmp_path, b_config.replace(str(tmp_path / "gw.sock"), str(tmp_path / "gw-b.sock")))
    identifier = f"test-{uuid.uuid4().hex[:8]}"
    try:
        async with aiomqtt.Client("127.0.0.1", mosquitto.port, protocol=aiomqtt.ProtocolVersion.V5,
                                  identifier=identifier) as v5:  # fmt: skip
            await v5.subscribe("test/replies", qos=1)
            requester = Requester(v5)
            reading = asyncio.create_task(requester.run())
            sim, thymio = "hwgw/lab-a/sim-1/set", "hwgw/lab-a/thymio-1/set"
            # admin: every device.
            assert (await requester.ask(sim, LED, ADMIN))["ok"]
            # control limited to thymio-*: thymio-1 yes, sim-1 refused.
            assert (await requester.ask(thymio, LED, CONTROLLER))["ok"]
            refused = await requester.ask(sim, LED, CONTROLLER)
            assert refused["error"]["code"] == "unauthorized", refused
            assert "devices do not include it" in refused["error"]["message"]
            # read: every command refused; estop still works for an accepted token.
            read_only = await requester.ask(thymio, LED, READER)
            assert read_only["error"]["code"] == "unauthorized"
            assert "read-only" in read_only["error"]["message"]
            stopped = await requester.ask("hwgw/lab-a/estop", {}, READER)
            assert stopped["ok"], stopped
            # No token at all: refused, saying how to give one.
            missing = await requester.ask(sim, LED)
            assert missing["error"]["code"] == "unauthorized"
            assert "'token'" in missing["error"]["message"]
            unauthenticated_stop = await requester.ask("hwgw/lab-a/estop", {})
            assert unauthenticated_stop["error"]["code"] == "unauthorized"

            # An MQTT 3.1.1 client gives its token in the payload.
            async with aiomqtt.Client("127.0.0.1", mosquitto.port, protocol=aiomqtt.ProtocolVersion.V311,
                                      identifier=identifier + "-old") as old:  # fmt: skip
                await old.subscribe("hwgw/lab-a/thymio-1/response", qos=1)
                for transaction, token in (("t-ok", CONTROLLER), ("t-read", READER)):
                    body = {**LED, "transaction": transaction, "token": token}
                    await old.publish(thymio, json.dumps(body), qos=1)
                    async with asyncio.timeout(10):
                        async for message in old.messages:
                            result = json.loads(message.payload)
                            break
                    assert result["id"] == transaction
                    assert result["ok"] is (token == CONTROLLER), result

            # Federation: B presents its token_file's token (control of thymio-*) to A.
            client = await connect(b, "ws")
            try:
                await client.wait_for(is_device("lab-a:thymio-1", "connected"), timeout=10)
                await client.wait_for(is_device("lab-a:sim-1", "connected"), timeout=10)
                forwarded = await client.request("command", device="lab-a:thymio-1", type="led", data=LED["data"])
                assert forwarded["ok"], forwarded
                beyond = await client.request("command", device="lab-a:sim-1", type="led", data=LED["data"])
                assert beyond["error"]["code"] == "unauthorized", beyond
            finally:
                await client.close()

            # A wrong token: refused, and the next attempts through MQTT are slowed (AuthGuard).
            # (That a slowed attempt waits its delay is test_security's, on a sleep it records.)
            logged = len(a.logs)
            assert (await requester.ask(sim, LED, "garbage-token"))["error"]["code"] == "unauthorized"
            assert (await requester.ask(sim, LED, "garbage-token-2"))["error"]["code"] == "unauthorized"
            warnings = [str(line.get("event")) for line in a.logs[logged:] if "wrong token" in str(line.get("event"))]
            assert any("(next attempt waits 0.25 s)" in warning for warning in warnings), warnings
            # The gateway and its bridge keep running; a known client is not slowed.
            assert (await requester.ask(sim, LED, ADMIN))["ok"]
            health = await healthz(a)
            assert health["mqtt"]["state"] == "connected"
            assert health["mqtt"]["auth"] is True
            reading.cancel()
    finally:
        await b.stop()
        assert await a.stop() == 0


async def test_an_mqtt_estop_waits_behind_no_flood_of_wrong_tokens(tmp_path: Path, mosquitto: Broker) -> None:
    config = gateway_config(tmp_path, devices=DEVICES, extra=auth_section(tmp_path) + mqtt_section(mosquitto, "lab-a"))
    gateway = await start_in_process(tmp_path, config)
    identifier = f"test-{uuid.uuid4().hex[:8]}"
    try:
        async with (
            aiomqtt.Client("127.0.0.1", mosquitto.port, protocol=aiomqtt.ProtocolVersion.V5,
                           identifier=identifier + "-flood") as flooder,
            aiomqtt.Client("127.0.0.1", mosquitto.port, protocol=aiomqtt.ProtocolVersion.V5,
                           identifier=identifier + "-admin") as admin,
        ):  # fmt: skip
            await flooder.subscribe("test/flood-replies", qos=0)
            await admin.subscribe("test/replies", qos=1)
            requester = Requester(admin)
            reading = asyncio.create_task(requester.run())
            rate_limited = asyncio.Event()

            async def read_flood() -> None:
                async for message in flooder.messages:
                    if json.loads(message.payload).get("error", {}).get("code") == "rate_limited":
                        rate_limited.set()

            reading_flood = asyncio.create_task(read_flood())
            # Wrong tokens, each command carrying a 40 KB field: each one would wait its turn at the
            # shared MQTT throttle (up to 8 s each) and hold its payload meanwhile.
            big = {"type": "led", "data": {"index": 0, "rgb": [1, 0, 0], "pad": "x" * 40_000}}
            for number in range(300):
                properties = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
                properties.ResponseTopic = "test/flood-replies"
                properties.UserProperty = [("token", f"wrong-token-{number}")]
                await flooder.publish("hwgw/lab-a/sim-1/set", json.dumps(big), qos=0, properties=properties)
            stopped = await requester.ask("hwgw/lab-a/estop", {}, ADMIN)  # within Requester.ask's 15 s
            assert stopped["ok"], stopped
            assert {device["device"] for device in stopped["data"]["devices"]} >= {"sim-1", "thymio-1"}
            # The flood beyond what may wait is refused at once, by name, not queued.
            await asyncio.wait_for(rate_limited.wait(), 10)
            reading.cancel()
            reading_flood.cancel()
    finally:
        assert await gateway.stop() == 0


async def test_a_lock_taken_on_ws_refuses_mqtt_commands_and_estop_still_works(
    tmp_path: Path, mosquitto: Broker
) -> None:
    # The MQTT entry of the face conformance (tests/test_conformance.py runs the socket faces).
    config = gateway_config(tmp_path, devices=DEVICES, extra=auth_section(tmp_path) + mqtt_section(mosquitto, "lab-a"))
    gateway = await start_in_process(tmp_path, config)
    holder = await connect(gateway, "ws")
    try:
        await holder.ok("auth", token=ADMIN)
        await holder.ok("lock", device="sim-1")
        async with aiomqtt.Client("127.0.0.1", mosquitto.port, protocol=aiomqtt.ProtocolVersion.V5,
                                  identifier=f"test-{uuid.uuid4().hex[:8]}") as v5:  # fmt: skip
            await v5.subscribe("test/replies", qos=1)
            requester = Requester(v5)
            reading = asyncio.create_task(requester.run())
            locked = await requester.ask("hwgw/lab-a/sim-1/set", LED, ADMIN)
            assert locked["error"]["code"] == "locked", locked
            assert (await requester.ask("hwgw/lab-a/thymio-1/set", LED, ADMIN))["ok"]  # another device: not locked
            assert (await requester.ask("hwgw/lab-a/estop", {}, READER))["ok"]  # estop goes through any lock
            await holder.ok("unlock", device="sim-1")
            assert (await requester.ask("hwgw/lab-a/sim-1/set", LED, ADMIN))["ok"]
            reading.cancel()
    finally:
        await holder.close()
        assert await gateway.stop() == 0
