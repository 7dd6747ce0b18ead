"""docs/schemas against the code and against live traffic of the real daemon on every transport.

Every request a test sends is checked against its `request.<op>.json` (or must break it, when the
test sends a bad request on purpose), and every message a client receives is checked against its
`server.<op>.json` the moment it arrives; the data of an ok result is also checked against the
`$defs/<op>_data` of server.result.json, and the data of a state push against `describe`'s schema.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import re
import signal
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import msgpack
import pytest
import websockets
from jsonschema import Draft202012Validator  # type: ignore[import-untyped, unused-ignore]

from gateway import PROTOCOL_VERSION
from gateway.errors import ErrorCode
from gateway.faces.native.session import CAPABILITIES, OPS
from tests.harness import (
    TRANSPORTS,
    Client,
    GatewayUnderTest,
    RunningGateway,
    TransportName,
    WsClient,
    connect,
    gateway_config,
    start_gateway,
)
from tests.inprocess import running_gateway

#: The `gateway` fixture runs in the test's loop; the SIGTERM test starts a process of its own.
pytestmark = pytest.mark.in_process

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "docs" / "schemas"
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
SERVER_OPS = ("hello", "result", "state", "device", "close")
RequestId = int | str | None


@functools.cache
def schema(name: str) -> dict[str, Any]:
    """The parsed docs/schemas/<name>.json."""
    loaded: dict[str, Any] = json.loads((SCHEMA_DIR / f"{name}.json").read_text(encoding="utf-8"))
    return loaded


@functools.cache
def validator(name: str) -> Any:
    return Draft202012Validator(schema(name))


@functools.cache
def result_data_validator(op: str) -> Any:
    """Validates the data of an ok result of `op` with server.result.json's `$defs/<op>_data`."""
    defs = schema("server.result")["$defs"]
    assert f"{op}_data" in defs, f"server.result.json has no $defs/{op}_data"
    return Draft202012Validator({"$schema": DRAFT_2020_12, "$defs": defs, "$ref": f"#/$defs/{op}_data"})


def violations(checker: Any, instance: object) -> list[str]:
    return [
        f"{'/'.join(map(str, error.absolute_path)) or '<root>'}: {error.message}"
        for error in checker.iter_errors(instance)
    ]


def assert_valid(name: str, instance: object) -> None:
    problems = violations(validator(name), instance)
    assert not problems, f"{name}.json refuses {instance!r}: {problems}"


def assert_invalid(name: str, instance: object) -> None:
    assert violations(validator(name), instance), f"{name}.json accepts the bad request {instance!r}"


def request_ops() -> set[str]:
    return {path.name.split(".")[1] for path in SCHEMA_DIR.glob("request.*.json")}


class Checked:
    """A harness client whose every request sent and message received is checked against the schemas."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.pushed = client.pushed
        self.received: Counter[str] = Counter()
        self.error_codes: Counter[str] = Counter()
        self.data_checked: Counter[str] = Counter()
        self._sent_ops: dict[RequestId, str] = {}
        self._next_is_invalid = False
        client.on_send = self._check_sent
        client.on_receive = self._check_received
        self._check_received(client.hello)

    def _check_sent(self, request: dict[str, Any]) -> None:
        name = f"request.{request.get('op')}"
        if not self._next_is_invalid:
            assert_valid(name, request)
        elif (SCHEMA_DIR / f"{name}.json").exists():
            assert_invalid(name, request)
        self._next_is_invalid = False
        request_id = request.get("id")
        if isinstance(request_id, int | str):
            self._sent_ops[request_id] = str(request.get("op"))

    def _check_received(self, message: dict[str, Any]) -> None:
        op = message.get("op")
        assert op in SERVER_OPS, f"a message with an undocumented op: {message!r}"
        assert_valid(f"server.{op}", message)
        self.received[op] += 1
        if op == "result":
            if message["ok"]:
                request_op = self._sent_ops.get(message["id"])
                if request_op is not None:
                    problems = violations(result_data_validator(request_op), message["data"])
                    assert not problems, f"{request_op} result data: {problems}: {message!r}"
                    self.data_checked[request_op] += 1
            else:
                self.error_codes[message["error"]["code"]] += 1

    async def send(self, request: dict[str, Any], *, valid: bool = True) -> None:
        """Send `request`, which must satisfy its request schema (or, with valid=False, break it)."""
        self._next_is_invalid = not valid
        await self.client.send(request)

    async def result(self, request_id: RequestId, timeout: float = 5.0) -> dict[str, Any]:
        return await self.client.result(request_id, timeout)

    async def request(self, op: str, **fields: Any) -> dict[str, Any]:
        return await self.client.request(op, **fields)

    async def ok(self, op: str, **fields: Any) -> dict[str, Any]:
        return await self.client.ok(op, **fields)

    async def error(self, op: str, code: ErrorCode, **fields: Any) -> str:
        error = await self.client.error(op, **fields)
        assert error["code"] == code.value, error
        return error["message"]

    async def refused(
        self, request: dict[str, Any], code: ErrorCode, *, expect_id: RequestId, valid: bool = False
    ) -> str:
        """Send a request the gateway must refuse with `code`, answering with id `expect_id`."""
        await self.send(request, valid=valid)
        answer = await self.result(expect_id)
        assert answer["ok"] is False, answer
        assert answer["error"]["code"] == code.value, (request, answer)
        message: str = answer["error"]["message"]
        return message

    async def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 5.0) -> dict[str, Any]:
        return await self.client.wait_for(predicate, timeout)

    async def closed(self, timeout: float = 5.0) -> BaseException:
        """Wait until the gateway ends the connection; return how the client saw it end."""
        try:
            while True:
                self.pushed.append(await self.client.recv(timeout))
        except (ConnectionError, websockets.ConnectionClosed) as error:
            return error


@contextlib.asynccontextmanager
async def running_process(tmp_path: Path, config: str) -> AsyncIterator[RunningGateway]:
    """A gateway process of our own (for a SIGTERM), which must exit with 0 when stopped."""
    gateway = await start_gateway(tmp_path, config)
    try:
        yield gateway
    finally:
        code = await gateway.stop()
    assert code == 0, gateway.logs[-20:]


# -- the schema files --------------------------------------------------------------------------


def test_every_schema_file_is_a_strict_draft_2020_12_schema() -> None:
    names = {path.name for path in SCHEMA_DIR.glob("*.json")}
    expected = {f"request.{op}.json" for op in request_ops()} | {f"server.{op}.json" for op in SERVER_OPS}
    assert names == expected | {"frame.multi_state.json"}
    assert len(request_ops()) == 16
    multi = schema("frame.multi_state")
    Draft202012Validator.check_schema(multi)
    assert multi["type"] == "array"
    assert multi["minItems"] == 2
    for name in sorted(names - {"frame.multi_state.json"}):
        document = schema(name.removesuffix(".json"))
        assert document["$schema"] == DRAFT_2020_12, name
        Draft202012Validator.check_schema(document)
        assert document["type"] == "object", name
        assert document["additionalProperties"] is False, name
        assert document["properties"]["op"] == {"const": name.split(".")[1]}, name
        assert {"op"} <= set(document["required"]) <= set(document["properties"]), name
        if name.startswith("request."):
            assert {"op", "id"} <= set(document["required"]), name
    readme = (SCHEMA_DIR / "README.md").read_text(encoding="utf-8")
    for name in names:
        assert f"`{name}`" in readme, f"README.md does not list {name}"


def test_every_op_of_the_session_has_a_request_schema() -> None:
    assert {*OPS, "command"} == request_ops()


def test_error_codes_and_hello_constants_match_the_code() -> None:
    codes = [code.value for code in ErrorCode]
    result = schema("server.result")
    assert result["$defs"]["error_code"]["enum"] == codes
    assert schema("server.close")["properties"]["code"]["enum"] == codes
    hello = schema("server.hello")["properties"]
    assert hello["protocol"]["const"] == PROTOCOL_VERSION
    assert {f"{op}_data" for op in request_ops()} <= set(result["$defs"])
    assert_valid("server.hello", {
        "op": "hello", "server": "hwgateway", "version": "0.1.0", "protocol": PROTOCOL_VERSION,
        "capabilities": list(CAPABILITIES), "auth_required": False, "session": "c1",
        "limits": {"max_request_bytes": 65536, "max_frame_bytes": 1048576, "max_requests_per_s": 200.0},
    })  # fmt: skip
    # The result envelope: data only with ok, error only without.
    assert_invalid("server.result", {"op": "result", "id": 1, "ok": True, "error": {"code": "timeout", "message": ""}})
    assert_invalid("server.result", {"op": "result", "id": 1, "ok": False, "data": {}})
    assert_invalid("server.result", {"op": "result", "id": 1, "ok": False, "error": {"code": "nope", "message": ""}})


# -- live traffic with the `gateway` fixture (sim-1: 50 Hz, 3 LEDs) ----------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_every_op_live(gateway: GatewayUnderTest, transport: TransportName) -> None:
    client = Checked(await connect(gateway, transport))
    hello = client.client.hello
    assert hello["protocol"] == PROTOCOL_VERSION
    assert hello["capabilities"] == list(CAPABILITIES)
    assert hello["auth_required"] is False

    pong = await client.ok("ping")
    assert pong["pong"] is True
    open_access = {"authenticated": True, "name": "open", "role": "admin", "devices": ["*"]}
    assert await client.ok("auth", token="any token works without [auth] tokens") == open_access

    devices = (await client.ok("list_devices"))["devices"]
    assert [device["id"] for device in devices] == ["sim-1"]
    assert devices[0]["status"] == "connected"
    assert devices[0]["accepts"] == ["led", "sound", "rumble"]
    assert {"sim-1/state", "sim-1/outputs"} <= set(devices[0]["topics"])

    kinds = {entry["type"]: entry["kind"] for entry in (await client.ok("describe"))["types"]}
    assert kinds["led"] == "command"
    assert kinds["wiimote/State"] == "message"
    assert kinds["asebaros_msgs/GetVariable"] == "service"
    for type_name in ("led", "creos_messages/ControllerState", "asebaros_msgs/GetVariable"):
        described = await client.ok("describe", type=type_name)
        assert described["type"] == type_name
        Draft202012Validator.check_schema(described["schema"])
        assert ("response_schema" in described) == (kinds[type_name] == "service")
    variable = await client.ok("describe", type="asebaros_msgs/GetVariable")
    Draft202012Validator.check_schema(variable["response_schema"])
    assert set(variable["response_schema"]["properties"]) == {"data"}

    subscribed = await client.ok("subscribe", topics=["sim-1/*"], max_rate_hz=25)
    assert sorted(subscribed["topics"]) == ["sim-1/outputs", "sim-1/state"]
    assert await client.ok("command", device="sim-1", type="led", data={"index": 1, "rgb": [0, 1, 0]}) == {
        "outputs": "led"
    }
    outputs = await client.wait_for(
        lambda m: m["op"] == "state" and m["topic"] == "sim-1/outputs" and m["data"]["last_command"] == "led"
    )
    assert outputs["type"] == "hwgateway/SimOutputs"
    assert outputs["data"]["leds"][1] == [0.0, 1.0, 0.0]
    assert await client.ok("estop") == {"devices": [{"device": "sim-1", "ok": True}]}

    states = [await client.wait_for(lambda m: m["op"] == "state" and m["topic"] == "sim-1/state") for _ in range(5)]
    seqs = [state["seq"] for state in states]
    assert seqs == sorted(set(seqs)), seqs
    assert all(state["type"] == "creos_messages/ControllerState" for state in states)
    assert all(state["stamp"] <= state["recv_stamp"] for state in states)
    assert await client.ok("unsubscribe", subscription=subscribed["subscription"]) == {}
    session = hello["session"]
    assert await client.ok("lock", device="sim-1") == {"device": "sim-1", "locked_by": session}
    locked = await client.wait_for(lambda m: m["op"] == "device" and m["locked_by"] == session)
    assert locked["device"] == "sim-1"
    assert (await client.ok("list_devices"))["devices"][0]["locked_by"] == session
    assert await client.ok("unlock", device="sim-1") == {"device": "sim-1", "locked_by": None}
    await client.wait_for(lambda m: m["op"] == "device" and m["locked_by"] is None)
    assert await client.ok("configure", max_frame_bytes=4096) == {"multi_state": False, "max_frame_bytes": 4096}
    reloaded = await client.ok("reload")  # the file as it was: nothing changes
    scanned = await client.ok("scan", families=["serial"], timeout_s=0.5)  # no Thymio port here
    assert (scanned["findings"], scanned["skipped"], scanned["config"]) == ([], [], "")
    assert (reloaded["unchanged"], reloaded["added"], reloaded["restart_needed"]) == (["sim-1"], [], [])

    # The data of every state push received matches the schema `describe` gives for its type.
    all_states = [*states, outputs, *(m for m in client.pushed if m["op"] == "state")]
    for type_name in sorted({state["type"] for state in all_states}):
        data_schema = Draft202012Validator((await client.ok("describe", type=type_name))["schema"])
        for state in all_states:
            if state["type"] == type_name:
                assert not violations(data_schema, state["data"]), state

    # Requests valid by the schemas that the gateway refuses on their merits.
    await client.error("describe", ErrorCode.INVALID_ARGUMENT, type="no_such/Type")
    await client.error("unsubscribe", ErrorCode.INVALID_ARGUMENT, subscription=subscribed["subscription"])
    await client.error("command", ErrorCode.UNKNOWN_DEVICE, device="sim-9", type="led")
    await client.error("configure", ErrorCode.INVALID_ARGUMENT, max_frame_bytes=hello["limits"]["max_frame_bytes"] + 1)
    await client.error("command", ErrorCode.UNKNOWN_COMMAND, device="sim-1", type="wiimote/State")
    await client.error("command", ErrorCode.UNKNOWN_COMMAND, device="sim-1", type="thymio_msgs/Led")
    message = await client.error("command", ErrorCode.INVALID_ARGUMENT, device="sim-1", type="led", data={"index": 3})
    assert message.startswith("data.index")
    message = await client.error(
        "command", ErrorCode.INVALID_ARGUMENT, device="sim-1", type="sound", data={"volume": 2}
    )
    assert message.startswith("data.volume")

    assert client.received["hello"] == 1
    assert client.received["state"] >= 6
    # `pair` needs BlueZ: its data is checked live against the same $defs/pair_data in tests/test_pairing.py,
    # on python-dbusmock's BlueZ (this gateway's system bus has none, or a real one). The device-option
    # ops need `[server] device_overrides`: tests/test_device_options.py checks their data.
    assert set(client.data_checked) == request_ops() - {"pair", "device_options", "configure_device"}
    assert set(client.error_codes) == {"invalid_argument", "unknown_device", "unknown_command"}
    await client.client.close()


BAD_REQUESTS: list[tuple[dict[str, Any], ErrorCode]] = [
    ({"op": "ping", "id": "b1", "extra": 1}, ErrorCode.BAD_REQUEST),
    ({"op": "auth", "id": "b2"}, ErrorCode.BAD_REQUEST),
    ({"op": "auth", "id": "b3", "token": ""}, ErrorCode.BAD_REQUEST),
    ({"op": "auth", "id": "b4", "token": 42}, ErrorCode.BAD_REQUEST),
    ({"op": "describe", "id": "b5", "type": ""}, ErrorCode.BAD_REQUEST),
    ({"op": "subscribe", "id": "b6", "topics": []}, ErrorCode.BAD_REQUEST),
    ({"op": "subscribe", "id": "b7", "topics": "sim-1/*"}, ErrorCode.BAD_REQUEST),
    ({"op": "subscribe", "id": "b8", "topics": ["sim-1/***"]}, ErrorCode.INVALID_ARGUMENT),
    ({"op": "subscribe", "id": "b9", "topics": ["sim 1/state"]}, ErrorCode.INVALID_ARGUMENT),
    ({"op": "subscribe", "id": "b10", "topics": ["sim-1//state"]}, ErrorCode.INVALID_ARGUMENT),
    ({"op": "subscribe", "id": "b11", "topics": ["s"] * 65}, ErrorCode.INVALID_ARGUMENT),
    ({"op": "subscribe", "id": "b12", "topics": ["sim-1/*"], "max_rate_hz": 0}, ErrorCode.INVALID_ARGUMENT),
    ({"op": "subscribe", "id": "b13", "topics": ["sim-1/*"], "max_rate_hz": 10001}, ErrorCode.INVALID_ARGUMENT),
    ({"op": "subscribe", "id": "b14", "topics": ["sim-1/*"], "max_rate_hz": True}, ErrorCode.INVALID_ARGUMENT),
    ({"op": "unsubscribe", "id": "b15"}, ErrorCode.BAD_REQUEST),
    ({"op": "unsubscribe", "id": "b16", "subscription": "1"}, ErrorCode.BAD_REQUEST),
    ({"op": "command", "id": "b17", "type": "led"}, ErrorCode.BAD_REQUEST),
    ({"op": "command", "id": "b18", "device": "sim-1"}, ErrorCode.BAD_REQUEST),
    ({"op": "command", "id": "b19", "device": "sim-1", "type": "led", "timeout_s": 0}, ErrorCode.INVALID_ARGUMENT),
    ({"op": "command", "id": "b20", "device": "sim-1", "type": "led", "timeout_s": 601}, ErrorCode.INVALID_ARGUMENT),
    (
        {"op": "command", "id": "b20a", "device": "sim-1", "type": "led", "timeout_s": 1e-300},
        ErrorCode.INVALID_ARGUMENT,
    ),
    (
        {"op": "command", "id": "b20b", "device": "sim-1", "type": "led", "timeout_s": 0.0009},
        ErrorCode.INVALID_ARGUMENT,
    ),
    ({"op": "command", "id": "b21", "device": "sim-1", "type": "led", "data": [1]}, ErrorCode.INVALID_ARGUMENT),
    ({"op": "estop", "id": "b22", "now": True}, ErrorCode.BAD_REQUEST),
    ({"op": 7, "id": "b23"}, ErrorCode.BAD_REQUEST),
]
#: Requests without a usable id: answered with id null.
NO_ID_REQUESTS: list[dict[str, Any]] = [
    {"op": "ping"},
    {"op": "ping", "id": None},
    {"op": "ping", "id": True},
    {"op": "ping", "id": 1.5},
    {"op": "ping", "id": [1]},
    {"op": "ping", "id": "x" * 129},
]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_schemas_and_gateway_agree_on_bad_requests(gateway: GatewayUnderTest, transport: TransportName) -> None:
    client = Checked(await connect(gateway, transport))
    for request, code in BAD_REQUESTS:
        await client.refused(request, code, expect_id=request["id"])
    for request in NO_ID_REQUESTS:
        await client.refused(request, ErrorCode.BAD_REQUEST, expect_id=None)
    longest_id = {"op": "ping", "id": "x" * 128}
    await client.send(longest_id)
    assert (await client.result(longest_id["id"]))["ok"] is True

    # The fields each op accepts, as the gateway lists them, are the properties of its schema.
    for op in sorted(request_ops()):
        request = {"op": op, "id": f"fields-{op}", "zz_unknown": 1}
        message = await client.refused(request, ErrorCode.BAD_REQUEST, expect_id=request["id"])
        listed = re.search(r"\(fields: ([^)]*)\)$", message)
        assert listed is not None, message
        assert set(listed.group(1).split(", ")) == set(schema(f"request.{op}")["properties"]), op

    # The ops the gateway knows, as it lists them, are the request schemas.
    message = await client.refused({"op": "reboot", "id": "u1"}, ErrorCode.UNKNOWN_OP, expect_id="u1")
    listed = re.search(r"\(ops: ([^)]*)\)$", message)
    assert listed is not None, message
    assert set(listed.group(1).split(", ")) == request_ops()

    # Frames that are not a request map.
    if isinstance(client.client, WsClient):
        await client.client.ws.send(b"\x81\x00")
        assert "binary frames" in (await client.result(None))["error"]["message"]
        await client.client.send_raw(b'{"op": "ping", "id": ')
        assert "not valid JSON" in (await client.result(None))["error"]["message"]
        await client.client.send_raw(b"[1, 2]")
    else:
        await client.client.send_raw(msgpack.packb([1, 2]))
    answer = await client.result(None)
    assert answer["error"] == {"code": "bad_request", "message": "a request must be a map, got list"}
    assert set(client.error_codes) == {"bad_request", "invalid_argument", "unknown_op"}
    assert await client.ok("ping")  # the connection stays open after every one of them
    await client.client.close()


# -- live traffic with gateways of our own -----------------------------------------------------

TOKEN = "s3cret-token-0123"
STRICT_SERVER = (
    "max_request_bytes = 1024\nmax_frame_bytes = 4096\nmax_inflight_commands = 1\n"
    "max_requests_per_s = 0.1\nrequest_burst = 60\n"
)
STRICT_DEVICES = """
[devices.slow]
kind = "sim"
rate_hz = 5.0
command_latency_s = 0.5
failing_commands = ["sound"]

[devices.late]
kind = "sim"
connect_delay_s = 3600.0
"""


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_auth_and_every_error_code_live(tmp_path: Path, transport: TransportName) -> None:
    config = gateway_config(tmp_path, STRICT_DEVICES, STRICT_SERVER, f'[auth]\ntokens = ["{TOKEN}"]\n')
    async with running_gateway(tmp_path, config) as gateway:
        client = Checked(await connect(gateway, transport))
        assert client.client.hello["auth_required"] is True
        assert client.client.hello["limits"] == {
            "max_request_bytes": 1024,
            "max_frame_bytes": 4096,
            "max_requests_per_s": 0.1,
        }

        # Before auth only auth and ping are served.
        assert (await client.ok("ping"))["pong"] is True
        await client.error("list_devices", ErrorCode.UNAUTHORIZED)
        await client.error("command", ErrorCode.UNAUTHORIZED, device="slow", type="led")
        await client.error("estop", ErrorCode.UNAUTHORIZED)
        assert await client.error("auth", ErrorCode.UNAUTHORIZED, token="wrong") == "token refused"
        assert (await client.ok("auth", token=TOKEN))["role"] == "admin"
        statuses = {device["id"]: device["status"] for device in (await client.ok("list_devices"))["devices"]}
        assert statuses == {"slow": "connected", "late": "connecting"}

        await client.refused({"op": "reboot", "id": "r"}, ErrorCode.UNKNOWN_OP, expect_id="r")
        await client.refused({"op": "ping", "id": "p", "x": 1}, ErrorCode.BAD_REQUEST, expect_id="p")
        big = {"op": "describe", "id": "big", "type": "x" * 2000}  # valid, but over max_request_bytes
        message = await client.refused(big, ErrorCode.TOO_LARGE, expect_id="big", valid=True)
        assert "exceeds the 1024-byte limit" in message
        await client.error("command", ErrorCode.UNKNOWN_DEVICE, device="nope", type="led")
        await client.error("command", ErrorCode.UNKNOWN_COMMAND, device="slow", type="wiimote/TimedSwitch")
        await client.error("command", ErrorCode.INVALID_ARGUMENT, device="slow", type="led", data={"rgb": [2, 0, 0]})
        await client.error("command", ErrorCode.UNAVAILABLE, device="late", type="led")
        await client.error("command", ErrorCode.DEVICE_ERROR, device="slow", type="sound")
        await client.error("command", ErrorCode.TIMEOUT, device="slow", type="led", timeout_s=0.1)
        holder = Checked(await connect(gateway, transport))
        await holder.ok("auth", token=TOKEN)
        await holder.ok("lock", device="slow")
        message = await client.error("command", ErrorCode.LOCKED, device="slow", type="led")
        assert message == f"device 'slow' is locked by client {holder.client.hello['session']}"
        await holder.client.close()
        await client.wait_for(lambda m: m["op"] == "device" and m["device"] == "slow" and m["locked_by"] is None)

        # max_inflight_commands = 1: a second command while the first runs is refused.
        first = {"op": "command", "id": "c1", "device": "slow", "type": "rumble", "data": {"duration_s": 0.1}}
        second = {"op": "command", "id": "c2", "device": "slow", "type": "led"}
        await client.send(first)
        await client.send(second)
        refused = await client.result("c2")
        assert refused["error"]["code"] == "rate_limited"
        assert "in flight" in refused["error"]["message"]
        assert (await client.result("c1"))["data"] == {"outputs": "rumble"}

        # max_requests_per_s = 0.1 after a burst of 60: ping until refused; estop is exempt.
        for _ in range(61):
            answer = await client.request("ping")
            if not answer["ok"]:
                assert answer["error"]["code"] == "rate_limited", answer
                break
        else:
            pytest.fail("never rate limited")
        assert await client.ok("estop") == {"devices": [{"device": "slow", "ok": True}, {"device": "late", "ok": True}]}

        assert set(client.error_codes) == {code.value for code in ErrorCode} - {"internal_error", "going_away"}
        await client.client.close()


FLAKY_DEVICE = """
[devices.flaky]
kind = "sim"
rate_hz = 20.0
connect_delay_s = 0.2
fail_after_s = 0.3
"""


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_device_pushes_live(tmp_path: Path, transport: TransportName) -> None:
    async with running_gateway(tmp_path, gateway_config(tmp_path, FLAKY_DEVICE)) as gateway:
        client = Checked(await connect(gateway, transport))
        seen: dict[str, dict[str, Any]] = {}
        async with asyncio.timeout(10.0):
            while len(seen) < 3:
                event = await client.wait_for(lambda m: m["op"] == "device")
                seen[event["status"]] = event
        assert set(seen) == {"connecting", "connected", "disconnected"}
        assert all(event["device"] == "flaky" and event["kind"] == "sim" for event in seen.values())
        assert seen["disconnected"]["detail"].startswith("SimulatedFault: simulated fault after 0.3 s; retrying in")
        assert client.received["state"] == 0  # device pushes need no subscription; states do
        await client.client.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_close_messages_live(tmp_path: Path, transport: TransportName) -> None:
    config = gateway_config(tmp_path, server="max_request_bytes = 1024\nmax_frame_bytes = 4096\n")
    async with running_process(tmp_path, config) as gateway:
        client = Checked(await connect(gateway, transport))
        await client.ok("subscribe", topics=["**"])
        await client.wait_for(lambda m: m["op"] == "state" and m["topic"] == "sim-1/state")

        # A frame over max_frame_bytes ends the connection: a close message on the msgpack socket,
        # WebSocket close code 1009 on /ws.
        oversized = Checked(await connect(gateway, transport))
        await oversized.send({"op": "ping", "id": 1, "pad": "x" * 5000}, valid=False)
        ended = await oversized.closed()
        if transport == "ws":
            assert isinstance(ended, websockets.ConnectionClosed)
            assert ended.rcvd is not None
            assert ended.rcvd.code == 1009
            assert oversized.received["close"] == 0
        else:
            assert isinstance(ended, ConnectionError)
            close = oversized.pushed[-1]
            assert close["code"] == "too_large"
            assert "exceeds the 4096-byte limit" in close["reason"]
        await oversized.client.close()

        if transport != "ws":
            # Bytes that are not msgpack: close with bad_request (requests decoded before still count).
            garbage = Checked(await connect(gateway, transport))
            await garbage.client.send_raw(garbage.client.encode({"op": "ping", "id": 1}) + b"\xc1")
            assert isinstance(await garbage.closed(), ConnectionError)
            assert [m["op"] for m in garbage.pushed if m["op"] != "device"] == ["result", "close"]
            assert garbage.pushed[-1]["code"] == "bad_request"
            assert garbage.pushed[-1]["reason"].startswith("undecodable msgpack")
            await garbage.client.close()

        # Shutdown: every client gets close going_away, then the connection ends.
        gateway.proc.send_signal(signal.SIGTERM)
        ended = await client.closed()
        assert client.pushed[-1] == {"op": "close", "code": "going_away", "reason": "gateway shutting down"}
        assert client.received["close"] == 1
        if transport == "ws":
            assert isinstance(ended, websockets.ConnectionClosed)
            assert ended.rcvd is not None
            assert ended.rcvd.code == 1001
        else:
            assert isinstance(ended, ConnectionError)
        await client.client.close()
        async with asyncio.timeout(10.0):
            assert await gateway.proc.wait() == 0
