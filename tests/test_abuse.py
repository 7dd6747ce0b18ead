"""Hostile and clumsy clients against the real daemon, on every transport: every resource stays bounded.

The bounds here are counts (bytes of unfinished requests the gateway holds, refusals, connections)
and outcomes (who is closed, why, and that everyone else is still answered). What the abuse costs in
time, CPU and resident memory is measured against the same daemon unabused by `bench/abuse.py`.
"""

from __future__ import annotations

import asyncio
import json
import re
import resource
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import msgpack
import pytest
import pytest_asyncio
import websockets

from gateway.bus import Bus, Subscriber
from gateway.messages.generic import Led
from tests.abuse_clients import (
    WS_BINARY,
    WS_TEXT,
    close_of,
    msgpack_messages,
    open_raw,
    read_until_closed,
    ws_close_code,
    ws_frame,
    ws_frame_header,
    ws_server_frames,
)
from tests.harness import (
    TRANSPORTS,
    RunningGateway,
    TransportName,
    connect,
    gateway_config,
    health_faults,
    start_gateway,
)

#: Every async test runs on the module's event loop: `gateways`' daemons' log pipes are read on it, and
#: a daemon whose log nobody reads while another test runs would block when the pipe fills.
on_module_loop = pytest.mark.asyncio(loop_scope="module")

MiB = 1024 * 1024
#: Each held connection sends this much of a value announced at 1 MiB, and stops.
HALF = 512 * 1024
#: `[server]` of the shared budget tests: 2 MiB of unfinished requests in all, a read timeout no test reaches.
SHARED_BUDGET = "max_partial_bytes = 2097152\nread_timeout_s = 30.0\n"
#: `[server]` of the flood tests: requests and refusals without a budget.
NO_BUDGET = "max_requests_per_s = 1000000.0\nrequest_burst = 1000000\nrefusal_burst = 1000000\n"
#: The `[auth]` section of the tests of unauthenticated clients.
TOKENS = '[auth]\ntokens = ["s3cret-token-0123"]\n'


async def _pings_answered(gateway: RunningGateway, count: int, transport: TransportName = "ws") -> None:
    """A new client of `transport` pings `count` times; each is answered (the harness's timeout guards a hang)."""
    client = await connect(gateway, transport)
    for _ in range(count):
        assert (await client.ok("ping"))["pong"] is True
    await client.close()


async def _health(gateway: RunningGateway) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http, http.get(f"{gateway.base_url}/healthz") as response:
        body: dict[str, Any] = await response.json()
        return body


async def _partial_bytes_reach(gateway: RunningGateway, wanted: Callable[[int], bool]) -> int:
    """The gateway's bytes of unfinished requests (`/healthz`) once `wanted` holds for them."""
    async with asyncio.timeout(10):  # guards a hang only: the reads are quick
        while True:
            held = int((await _health(gateway))["partial_bytes"])
            if wanted(held):
                return held
            await asyncio.sleep(0.05)


class SharedGateways:
    """One daemon per configuration, started by the first test that asks for it and shared by the rest.

    The tests of one rule on each transport ask for the same configuration, so the daemon starts once
    for them, not once per transport; each test leaves it as it found it (its clients closed, its
    partial bytes given back). Every daemon is stopped, and must exit 0, when the module ends.
    """

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._running: dict[tuple[str, str], RunningGateway] = {}

    async def get(self, server: str = "", extra: str = "") -> RunningGateway:
        """The daemon of `gateway_config` with these `[server]` keys and `extra` TOML."""
        key = (server, extra)
        if key not in self._running:
            folder = self._folder / f"gateway-{len(self._running)}"
            folder.mkdir()
            self._running[key] = await start_gateway(folder, gateway_config(folder, server=server, extra=extra))
        return self._running[key]

    async def stop(self) -> list[int]:
        """Stop every daemon; their exit codes."""
        return [await gateway.stop() for gateway in self._running.values()]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateways(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[SharedGateways]:
    shared = SharedGateways(tmp_path_factory.mktemp("abuse"))
    yield shared
    assert set(await shared.stop()) <= {0}


# -- partial requests ---------------------------------------------------------------------------


def _announce_a_mib(transport: TransportName) -> bytes:
    """The head of a value of about 1 MiB: a WebSocket frame's header, or a msgpack bin 32's."""
    return ws_frame_header(MiB - 64) if transport == "ws" else b"\xc6" + (MiB - 64).to_bytes(4, "big")


async def _hold_partial_requests_until_dropped(gateway: RunningGateway, transport: TransportName) -> int:
    """24 connections each send half of a 1 MiB value and stop; return the bytes the gateway held of them."""
    held = []
    for _ in range(24):  # 12 MiB, within server.max_partial_bytes (16 MiB)
        reader, writer = await open_raw(gateway, transport)
        writer.write(_announce_a_mib(transport) + b"x" * HALF)
        await writer.drain()
        held.append((reader, writer))
    peak = await _partial_bytes_reach(gateway, lambda held: held >= 24 * HALF)
    for reader, writer in held:
        sent = await read_until_closed(reader, timeout=5.0)
        assert close_of(transport, sent) == {
            "op": "close",
            "code": "timeout",
            "reason": f"a {'message' if transport == 'ws' else 'request'} begun 1 s ago is still unfinished "
            "(server.read_timeout_s)",
        }
        writer.close()
    await _partial_bytes_reach(gateway, lambda held: held == 0)
    return peak


@on_module_loop
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_partial_requests_are_dropped_after_the_read_timeout_and_their_bytes_given_back(
    gateways: SharedGateways, transport: TransportName
) -> None:
    gateway = await gateways.get(server="read_timeout_s = 1.0\n")
    assert (await _health(gateway))["partial_bytes"] == 0
    # The second round fits in the 16 MiB budget only if the first one's 12 MiB were given back.
    # (What the rounds cost in resident memory is bench/abuse.py's subject: it is the allocator's.)
    peaks = [await _hold_partial_requests_until_dropped(gateway, transport) for _ in range(2)]
    assert all(24 * HALF <= peak < 24 * (HALF + 64) for peak in peaks), peaks  # payload and framing only
    await _pings_answered(gateway, 20, transport)


@on_module_loop
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_unfinished_requests_beyond_the_shared_budget_are_closed(
    gateways: SharedGateways, transport: TransportName
) -> None:
    gateway = await gateways.get(server=SHARED_BUDGET)
    held = []
    for _ in range(6):  # 6 x 512 KiB: the fifth and sixth do not fit in 2 MiB
        reader, writer = await open_raw(gateway, transport)
        writer.write(_announce_a_mib(transport) + b"x" * HALF)
        await writer.drain()
        await asyncio.sleep(0.1)
        held.append((reader, writer))
    for reader, writer in held[4:]:
        sent = await read_until_closed(reader, timeout=3.0)
        if transport == "ws":
            # Closed either way; the close frame is lost when the reset overtakes it.
            assert ws_close_code(sent) in (1013, None)
        else:
            close = close_of(transport, sent)
            assert close is not None
            assert close["code"] == "unavailable"
            assert "server.max_partial_bytes" in close["reason"]
        writer.close()
    for reader, writer in held[:4]:
        assert not reader.at_eof()
        writer.transport.abort()
    await _partial_bytes_reach(gateway, lambda held: held == 0)
    await _pings_answered(gateway, 10, transport)


@on_module_loop
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_header_claiming_4_gib_is_refused_as_soon_as_it_is_read(
    gateways: SharedGateways, transport: TransportName
) -> None:
    # The read timeout (30 s) is far beyond the wait: the refusal can only come from the header itself.
    gateway = await gateways.get(server=SHARED_BUDGET)
    reader, writer = await open_raw(gateway, transport)
    writer.write(ws_frame_header(4 << 30, WS_BINARY) if transport == "ws" else b"\xdb\xff\xff\xff\xff")
    sent = await read_until_closed(reader, timeout=10.0)  # guards a hang only
    if transport == "ws":
        assert ws_close_code(sent) == 1009
    else:
        close = close_of(transport, sent)
        assert close is not None
        assert close["code"] == "too_large"
        assert "promises a message of at least 4294967300 bytes" in close["reason"]
    writer.close()


# -- floods from clients that never read ----------------------------------------------------------


@on_module_loop
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_client_that_sends_rejected_frames_and_never_reads_is_no_longer_read(
    gateways: SharedGateways, transport: TransportName
) -> None:
    # Tokens are set and the flood never authenticates: the pre-auth path is the one under test.
    # Refusals are not budgeted either: the flood is stopped by not being read, not by being closed.
    gateway = await gateways.get(server=NO_BUDGET, extra=TOKENS)
    _, writer = await open_raw(gateway, transport, receive_buffer=4096 if transport != "unix" else None)
    # Invalid JSON on /ws, a msgpack value that is not a map elsewhere: each is answered `bad_request`.
    junk = ws_frame(b"x") if transport == "ws" else msgpack.packb(1)
    binary = ws_frame(b"\x00", WS_BINARY) if transport == "ws" else msgpack.packb([1])
    chunk = (junk + binary) * 2000
    sent = 0
    stalled = False
    while sent < 256 * MiB:  # far more than any buffer on the way holds: the gateway must stop reading
        writer.write(chunk)
        try:
            async with asyncio.timeout(0.5):
                await writer.drain()
        except TimeoutError:
            stalled = True  # the gateway stopped reading: that is the point
            break
        sent += len(chunk)
    assert stalled, f"the gateway read all {sent} bytes of a client that never reads"
    # Another client is served meanwhile. What its pings cost and how long they take next to the
    # stalled flood, against no flood, is bench/abuse.py's subject.
    await _pings_answered(gateway, 100)
    writer.transport.abort()


@on_module_loop
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_client_past_its_refusal_burst_is_closed_and_the_rest_of_its_flood_is_not_handled(
    gateways: SharedGateways, transport: TransportName
) -> None:
    gateway = await gateways.get(server="refusal_burst = 8\n")
    reader, writer = await open_raw(gateway, transport)
    # 500 undecodable requests and then a valid ping, all in one write: after 8 refusals (and
    # what the refill adds meanwhile) the client is closed, and its ping is never answered.
    junk = ws_frame(b"x") if transport == "ws" else msgpack.packb(1)
    ping = ws_frame(b'{"op": "ping", "id": 1}') if transport == "ws" else msgpack.packb({"op": "ping", "id": 1})
    writer.write(junk * 500 + ping)
    sent = await read_until_closed(reader, timeout=5.0)
    if transport == "ws":
        messages = [json.loads(p) for op, p in ws_server_frames(sent) if op == WS_TEXT]
    else:
        messages = msgpack_messages(sent)
    refusals = [m for m in messages if m.get("op") == "result" and not m["ok"]]
    assert 8 <= len(refusals) < 20, len(refusals)
    assert {m["error"]["code"] for m in refusals} == {"bad_request"}
    assert not [m for m in messages if m.get("op") == "result" and m["ok"]]  # the ping was not handled
    close = close_of(transport, sent)
    assert close is not None
    assert close["code"] == "rate_limited"
    assert "(server.refusal_burst, server.max_requests_per_s)" in close["reason"]
    writer.close()
    await _pings_answered(gateway, 10, transport)  # others are served as before


# -- connection caps and the open-file limit ------------------------------------------------------


async def _try_connect(gateway: RunningGateway, transport: TransportName, source: str) -> str:
    """ "ok" when admitted (hello received), else the refusal as the gateway said it."""
    try:
        reader, writer = await open_raw(gateway, transport, source=source if transport != "unix" else None)
    except ConnectionRefusedError as refused:
        return f"refused: {str(refused).splitlines()[0]} {str(refused).splitlines()[-1]}"
    first = await reader.read(65536)
    if transport == "ws":
        _held.append(writer)
        return "ok" if b"hello" in first else f"unexpected {first[:80]!r}"
    close = close_of(transport, first)
    if close is not None:
        writer.close()
        return f"refused: {close['code']} {close['reason']}"
    _held.append(writer)
    return "ok"


_held: list[asyncio.StreamWriter] = []


@on_module_loop
async def test_a_thousand_connections_beyond_the_open_file_limit_are_refused_clearly(tmp_path: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # this test process holds 1,000 sockets
    config = gateway_config(tmp_path, server="max_clients_per_peer = 64\n")
    gateway = await start_gateway(tmp_path, config, open_files=512)
    try:
        listening = gateway.events("listening")[0]
        assert listening["max_clients"] == 512 - 64 - 16  # below the limit, with room for devices and /healthz
        keeper = await connect(gateway, "ws")
        outcomes = []
        for index in range(1000):
            transport = TRANSPORTS[index % 3]
            source = f"127.0.{1 + index // 60}.{1 + index % 60}"  # many peers, each under its own cap
            outcomes.append(await _try_connect(gateway, transport, source))
        admitted = outcomes.count("ok")
        assert admitted == listening["max_clients"] - 1  # the keeper holds one place
        refusals = {re.sub(r"\d+ connected", "N connected", o) for o in outcomes if o != "ok"}
        assert refusals <= {
            "refused: unavailable too many clients: N connected (server.max_clients = 432)",
            "refused: HTTP/1.1 503 Service Unavailable too many clients: N connected (server.max_clients = 432)",
            "refused: HTTP/1.1 503 Service Unavailable too many clients (server.max_clients); try again later",
        }, refusals
        async with aiohttp.ClientSession() as http:
            health = await http.get(f"{gateway.base_url}/healthz")
            assert health.status == 200
            assert (await health.json())["clients"] == admitted + 1
        await keeper.ok("ping")
        refusing = [line for line in gateway.logs if str(line.get("event", "")).startswith("refusing connections")]
        assert 1 <= len(refusing) <= 2, refusing  # once per 10 s interval, however many were refused
        assert not [line for line in gateway.logs if "Traceback" in str(line) or line.get("exception")]
        await keeper.close()
    finally:
        for writer in _held:
            writer.transport.abort()
        _held.clear()
        assert await gateway.stop() == 0
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@on_module_loop
@pytest.mark.parametrize(
    ("transport", "peer", "other_peer"), [("ws", "127.0.0.9", "127.0.0.10"), ("tcp", "127.0.0.11", "127.0.0.12")]
)
async def test_connections_per_peer_are_capped(
    gateways: SharedGateways, transport: TransportName, peer: str, other_peer: str
) -> None:
    # Peers of their own per transport: the daemon is shared, and the other test's may not be gone yet.
    gateway = await gateways.get(server="max_clients_per_peer = 5\n")
    try:
        outcomes = [await _try_connect(gateway, transport, peer) for _ in range(6)]
        assert outcomes[:5] == ["ok"] * 5
        assert f"too many clients from {peer}: 5 connected (server.max_clients_per_peer = 5)" in outcomes[5]
        assert await _try_connect(gateway, transport, other_peer) == "ok"
    finally:
        for writer in _held:
            writer.transport.abort()
        _held.clear()


# -- timeouts -------------------------------------------------------------------------------------


@on_module_loop
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_client_that_does_not_authenticate_in_time_is_closed(
    gateways: SharedGateways, transport: TransportName
) -> None:
    gateway = await gateways.get(server="auth_timeout_s = 1.0\n", extra=TOKENS)
    patient = await connect(gateway, transport)
    await patient.ok("auth", token="s3cret-token-0123")
    idle = await connect(gateway, transport)
    close = await idle.wait_for(lambda m: m["op"] == "close", timeout=3.0)
    assert close == {
        "op": "close",
        "code": "timeout",
        "reason": "not authenticated within 1 s (server.auth_timeout_s)",
    }
    await asyncio.sleep(0.5)
    await patient.ok("ping")
    await patient.close()
    await idle.close()


@on_module_loop
@pytest.mark.parametrize("transport", ["tcp", "unix"])
async def test_a_silent_msgpack_client_is_closed_after_the_idle_timeout(
    gateways: SharedGateways, transport: TransportName
) -> None:
    gateway = await gateways.get(server="idle_timeout_s = 1.0\n")
    talker = await connect(gateway, transport)
    silent = await connect(gateway, transport)
    for _ in range(6):
        await talker.ok("ping")
        await asyncio.sleep(0.3)
    close = await silent.wait_for(lambda m: m["op"] == "close", timeout=1.0)
    assert close["code"] == "timeout"
    assert "nothing received for 1 s (server.idle_timeout_s" in close["reason"]
    await talker.ok("ping")
    await talker.close()
    await silent.close()


@on_module_loop
async def test_slowloris_headers_are_cut_off_and_health_stays_reachable(tmp_path: Path) -> None:
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, server="http_header_timeout_s = 1.0\n"))
    try:
        loris = []
        for index in range(50):
            reader, writer = await asyncio.open_connection("127.0.0.1", gateway.http_port)
            if index % 2:
                writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-a: ")  # and then a byte now and then
            loris.append((reader, writer))
        async with aiohttp.ClientSession() as http:
            for _ in range(3):
                for _, writer in loris[1::2]:
                    writer.write(b"a")
                assert health_faults(await (await http.get(f"{gateway.base_url}/healthz")).json()) == []
                await asyncio.sleep(0.4)
            answers = [await read_until_closed(reader, timeout=10.0) for reader, _ in loris]  # hang guard
        for _, writer in loris:
            writer.close()
        assert all(a.startswith(b"HTTP/1.1 408 Request Timeout") for a in answers), {a[:40] for a in answers}
        assert b"request headers not received within 1 s" in answers[1]
    finally:
        assert await gateway.stop() == 0


# -- patterns and metrics -------------------------------------------------------------------------

WORST_PATTERNS = ["/".join(["**"] * 84 + ["zz"]), "**/a/**/b/**/c/**/zz", "/".join(["*"] * 31 + ["**"])] * 21


@on_module_loop
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_worst_legal_patterns_subscribe_without_stalling_the_loop(
    gateways: SharedGateways, transport: TransportName
) -> None:
    gateway = await gateways.get(server="refusal_burst = 8\n")
    client = await connect(gateway, transport)
    await client.ok("subscribe", topics=["sim-1/**"])
    await client.wait_for(lambda m: m["op"] == "state")
    for _ in range(4):
        result = await client.ok("subscribe", topics=WORST_PATTERNS)
        assert result["topics"] == []  # none of them matches a sim topic, and each is answered
    assert (await client.ok("ping"))["pong"] is True
    await client.close()


def test_the_worst_legal_patterns_on_a_busy_bus_match_nothing_and_hold_nothing_back() -> None:
    """A subscribe of the worst patterns on a bus of 64 five-segment topics (more than the demo publishes).

    What it costs the loop, against a plain pattern, is `bench/pattern_cost.py`'s subject.
    """
    bus = Bus()
    topics = [f"dev-{d}/group-{g}/part/leaf/value" for d in range(8) for g in range(8)]
    for topic in topics:
        bus.publish(topic, Led(index=0, rgb=(0.1, 0.0, 0.0)))
    subscriber = Subscriber("worst", "json")
    bus.attach(subscriber)
    subscription = bus.subscribe(subscriber, WORST_PATTERNS, None)
    assert [t for t in bus.topics() if subscriber.subscriptions[subscription].matches(t)] == []
    for topic in topics:
        bus.publish(topic, Led(index=0, rgb=(0.2, 0.0, 0.0)))
    assert subscriber.depth == 0  # no sample routed to it
    plain = bus.subscribe(subscriber, ["dev-0/group-0/part/leaf/value"], None)  # and it still subscribes
    assert subscriber.subscriptions[plain].matches("dev-0/group-0/part/leaf/value")
    assert subscriber.depth == 1  # that topic's latest value


@on_module_loop
async def test_unknown_device_names_leave_metrics_the_same_size(tmp_path: Path) -> None:
    config = gateway_config(tmp_path, server="max_requests_per_s = 1000000.0\nrequest_burst = 1000000\n")
    gateway = await start_gateway(tmp_path, config)
    try:
        clients = [await connect(gateway, transport) for transport in TRANSPORTS]
        async with aiohttp.ClientSession() as http:

            async def metrics_size() -> int:
                return len(await (await http.get(f"{gateway.base_url}/metrics")).read())

            await clients[0].error("command", device="nobody", type="led", data={})
            before = await metrics_size()
            for index in range(2000):
                client = clients[index % 3]
                error = await client.error("command", device=f"ghost-{index}-" + "x" * 1000, type="led", data={})
                assert error["code"] == "unknown_device"
            after = await metrics_size()
        assert abs(after - before) < 100, (before, after)
        for client in clients:
            await client.close()
    finally:
        assert await gateway.stop() == 0


@on_module_loop
async def test_websocket_refused_beyond_the_cap_says_why(tmp_path: Path) -> None:
    gateway = await start_gateway(
        tmp_path, gateway_config(tmp_path, server="max_clients = 2\nmax_clients_per_peer = 2\n")
    )
    try:
        first, second = await connect(gateway, "ws"), await connect(gateway, "tcp")
        with pytest.raises(websockets.InvalidStatus) as refused:
            await connect(gateway, "ws")
        assert refused.value.response.status_code == 503
        assert b"server.max_clients" in refused.value.response.body
        await first.close()
        await second.close()
    finally:
        assert await gateway.stop() == 0
