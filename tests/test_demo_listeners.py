"""`hwgateway demo` beside other tools: every listener moves or turns off; a live Unix socket is never removed."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import signal
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from gateway.cli import EXIT_CONFIG_ERROR
from tests.harness import DEMO_IDS, _until_listening, connect, gateway_config, start_gateway


@contextmanager
def occupied() -> Iterator[int]:
    """A loopback port another program listens on (Thymio Suite's TDM, say)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


async def _demo(*flags: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "demo", "--log-format", "json", *flags,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip


@asynccontextmanager
async def running_demo(*flags: str) -> AsyncIterator[Any]:
    proc = await _demo(*flags)
    gateway = await _until_listening(proc)
    try:
        yield gateway
    finally:
        assert await gateway.stop() == 0


async def test_a_demo_beside_thymio_suite_moves_or_turns_off_its_tdm_listeners(tmp_path: Path) -> None:
    base = ["--http-port", "0", "--msgpack-port", "0", "--rosbridge-port", "0", "--foxglove-port", "0"]
    base += ["--unix-socket", str(tmp_path / "demo.sock")]
    with occupied() as tdm_tcp, occupied() as tdm_ws:
        # On the ports another TDM holds: a clear failure, exit 1.
        proc = await _demo(*base, "--tdm-port", str(tdm_tcp), "--tdm-ws-port", str(tdm_ws))
        output, _ = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 1, output.decode()[-2000:]
        assert b"TDM" in output
        # Moved: the TDM face listens on other ports.
        async with running_demo(*base, "--tdm-port", "0", "--tdm-ws-port", "0") as demo:
            tdm = [line for line in demo.logs if line.get("event") == "tdm face listening"]
            assert tdm, demo.logs[-20:]
            assert tdm[0]["tcp"] not in (0, tdm_tcp, 8596)
            assert tdm[0]["websocket"] not in (0, tdm_ws, 8597)
        # Off: no TDM face at all.
        async with running_demo(*base, "--tdm-port", "off") as demo:
            assert not [line for line in demo.logs if line.get("event") == "tdm face listening"]


async def test_every_listener_of_the_demo_but_http_turns_off() -> None:
    flags = ["--http-port", "0", "--msgpack-port", "off", "--unix-socket", "off", "--rosbridge-port", "off"]
    async with running_demo(*flags, "--foxglove-port", "off", "--tdm-ws-port", "off") as demo:
        listening = demo.events("listening")[0]
        assert listening["msgpack"] is None
        assert listening["unix"] is None
        assert listening["rosbridge"] is None
        assert listening["foxglove"] is None
        assert not [line for line in demo.logs if line.get("event") == "tdm face listening"]
        client = await connect(demo, "ws")
        assert await client.ok("list_devices")
        await client.close()


async def test_bad_port_flags_are_refused() -> None:
    for flag, value in (("--tdm-port", "70000"), ("--rosbridge-port", "nope"), ("--http-port", "off")):
        proc = await _demo(flag, value)
        output, _ = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 2, (flag, value, output)


async def test_a_bad_mqtt_url_is_refused_as_the_config_files_would_be() -> None:
    proc = await _demo("--mqtt", "http://broker.example/x")
    output, _ = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == EXIT_CONFIG_ERROR, output
    assert b"mqtt.url" in output, output


async def test_a_second_gateway_on_the_same_unix_socket_leaves_the_first_ones_alone(tmp_path: Path) -> None:
    path = tmp_path / "gw.sock"
    first = await start_gateway(tmp_path, gateway_config(tmp_path))
    assert first.unix_socket == str(path)
    try:
        with occupied() as rosbridge:
            # A second gateway that would fail after the Unix socket (its rosbridge port is taken):
            # it used to remove the first one's socket on the way, and then its own on the way out.
            rosbridge_on = f"[rosbridge]\nenabled = true\nport = {rosbridge}\n"
            config = _write(tmp_path, gateway_config(tmp_path, extra=rosbridge_on))
            second = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "gateway", "run", "--config", str(config), "--log-format", "json",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            )  # fmt: skip
            output, _ = await asyncio.wait_for(second.communicate(), 30)
        assert second.returncode == 1
        assert f"unix socket {path}: in use by another live process".encode() in output, output.decode()[-2000:]
        assert path.is_socket()
        client = await connect(first, "unix")
        assert await client.ok("list_devices")
        await client.close()
    finally:
        assert await first.stop() == 0
    assert not path.exists()  # the first removed its own socket on the way out


async def test_a_stale_unix_socket_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "gw.sock"
    with socket.socket(socket.AF_UNIX) as left_behind:  # bound, never listening: what a killed gateway leaves
        left_behind.bind(str(path))
    assert path.is_socket()
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path))
    try:
        client = await connect(gateway, "unix")
        assert await client.ok("list_devices")
        await client.close()
    finally:
        assert await gateway.stop(signal.SIGINT) == 0


def _write(tmp_path: Path, text: str) -> Path:
    config = tmp_path / "second.toml"
    config.write_text(text)
    return config


async def test_on_a_terminal_the_demo_prints_its_urls_after_the_start_up_logs(tmp_path: Path) -> None:
    primary, secondary = pty.openpty()
    flags = ["--http-port", "0", "--msgpack-port", "0", "--rosbridge-port", "0", "--foxglove-port", "0"]
    flags += ["--tdm-port", "0", "--tdm-ws-port", "0", "--unix-socket", str(tmp_path / "demo.sock")]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "demo", *flags, "--log-format", "json",
        stdin=asyncio.subprocess.DEVNULL, stdout=secondary, stderr=secondary,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    os.close(secondary)
    output = bytearray()
    loop = asyncio.get_running_loop()
    arrived = asyncio.Event()

    def read() -> None:
        try:
            output.extend(os.read(primary, 65536))
        except OSError:  # the terminal closed with the process
            loop.remove_reader(primary)
        arrived.set()

    loop.add_reader(primary, read)
    try:
        async with asyncio.timeout(60):
            while b"Press Ctrl-C to stop." not in output:
                await arrived.wait()
                arrived.clear()
        await asyncio.sleep(1.0)  # what comes right after the banner
        lines = output.decode(errors="replace").replace("\r", "").splitlines()
        banner = next(index for index, line in enumerate(lines) if line.startswith("hwgateway demo: simulated devices"))
        logs = [(index, json.loads(line)) for index, line in enumerate(lines) if line.startswith("{")]
        connected = {entry["device"]: index for index, entry in logs if entry.get("status") == "connected"}
        assert set(connected) == set(DEMO_IDS), lines
        assert max(connected.values()) < banner, lines  # every device connected above the URLs
        assert [entry["event"] for index, entry in logs if index > banner] == [], lines[banner:]
    finally:
        proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), 20) == 0
        loop.remove_reader(primary)
        os.close(primary)
