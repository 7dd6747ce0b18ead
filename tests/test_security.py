"""Security at the door: the DNS-rebinding Host guard, throttled token guesses, and doc/code agreement."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import aiohttp
import pytest
import trustme
import websockets

from gateway.config import loads
from gateway.core.auth_guard import FIRST_DELAY_S, MAX_DELAY_S, MAX_FAILURES_PER_CONNECTION, AuthGuard
from gateway.credentials import hash_token
from gateway.errors import ConfigError
from gateway.servers.hosts import HostPolicy, parse_host
from tests.harness import (
    TRANSPORTS,
    GatewayUnderTest,
    MsgpackClient,
    TransportName,
    WsClient,
    connect,
    gateway_config,
    start_gateway,
)
from tests.inprocess import running_gateway

# -- the Host guard ----------------------------------------------------------------------------


#: Host header forms and what the one parser reads in them (None: malformed, refused on every listener).
HOST_FORMS: list[tuple[str, str | None]] = [
    ("evil.example:8470", "evil.example"),
    ("Robot.Local", "robot.local"),
    ("localhost.", "localhost"),
    ("app.localhost:1", "app.localhost"),
    ("[::1]:8470", "::1"),
    ("[::1]", "::1"),
    ("[fe80::1%eth0]", "fe80::1%eth0"),
    ("127.0.0.1", "127.0.0.1"),
    ("127.0.0.1:65535", "127.0.0.1"),
    ("my_host", "my_host"),
    ("[::1].evil.example", None),
    ("[::1]evil.example", None),
    ("[::1]:80.evil.example", None),
    ("[::1", None),
    ("[localhost]", None),
    ("[127.0.0.1]", None),
    ("::1", None),
    ("::1:8470", None),
    ("127.0.0.1:", None),
    ("127.0.0.1:0x50", None),
    ("127.0.0.1:65536", None),
    ("127.0.0.1:123456", None),
    ("127.0.0.1:80:80", None),
    ("localhost:８０", None),
    ("user@localhost", None),
    ("localhost/evil", None),
    ("local host", None),
    ("localhost..", None),
    (".localhost", None),
    ("-a.localhost", None),
    ("a" * 64 + ".localhost", None),
    ("", None),
    (":8470", None),
]


@pytest.mark.parametrize(("header", "name"), HOST_FORMS)
def test_parse_host_reads_only_well_formed_host_headers(header: str, name: str | None) -> None:
    assert parse_host(header) == name


@pytest.mark.parametrize(("header", "name"), HOST_FORMS)
def test_the_policy_refuses_every_malformed_host_form(header: str, name: str | None) -> None:
    # localhost, IP literals and *.localhost are ours: a well-formed one of them is allowed, nothing malformed is.
    policy = HostPolicy([], names=())
    ours = name is not None and (
        name in ("localhost", "127.0.0.1", "::1", "fe80::1%eth0") or name.endswith(".localhost")
    )
    assert policy.allows(header) is ours


def test_host_policy_admits_our_names_and_ip_literals_only() -> None:
    policy = HostPolicy(["robot.lab.example", ".fleet.example"], names={"pi4", "pi4.local"})
    for host in (
        "127.0.0.1:8470", "[::1]:8470", "192.168.1.20:8470", "localhost:8470", "app.localhost",
        "pi4", "PI4.local:8470", "robot.lab.example", "arm.fleet.example:9090",
    ):  # fmt: skip
        assert policy.allows(host), host
    refused: tuple[str | None, ...] = ("evil.example:8470", "localhost.evil.example", "fleet.example.evil", "", None)
    for foreign in refused:
        assert not policy.allows(foreign), foreign
    assert HostPolicy(["*"], names=()).allows("anything.example")


async def test_a_foreign_host_is_refused_on_every_http_path(gateway: GatewayUnderTest) -> None:
    async with aiohttp.ClientSession() as http:
        for path in ("/", "/healthz", "/metrics", "/static/app.js", "/ws"):
            response = await http.get(
                f"{gateway.base_url}{path}", headers={"Host": f"evil.example:{gateway.http_port}"}
            )
            assert response.status == 421, path
            assert "server.allowed_hosts" in await response.text()
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(
                f"{gateway.base_url}/ws",
                headers={"Host": f"evil.example:{gateway.http_port}"},
                origin=f"http://evil.example:{gateway.http_port}",
            )
        assert refused.value.status == 421
        for host in (f"127.0.0.1:{gateway.http_port}", f"localhost:{gateway.http_port}"):
            assert (await http.get(f"{gateway.base_url}/healthz", headers={"Host": host})).status == 200
    refusals = [line for line in gateway.logs if "refused a request for host" in line.get("event", "")]
    assert len(refusals) == 1  # one line per foreign name, however many requests


async def test_allowed_hosts_admits_a_configured_name(tmp_path: Path) -> None:
    config = gateway_config(tmp_path, server='allowed_hosts = ["robot.lab.example"]')
    async with running_gateway(tmp_path, config) as gateway:
        async with aiohttp.ClientSession() as http:
            own = await http.get(f"{gateway.base_url}/healthz", headers={"Host": "robot.lab.example:8470"})
            other = await http.get(f"{gateway.base_url}/healthz", headers={"Host": "evil.example"})
        assert (own.status, other.status) == (200, 421)


# -- throttled token guesses -------------------------------------------------------------------


async def test_auth_guard_delays_double_per_address_and_are_forgotten() -> None:
    now = [1000.0]
    guard = AuthGuard(clock=lambda: now[0])
    delays = []
    for _ in range(8):
        delays.append(guard.delay_for("10.0.0.1"))
        guard._failed("10.0.0.1", guard._peer("10.0.0.1"))
    assert delays == [0.0, FIRST_DELAY_S, 0.5, 1.0, 2.0, 4.0, MAX_DELAY_S, MAX_DELAY_S]
    assert guard.delay_for("10.0.0.2") == 0.0  # another address is not slowed
    now[0] += 301.0
    assert guard.delay_for("10.0.0.1") == 0.0


async def test_a_right_token_resets_the_address() -> None:
    guard = AuthGuard()
    assert not await guard.attempt("a", lambda: False)
    assert guard.delay_for("a") == FIRST_DELAY_S
    assert await guard.attempt("a", lambda: True)
    assert guard.delay_for("a") == 0.0


async def test_each_attempt_waits_its_delay_before_its_check() -> None:
    now = [1000.0]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    guard = AuthGuard(clock=lambda: now[0], sleep=sleep)
    outcomes = [await guard.attempt("a", lambda: False) for _ in range(MAX_FAILURES_PER_CONNECTION)]
    assert outcomes == [False] * MAX_FAILURES_PER_CONNECTION
    assert slept == [FIRST_DELAY_S, 0.5, 1.0, 2.0]  # none before the first, then doubling
    assert await guard.attempt("a", lambda: True)  # the right token, after waiting its turn too
    assert slept[-1] == 4.0
    assert guard.delay_for("a") == 0.0


async def test_wrong_tokens_are_slowed_then_the_connection_is_closed(tmp_path: Path) -> None:
    """On each transport at once, from an address of its own (the guard counts per address)."""
    async with running_gateway(
        tmp_path, gateway_config(tmp_path, extra='[auth]\ntokens = ["s3cret-token-0123"]\n')
    ) as gateway:

        async def guess_then_right(transport: TransportName, source: str | None) -> None:
            client = await connect(gateway, transport, source=source)
            # Each waits its delay (0, 0.25, 0.5, 1, 2 s: the guard's own test above); 10 s guards a hang.
            for _ in range(MAX_FAILURES_PER_CONNECTION):
                assert (await client.error("auth", timeout=10.0, token="guess"))["code"] == "unauthorized"
            closing = await client.wait_for(lambda m: m["op"] == "close")
            assert closing["code"] == "unauthorized"
            await client.close()
            # The next connection from the same address waits too (4 s), and the right token still works.
            again = await connect(gateway, transport, source=source)
            answer = await again.request("auth", timeout=10.0, token="s3cret-token-0123")
            assert answer["data"]["authenticated"] is True, transport
            await again.close()

        sources: dict[TransportName, str | None] = {"ws": "127.0.0.1", "tcp": "127.0.0.2", "unix": None}
        assert set(sources) == set(TRANSPORTS)
        await asyncio.gather(*(guess_then_right(transport, source) for transport, source in sources.items()))
        warnings = [line for line in gateway.logs if "wrong token" in line.get("event", "")]
        assert len(warnings) == 3, warnings  # aggregated: one line per address per interval
        assert all("(next attempt waits 0.25 s)" in line["event"] for line in warnings), warnings


async def test_parallel_connections_do_not_guess_faster(tmp_path: Path) -> None:
    async with running_gateway(
        tmp_path, gateway_config(tmp_path, extra='[auth]\ntokens = ["s3cret-token-0123"]\n')
    ) as gateway:
        clients = [await connect(gateway, "tcp") for _ in range(20)]
        answered = 0

        async def guess(client: object) -> None:
            nonlocal answered
            assert (await client.error("auth", timeout=10.0, token="guess"))["code"] == "unauthorized"  # type: ignore[attr-defined]
            answered += 1

        tasks = [asyncio.create_task(guess(client)) for client in clients]
        await asyncio.sleep(2.0)
        # One address is served one guess at a time: 0 + 0.25 + 0.5 + 1 s fit in 2 s, not 20 guesses.
        assert answered <= 5, answered
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for client in clients:
            await client.close()


# -- the docs and the code agree ---------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_device_pushes_follow_the_auth_result(tmp_path: Path, transport: str) -> None:
    async with running_gateway(
        tmp_path, gateway_config(tmp_path, extra='[auth]\ntokens = ["s3cret-token-0123"]\n')
    ) as gateway:
        client = await connect(gateway, transport)  # type: ignore[arg-type]
        await client.send({"op": "auth", "id": 1, "token": "s3cret-token-0123"})
        first = await client.recv()
        assert (first["op"], first["id"], first["ok"]) == ("result", 1, True)
        assert (await client.recv())["op"] == "device"
        await client.close()


async def test_metrics_use_prometheus_content_type(gateway: GatewayUnderTest) -> None:
    async with aiohttp.ClientSession() as http:
        response = await http.get(f"{gateway.base_url}/metrics")
    assert response.headers["Content-Type"].startswith("text/plain; version=")


async def test_a_frame_of_exactly_max_frame_bytes_is_read(tmp_path: Path) -> None:
    config = gateway_config(tmp_path, server="max_frame_bytes = 4096\nmax_request_bytes = 4096")
    async with running_gateway(tmp_path, config) as gateway:
        client = await connect(gateway, "ws")
        assert isinstance(client, WsClient)
        exact = '{"op":"ping","id":1,"pad":"' + "x" * (4096 - 29) + '"}'
        assert len(exact) == 4096
        await client.send_raw(exact.encode())
        answer = await client.result(1)
        assert answer["error"]["code"] == "bad_request"  # answered (an unknown field), not closed
        await client.send_raw(exact.encode() + b" ")
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await _receive_until_closed(client)
        assert closed.value.rcvd is not None
        assert closed.value.rcvd.code == 1009


async def _receive_until_closed(client: WsClient) -> None:
    while True:
        await client.ws.recv()


# -- roles and locks ---------------------------------------------------------------------------

READER, CONTROLLER, OTHER_DEVICES, ADMIN = (
    f"{name}-token-0123456789" for name in ("reader", "control", "other", "admin")
)
ROLE_DEVICES = """
[devices.sim-1]
kind = "sim"
rate_hz = 20.0

[devices.arm-x]
kind = "sim"
rate_hz = 20.0
"""


def _roles_config(tmp_path: Path) -> str:
    token_file = tmp_path / "admin.token"
    token_file.write_text(ADMIN + "\n")
    auth = f"""
[auth.tokens.reader]
hash = "{hash_token(READER)}"
role = "read"

[auth.tokens.teacher]
hash = "{hash_token(CONTROLLER)}"
role = "control"
devices = ["sim-*"]

[auth.tokens.arm-only]
hash = "{hash_token(OTHER_DEVICES)}"
role = "control"
devices = ["arm-*"]

[auth.tokens.admin]
token_file = "{token_file}"
role = "admin"
"""
    return gateway_config(tmp_path, ROLE_DEVICES, extra=auth)


@pytest.mark.parametrize(
    ("auth", "path", "message"),
    [
        ('[auth.tokens.a]\nrole = "read"\n', "auth.tokens.a", "exactly one of hash"),
        ('[auth.tokens.a]\nhash = "abc"\n', "auth.tokens.a.hash", "64 hex digits"),
        ('[auth.tokens.a]\nhash = "sha256:' + "0" * 64 + '"\nrole = "root"\n', "auth.tokens.a.role", "one of"),
        ('[auth.tokens.a]\ntoken_file = "/no/such/file"\n', "auth.tokens.a.token_file", "cannot read"),
        ('[auth.tokens.a]\nhash = "sha256:' + "0" * 64 + '"\ndevices = []\n', "auth.tokens.a.devices", "at least one"),
    ],
)
def test_named_token_errors_name_their_key(auth: str, path: str, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        loads(auth)
    assert error.value.path == path
    assert message in error.value.message


def test_named_tokens_are_kept_as_digests() -> None:
    config = loads(f'[auth.tokens.reader]\nhash = "{hash_token(READER)}"\nrole = "read"\n')
    [credential] = config.auth.all_credentials()
    assert (credential.name, credential.role, credential.devices) == ("reader", "read", ("*",))
    assert READER.encode() not in repr(config).encode()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_roles_and_device_patterns_decide_commands_and_locks(tmp_path: Path, transport: str) -> None:
    async with running_gateway(tmp_path, _roles_config(tmp_path)) as gateway:
        reader, teacher, arm_only, admin = [await connect(gateway, transport) for _ in range(4)]  # type: ignore[arg-type]
        signed_in = [
            (reader, READER, "reader", "read", ["*"]),
            (teacher, CONTROLLER, "teacher", "control", ["sim-*"]),
            (arm_only, OTHER_DEVICES, "arm-only", "control", ["arm-*"]),
            (admin, ADMIN, "admin", "admin", ["*"]),
        ]
        for client, token, name, role, patterns in signed_in:
            answer = await client.ok("auth", token=token)
            assert answer == {"authenticated": True, "name": name, "role": role, "devices": patterns}
        # A read-only token reads, and may stop everything, but commands nothing.
        await reader.ok("subscribe", topics=["sim-1/state"])
        await reader.wait_for(lambda m: m["op"] == "state")
        error = await reader.error("command", device="sim-1", type="led", data={"rgb": [1, 0, 0]})
        assert error == {"code": "unauthorized", "message": "command on 'sim-1': not allowed for a read-only token"}
        assert (await reader.error("lock", device="sim-1"))["code"] == "unauthorized"
        assert len((await reader.ok("estop"))["devices"]) == 2
        # Device patterns.
        await teacher.ok("command", device="sim-1", type="led", data={"rgb": [1, 0, 0]})
        error = await teacher.error("command", device="arm-x", type="led")
        assert error == {
            "code": "unauthorized",
            "message": "command on 'arm-x': not allowed for a token whose devices do not include it",
        }
        await arm_only.ok("command", device="arm-x", type="led")
        assert (await arm_only.error("lock", device="sim-1"))["code"] == "unauthorized"
        # Locks: exclusive, estop still works, an admin may end one, and they end with their client.
        session = teacher.hello["session"]
        assert await teacher.ok("lock", device="sim-1") == {"device": "sim-1", "locked_by": session}
        error = await admin.error("command", device="sim-1", type="led")
        assert error == {"code": "locked", "message": f"device 'sim-1' is locked by client {session}"}
        assert (await admin.error("lock", device="sim-1"))["code"] == "locked"
        assert (await admin.error("unlock", device="sim-1"))["code"] == "locked"
        assert all(entry["ok"] for entry in (await reader.ok("estop"))["devices"])
        await teacher.ok("command", device="sim-1", type="led")
        await admin.ok("unlock", device="sim-1", force=True)
        await admin.ok("command", device="sim-1", type="led")
        await teacher.ok("lock", device="sim-1")
        await teacher.close()
        await admin.wait_for(lambda m: m["op"] == "device" and m["device"] == "sim-1" and m["locked_by"] is None)
        await admin.ok("command", device="sim-1", type="led")
        for client in (reader, arm_only, admin):
            await client.close()


async def test_only_an_admin_may_force_an_unlock(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, _roles_config(tmp_path)) as gateway:
        holder, other = [await connect(gateway, "ws") for _ in range(2)]
        await holder.ok("auth", token=ADMIN)
        await other.ok("auth", token=CONTROLLER)
        await holder.ok("lock", device="sim-1")
        error = await other.error("unlock", device="sim-1", force=True)
        assert error["code"] == "unauthorized"
        assert "only an admin" in error["message"]
        assert (await other.error("unlock", device="sim-1", force="yes"))["code"] == "bad_request"
        assert (await other.error("lock", device="nope"))["code"] == "unknown_device"
        await holder.close()
        await other.close()


# -- TLS ---------------------------------------------------------------------------------------


async def test_tls_on_websocket_and_msgpack_tcp(tmp_path: Path) -> None:
    authority = trustme.CA()
    certificate = authority.issue_cert("127.0.0.1", "localhost")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    certificate.private_key_pem.write_to_path(str(key))
    certificate.cert_chain_pems[0].write_to_path(str(cert))
    async with running_gateway(
        tmp_path, gateway_config(tmp_path, server=f'tls_cert = "{cert}"\ntls_key = "{key}"')
    ) as gateway:
        listening = gateway.events("listening")[0]
        assert listening["websocket"].startswith("wss://")
        assert listening["msgpack"].startswith("tls://")
        trusted = ssl.create_default_context()
        authority.configure_trust(trusted)
        async with websockets.connect(f"wss://127.0.0.1:{gateway.http_port}/ws", ssl=trusted) as ws:
            client = WsClient(ws)
            await client.start()
            assert (await client.ok("ping"))["pong"] is True
        reader, writer = await asyncio.open_connection("127.0.0.1", gateway.msgpack_port, ssl=trusted)
        stream = await MsgpackClient(reader, writer).start()
        assert (await stream.ok("ping"))["pong"] is True
        await stream.close()
        # A client that does not trust the certificate, or speaks plain TCP, gets nowhere.
        with pytest.raises(ssl.SSLCertVerificationError):
            await websockets.connect(f"wss://127.0.0.1:{gateway.http_port}/ws", ssl=ssl.create_default_context())
        plain_reader, plain_writer = await asyncio.open_connection("127.0.0.1", gateway.msgpack_port)
        plain_writer.write(b"\x81\xa2op\xa4ping")
        assert await asyncio.wait_for(plain_reader.read(), 5.0) == b""
        plain_writer.close()


async def test_tls_with_missing_files_is_a_config_error_naming_them(tmp_path: Path) -> None:
    # Caught with the other config errors (exit 2, check-config too), not when the listener starts.
    config = gateway_config(tmp_path, server=f'tls_cert = "{tmp_path}/none.pem"\ntls_key = "{tmp_path}/none.key"')
    with pytest.raises(RuntimeError, match=r"server.tls_cert: cannot read .*none.pem.*server.tls_key: cannot read"):
        await start_gateway(tmp_path, config)


def test_tls_needs_both_files() -> None:
    with pytest.raises(ConfigError) as error:
        loads('[server]\ntls_cert = "/etc/cert.pem"\n')
    assert error.value.path == "server.tls_key"
