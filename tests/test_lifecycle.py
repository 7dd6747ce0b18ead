"""The daemon as a process: shutdown on signals, start-up failures, supervisor restarts, auth, leases, HTTP."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
from pathlib import Path

import aiohttp
import pytest
import websockets

from tests.harness import (
    TRANSPORTS,
    MsgpackClient,
    RunningGateway,
    connect,
    free_port,
    gateway_config,
    start_gateway,
)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_signal_closes_clients_with_going_away_and_exits_0(tmp_path: Path, signum: int) -> None:
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path))
    clients = [await connect(gateway, transport) for transport in TRANSPORTS]
    for client in clients:
        await client.ok("subscribe", topics=["sim-1/**"])
    gateway.proc.send_signal(signum)
    for client in clients:
        close = await client.wait_for(lambda m: m["op"] == "close")
        assert close == {"op": "close", "code": "going_away", "reason": "gateway shutting down"}
    ws = clients[0].ws  # type: ignore[attr-defined]
    with pytest.raises(websockets.ConnectionClosed):
        await ws.recv()
    assert ws.close_code == 1001
    assert await gateway.stop() == 0
    assert gateway.events("stopped")
    assert not Path(tmp_path / "gw.sock").exists()
    for client in clients:
        await client.close()


async def test_port_in_use_exits_1_with_a_clear_message(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = tmp_path / "busy.toml"
        config.write_text(f'[server]\nhttp_port = {port}\nunix_socket = ""\nmsgpack_port = -1\n')
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gateway", "run", "--config", str(config), "--log-format", "json",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        output, _ = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 1
    assert b"cannot start" in output
    assert b"address already in use" in output.lower()


async def test_failed_device_is_restarted_with_growing_capped_backoff(tmp_path: Path) -> None:
    devices = '[devices.flaky]\nkind = "sim"\nrate_hz = 20.0\nfail_after_s = 0.2\n[devices.steady]\nkind = "sim"\n'
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, devices))
    try:
        client = await connect(gateway, "ws")
        await asyncio.sleep(3.0)
        await client.ok("ping")
        events = [m for m in client.pushed if m["op"] == "device" and m["device"] == "flaky"]
        statuses = [e["status"] for e in events]
        assert statuses.count("disconnected") >= 3
        assert "connected" in statuses
        assert "SimulatedFault" in next(e["detail"] for e in events if e["status"] == "disconnected")
        delays = [
            float(e["detail"].rsplit("retrying in ", 1)[1].split()[0]) for e in events if e["status"] == "disconnected"
        ]
        assert delays[:3] == [0.1, 0.2, 0.4]  # doubling from backoff_initial_s
        assert max(delays) == 0.4  # capped at backoff_max_s
        devices_now = {d["id"]: d for d in (await client.ok("list_devices"))["devices"]}
        assert devices_now["steady"]["status"] == "connected"  # other devices are not disturbed
        async with aiohttp.ClientSession() as http:
            health = await (await http.get(f"{gateway.base_url}/healthz")).json()
            metrics = await (await http.get(f"{gateway.base_url}/metrics")).text()
        flaky = next(d for d in health["devices"] if d["id"] == "flaky")
        assert flaky["reconnects"] >= 3
        assert 'hwgw_device_reconnects_total{device="flaky"}' in metrics
        await client.close()
    finally:
        assert await gateway.stop() == 0


async def test_auth_gates_everything_but_hello_auth_and_ping(tmp_path: Path) -> None:
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, extra='[auth]\ntokens = ["s3cret-token-0123"]\n'))
    try:
        for transport in TRANSPORTS:
            client = await connect(gateway, transport)
            assert client.hello["auth_required"] is True
            await client.ok("ping")
            for op, fields in [("list_devices", {}), ("subscribe", {"topics": ["**"]}), ("estop", {})]:
                error = await client.error(op, **fields)
                assert error["code"] == "unauthorized"
            error = await client.error("command", device="sim-1", type="led")
            assert error["code"] == "unauthorized"
            assert (await client.error("auth", token="wrong"))["message"] == "token refused"
            assert not [m for m in client.pushed if m["op"] in ("state", "device")]
            assert await client.ok("auth", token="s3cret-token-0123") == {
                "authenticated": True,
                "name": "tokens[0]",
                "role": "admin",
                "devices": ["*"],
            }
            await client.ok("subscribe", topics=["sim-1/state"])
            await client.wait_for(lambda m: m["op"] == "state")
            await client.close()
    finally:
        assert await gateway.stop() == 0


async def test_rumble_lease_ends_when_its_client_disconnects(gateway: RunningGateway) -> None:
    holder = await connect(gateway, "tcp")
    watcher = await connect(gateway, "ws")
    await watcher.ok("subscribe", topics=["sim-1/outputs"])
    await holder.ok("command", device="sim-1", type="rumble", data={"low": 0.5, "high": 1.0, "duration_s": 30})
    await watcher.wait_for(lambda m: m["op"] == "state" and m["data"]["rumble_high"] == 1.0)
    await holder.close()
    stopped = await watcher.wait_for(lambda m: m["op"] == "state" and m["data"]["rumble_high"] == 0.0)
    assert stopped["data"]["rumble_low"] == 0.0
    await watcher.close()


async def test_rumble_stops_by_itself_when_its_time_runs_out(gateway: RunningGateway) -> None:
    client = await connect(gateway, "ws")
    await client.ok("subscribe", topics=["sim-1/outputs"])
    await client.ok("command", device="sim-1", type="rumble", data={"duration_s": 0.3})
    await client.wait_for(lambda m: m["op"] == "state" and m["data"]["rumble_low"] == 1.0)
    await client.wait_for(lambda m: m["op"] == "state" and m["data"]["rumble_low"] == 0.0, timeout=2.0)
    await client.close()


async def test_healthz_metrics_and_index(gateway: RunningGateway) -> None:
    client = await connect(gateway, "ws")
    await client.ok("subscribe", topics=["sim-1/state"])
    await client.ok("command", device="sim-1", type="led", data={"rgb": [1, 1, 1]})
    await client.wait_for(lambda m: m["op"] == "state")
    async with aiohttp.ClientSession() as http:
        response = await http.get(f"{gateway.base_url}/healthz")
        health = await response.json()
        metrics = await (await http.get(f"{gateway.base_url}/metrics")).text()
        index = await (await http.get(f"{gateway.base_url}/")).text()
    assert response.status == 200
    assert health["status"] == "ok"
    assert health["clients"] == 1
    assert health["loop_lag_ms"] >= 0
    assert health["devices"] == [{"id": "sim-1", "kind": "sim", "status": "connected", "detail": "", "reconnects": 0}]
    for line in (
        'hwgw_bus_published_total{topic="sim-1/state"}',
        'hwgw_client_queue_depth{client="',
        'hwgw_client_coalesced_total{client="',
        'hwgw_client_dropped_total{client="',
        'hwgw_command_latency_seconds_count{device="sim-1",outcome="ok"} 1.0',
        'hwgw_device_reconnects_total{device="sim-1"} 0.0',
        "hwgw_event_loop_lag_seconds ",
        'hwgw_frames_encoded_total{encoding="json"}',
    ):
        assert line in metrics
    assert '<script type="module" src="/static/app.js"></script>' in index  # the dashboard lists devices itself
    await client.close()


async def test_browser_origin_of_another_site_is_refused(gateway: RunningGateway) -> None:
    async with aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(f"{gateway.base_url}/ws", origin="http://evil.example")
        assert refused.value.status == 403
        own = f"http://127.0.0.1:{gateway.http_port}"
        async with http.ws_connect(f"{gateway.base_url}/ws", origin=own) as ws:
            assert (await ws.receive_json())["op"] == "hello"


async def test_demo_serves_states_and_a_led_command_round_trips(tmp_path: Path) -> None:
    http_port, msgpack_port = free_port(), free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "demo", "--http-port", str(http_port), "--msgpack-port",
        str(msgpack_port), "--unix-socket", str(tmp_path / "demo.sock"), "--log-format", "json",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        async with asyncio.timeout(20):  # the banner comes once the gateway listens, after the first logs
            while not (await proc.stdout.readline()).startswith(b"hwgateway demo"):
                pass
        for _ in range(50):
            try:
                ws = await websockets.connect(f"ws://127.0.0.1:{http_port}/ws")
                break
            except OSError:
                await asyncio.sleep(0.1)
        async with ws:
            assert '"hello"' in await ws.recv()
            await ws.send('{"op":"subscribe","id":1,"topics":["sim-pad/state"]}')
            await ws.send('{"op":"command","id":2,"device":"sim-lamp","type":"led","data":{"rgb":[0,0,1]}}')
            seen = {"state": False, "result": False}
            async with asyncio.timeout(5):
                while not all(seen.values()):
                    message = await ws.recv()
                    seen["state"] |= '"op":"state"' in message and '"sim-pad/state"' in message
                    seen["result"] |= '"id":2,"ok":true' in message
    finally:
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 10) == 0


async def test_clients_vanishing_mid_stream_leave_the_daemon_healthy(tmp_path: Path) -> None:
    devices = '[devices.fast]\nkind = "sim"\nrate_hz = 1000.0\n'
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, devices))
    try:
        for _ in range(3):
            clients = [await connect(gateway, transport) for transport in TRANSPORTS for _ in range(3)]
            for client in clients:
                await client.ok("subscribe", topics=["fast/**"])
            await asyncio.sleep(0.2)
            for client in clients:  # no goodbye: the sockets just drop
                if isinstance(client, MsgpackClient):
                    client.writer.transport.abort()
                else:
                    client.ws.transport.abort()  # type: ignore[attr-defined]
        async with aiohttp.ClientSession() as http:
            for _ in range(50):
                health = await (await http.get(f"{gateway.base_url}/healthz")).json()
                if health["clients"] == 0:
                    break
                await asyncio.sleep(0.1)
        assert health["clients"] == 0
        assert health["status"] == "ok"
        survivor = await connect(gateway, "ws")
        await survivor.ok("subscribe", topics=["fast/state"])
        await survivor.wait_for(lambda m: m["op"] == "state")
        await survivor.close()
    finally:
        assert await gateway.stop() == 0
    assert not [line for line in gateway.logs if line.get("level") in ("error", "critical")]


async def test_unix_socket_in_a_missing_folder_exits_1_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "nounix.toml"
    config.write_text(f'[server]\nhttp_port = 0\nmsgpack_port = 0\nunix_socket = "{tmp_path}/absent/gw.sock"\n')
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "run", "--config", str(config), "--log-format", "json",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 1
    assert b"unix socket" in output
    assert b"set server.unix_socket" in output
