"""What a newcomer meets first: config errors reported whole at load, both config-file forms, the demo's
banner only once it listens, a quiet failed start, /healthz `degraded`, and honest reconnect counts."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path

import aiohttp
import msgpack
import pytest

from devices.registry import KINDS
from gateway.config import loads
from gateway.errors import ConfigError
from tests.harness import connect, free_port, gateway_config
from tests.inprocess import running_gateway

BAD_CONFIG = """
[server]
http_port = "x"

[devices.thymio]
kind = "aseba"
target = "serial:/dev/ttyACM0"

[devices.remote-a]
kind = "wiimote"
address = "00:1F:32:AA:BB:CC"

[devices.remote-b]
kind = "wiimote"
address = "00:1f:32:aa:bb:cc"

[devices.nameless]
rate_hz = 3.0

[devices.pad]
kind = "sim"
rate_hz = "fast"
colour = "red"
"""

EVERY_ERROR = [
    "server.http_port: expected an integer, got str 'x'",
    "devices.thymio: target 'serial:/dev/ttyACM0': expected a Dashel target",
    f"devices.nameless.kind: required key is missing (one of: {', '.join(sorted(KINDS.kinds()))})",
    "devices.pad.rate_hz: expected a number, got str 'fast'",
    "devices.pad.colour: unknown key",
    "devices.remote-b: Wii Remote 00:1f:32:aa:bb:cc is already taken by devices.remote-a",
]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway", *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_every_config_error_is_reported_at_once() -> None:
    with pytest.raises(ConfigError) as caught:
        loads(BAD_CONFIG)
    problems = [str(problem) for problem in caught.value.errors]
    assert len(problems) == len(EVERY_ERROR)
    for problem, expected in zip(problems, EVERY_ERROR, strict=True):
        assert problem.startswith(expected), (problem, expected)


@pytest.mark.parametrize(
    ("table", "error"),
    [
        ('kind = "aseba"\ntarget = "tcp:localhost;port"', "port 'port' is not a number"),
        ('kind = "aseba"\ntarget = "ser:"', "no serial device"),
        ('kind = "wiimote"\naddress = "00:1f:32"', "is not a Bluetooth address"),
        ('kind = "kortex"\nanalog_output_modes = ["voltage"]', "analog_output_modes needs 4 entries"),
        ('kind = "gamepad"\nguid = "xyz"', "is not 32 hexadecimal digits"),
    ],
)
def test_device_options_are_checked_at_load(table: str, error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        loads(f"[devices.dev]\n{table}\n")


def test_a_simulated_thymio_ignores_its_target_and_two_simulated_remotes_do_not_collide() -> None:
    config = loads(
        '[devices.t]\nkind = "aseba"\nsimulate = true\ntarget = "whatever"\n'
        '[devices.a]\nkind = "wiimote"\ntransport = "sim"\n[devices.b]\nkind = "wiimote"\ntransport = "sim"\n'
    )
    assert [device.id for device in config.devices] == ["t", "a", "b"]


@pytest.mark.parametrize("form", [["check-config"], ["check-config", "--config"], ["run"], ["run", "--config"]])
def test_check_config_and_run_take_both_forms_and_list_every_error(tmp_path: Path, form: list[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(BAD_CONFIG)
    done = run_cli(*form, str(bad))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == f"hwgateway: {len(EVERY_ERROR)} configuration errors:"
    for line, expected in zip(lines[1:], EVERY_ERROR, strict=True):
        assert line.startswith(f"  {expected}")


def test_check_config_ok_in_both_forms_and_two_different_files_refused(tmp_path: Path) -> None:
    good = tmp_path / "good.toml"
    good.write_text('[devices.sim-1]\nkind = "sim"\n')
    for args in (["check-config", str(good)], ["check-config", "--config", str(good)]):
        done = run_cli(*args)
        assert (done.returncode, done.stdout) == (0, f"{good}: ok; devices: sim-1 (sim)\n")
    done = run_cli("check-config", str(good), "--config", str(tmp_path / "other.toml"))
    assert done.returncode == 2
    assert "two configuration files" in done.stderr


async def test_demo_on_a_port_in_use_prints_no_banner_and_no_traceback(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gateway", "demo", "--http-port", str(port), "--msgpack-port", str(free_port()),
            "--unix-socket", str(tmp_path / "demo.sock"), "--log-format", "json",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        stdout, stderr = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 1
    output = (stdout + stderr).decode()
    assert "address already in use" in output
    assert "Press Ctrl-C" not in output
    assert "Traceback" not in output
    assert "Exception in thread" not in output


async def test_demo_banner_comes_after_listening_with_the_bound_ports(tmp_path: Path) -> None:
    http_port, msgpack_port = free_port(), free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "demo", "--http-port", str(http_port), "--msgpack-port", str(msgpack_port),
        "--unix-socket", str(tmp_path / "demo.sock"), "--log-format", "json",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    assert proc.stdout is not None
    lines: list[str] = []
    try:
        async with asyncio.timeout(20):
            while not lines or lines[-1] != "Press Ctrl-C to stop.":
                lines.append((await proc.stdout.readline()).decode().rstrip("\n"))
    finally:
        proc.terminate()
        await proc.communicate()
    listening = next(
        index
        for index, line in enumerate(lines)
        if line.startswith("{") and json.loads(line).get("event") == "listening"
    )
    banner = next(index for index, line in enumerate(lines) if line.startswith("hwgateway demo:"))
    assert listening < banner
    assert f"  WebSocket   ws://127.0.0.1:{http_port}/ws" in lines
    assert f"  msgpack     tcp://127.0.0.1:{msgpack_port} and unix:{tmp_path / 'demo.sock'}" in lines
    assert proc.returncode == 0


async def test_healthz_is_degraded_while_a_device_is_down_and_reconnects_count_only_lost_connections(
    tmp_path: Path,
) -> None:
    # Nothing listens on the unreachable Thymio's port: it fails over and over without ever connecting.
    devices = '[devices.sim-1]\nkind = "sim"\n'
    devices += f'[devices.unreachable]\nkind = "aseba"\ntarget = "tcp:127.0.0.1;{free_port()}"\n'
    # A configuration problem only the run can find (a mapping file that is not there yet): no traceback.
    devices += f'[devices.pad]\nkind = "gamepad"\nvirtual = true\nmapping_files = ["{tmp_path / "absent.txt"}"]\n'
    async with running_gateway(tmp_path, gateway_config(tmp_path, devices)) as gateway:
        await asyncio.sleep(1.5)  # several failed attempts with backoff 0.1-0.4 s
        async with aiohttp.ClientSession() as http:
            response = await http.get(f"{gateway.base_url}/healthz")
            health = await response.json()
            metrics = await (await http.get(f"{gateway.base_url}/metrics")).text()
        assert response.status == 200
        assert health["status"] == "degraded"
        assert any(reason.startswith("device unreachable is ") for reason in health["reasons"])
        unreachable = next(device for device in health["devices"] if device["id"] == "unreachable")
        assert unreachable["status"] in ("connecting", "disconnected")
        assert "unreachable" in unreachable["detail"] or unreachable["status"] == "connecting"
        assert unreachable["reconnects"] == 0
        assert 'hwgw_device_reconnects_total{device="unreachable"} 0.0' in metrics
        failures = [line for line in gateway.logs if str(line.get("event", "")).startswith("device pad failed")]
        assert failures
        assert "cannot read mapping file" in failures[0]["event"]
        assert not [line for line in gateway.logs if "exception" in line]  # a structured traceback


async def test_a_msgpack_map_with_bin_keys_is_told_so_and_the_connection_goes_on(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, gateway_config(tmp_path)) as gateway:
        client = await connect(gateway, "tcp")
        await client.send_raw(msgpack.packb({b"op": b"ping", b"id": 1}, use_bin_type=True))
        answer = await client.result(None)
        assert answer["error"]["code"] == "bad_request"
        assert "keys must be msgpack str, not bin" in answer["error"]["message"]
        assert (await client.ok("ping"))["pong"] is True
        await client.close()
