"""The service around the daemon: systemd unit, sd_notify and watchdog, udev rules, Dockerfile."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dockerfile_parse import DockerfileParser

from gateway.app import STOP_DEADLINE_S, LoopMonitor
from gateway.core.config import ServerConfig
from gateway.sdnotify import Notifier
from gateway.servers.limits import HTTP_RESERVE
from tests.conftest import require_peer
from tests.harness import free_port

ROOT = Path(__file__).resolve().parent.parent
UNIT = ROOT / "systemd" / "hwgateway.service"
RULES = ROOT / "systemd" / "60-hwgateway.rules"
INSTALLED_VENV = "/opt/hwgateway/venv"


def unit_entries() -> list[tuple[str, str, str]]:
    """(section, key, value) for every assignment of the unit file, repeated keys included."""
    entries, section = [], ""
    for line in UNIT.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        entries.append((section, key.strip(), value.strip()))
    return entries


def unit_value(key: str) -> str:
    values = [value for _, name, value in unit_entries() if name == key]
    assert len(values) == 1, f"{key}: {values}"
    return values[0]


def test_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    analyze = require_peer("systemd-analyze")
    # verify checks that ExecStart exists: point it at this checkout's installed program.
    copy = tmp_path / "hwgateway.service"
    copy.write_text(UNIT.read_text().replace(INSTALLED_VENV, sys.prefix))
    done = subprocess.run([analyze, "verify", str(copy)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "hwgateway.service" not in done.stderr, done.stderr


def test_unit_open_file_limit_leaves_room_for_the_default_client_cap() -> None:
    server = ServerConfig()
    assert int(unit_value("LimitNOFILE")) >= server.max_clients + server.fd_reserve + HTTP_RESERVE
    # The whole shutdown (bounded by the gateway) fits well inside the stop timeout.
    assert int(unit_value("TimeoutStopSec").rstrip("s")) >= STOP_DEADLINE_S * 2


def test_unit_declares_notify_watchdog_user_and_hardening() -> None:
    assert unit_value("Type") == "notify"
    assert unit_value("Restart") == "on-failure"
    assert unit_value("WatchdogSec") == "10s"
    assert unit_value("User") == "hwgateway"
    assert "dialout" in unit_value("SupplementaryGroups")
    assert unit_value("RuntimeDirectory") == "hwgateway"
    assert unit_value("ConfigurationDirectory") == "hwgateway"
    for key, value in {
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
        "NoNewPrivileges": "yes",
        # The one privilege: SCHED_FIFO for a 1 kHz control loop's thread (gateway/realtime.py).
        "CapabilityBoundingSet": "CAP_SYS_NICE",
        "AmbientCapabilities": "CAP_SYS_NICE",
        "RestrictRealtime": "no",
        "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6 AF_BLUETOOTH AF_NETLINK",
        "DevicePolicy": "closed",
    }.items():
        assert unit_value(key) == value, key
    allowed = [value for _, key, value in unit_entries() if key == "DeviceAllow"]
    assert {"char-ttyACM rw", "char-ttyUSB rw", "char-hidraw rw"} <= set(allowed)
    # The runtime directory is where the config's default Unix socket lives.
    assert f"/run/{unit_value('RuntimeDirectory')}/" in (ROOT / "config.toml").read_text()


def exec_start(config: Path) -> list[str]:
    """The unit's ExecStart, with the installed venv replaced by this one and the config by `config`."""
    argv = shlex.split(unit_value("ExecStart"))
    assert argv[0] == f"{INSTALLED_VENV}/bin/hwgateway"
    argv[0] = str(Path(sys.prefix) / "bin" / "hwgateway")
    argv[argv.index("--config") + 1] = str(config)
    return argv


class NotifyListener:
    """A datagram socket standing in for systemd's notify socket; records (time, message)."""

    def __init__(self, address: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(address)
        self.sock.setblocking(False)
        self.messages: list[tuple[float, str]] = []

    async def receive(self, timeout: float = 10.0) -> None:
        async with asyncio.timeout(timeout):
            data = await asyncio.get_running_loop().sock_recv(self.sock, 4096)
        self.messages.append((time.monotonic(), data.decode()))

    async def wait_for(self, line: str, timeout: float = 15.0) -> float:
        """The time of the first message with `line` (a line ending in `*`: a line starting with the rest)."""
        prefix = line[:-1] if line.endswith("*") else None

        def matches(text: str) -> bool:
            return text.startswith(prefix) if prefix is not None else text == line

        async with asyncio.timeout(timeout):
            while True:
                for stamp, message in self.messages:
                    if any(matches(text) for text in message.splitlines()):
                        return stamp
                await self.receive(timeout)

    def pings(self) -> list[float]:
        return [stamp for stamp, message in self.messages if "WATCHDOG=1" in message.splitlines()]


async def test_daemon_under_the_units_command_line_notifies_and_feeds_the_watchdog(tmp_path: Path) -> None:
    http_port, msgpack_port = free_port(), free_port()
    config = tmp_path / "config.toml"
    config.write_text(
        f'[server]\nhttp_port = {http_port}\nmsgpack_port = {msgpack_port}\nunix_socket = "{tmp_path / "s"}"\n'
        '[devices.sim]\nkind = "sim"\nrate_hz = 10.0\n'
    )
    listener = NotifyListener(str(tmp_path / "notify"))
    env = {**os.environ, "NOTIFY_SOCKET": str(tmp_path / "notify"), "WATCHDOG_USEC": "1000000"}
    proc = await asyncio.create_subprocess_exec(
        *exec_start(config), env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    try:
        await listener.wait_for("READY=1")
        # READY means every listener accepts connections already.
        for port in (http_port, msgpack_port):
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
        _, writer = await asyncio.open_unix_connection(str(tmp_path / "s"))
        writer.close()
        ready_message = next(m for _, m in listener.messages if "READY=1" in m)
        assert "STATUS=1/1 devices connected, 0 clients" in ready_message.splitlines()

        # Pings while healthy; then the process hangs (frozen 2.5 s, from the test, so that a slow start
        # on a loaded machine cannot put the hang before the watchdog runs): the lag is seen once it runs
        # again, and a tick withholds its ping (says unhealthy); then it pings again. (The period on a
        # sleep the test releases: test_the_watchdog_pings_each_half_interval_only_while_healthy.)
        while len(listener.pings()) < 2:
            await listener.receive()
        proc.send_signal(signal.SIGSTOP)
        await asyncio.sleep(2.5)
        proc.send_signal(signal.SIGCONT)
        unhealthy = await listener.wait_for("STATUS=unhealthy: 1/1 devices connected, 0 clients")
        while not [stamp for stamp in listener.pings() if stamp > unhealthy]:
            await listener.receive()
        before = [stamp for stamp in listener.pings() if stamp < unhealthy]
        assert len(before) >= 2, listener.messages  # it pinged while healthy

        proc.send_signal(signal.SIGTERM)
        await listener.wait_for("STOPPING=1")
        assert await asyncio.wait_for(proc.wait(), 15) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        listener.sock.close()


async def test_the_watchdog_pings_each_half_interval_only_while_healthy() -> None:
    name = f"hwgateway-test-watchdog-{os.getpid()}"
    health = [True, True, False, True]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == len(health):
            raise asyncio.CancelledError  # the daemon's stop

    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.setblocking(False)
        notifier = Notifier({"NOTIFY_SOCKET": "@" + name, "WATCHDOG_USEC": "3000000"})
        ticks = iter(health)
        with pytest.raises(asyncio.CancelledError):
            await notifier.watchdog(lambda: next(ticks), lambda: "ok", sleep=sleep)
        notifier.close()
        sent = [sock.recv(100).decode() for _ in health]
    assert slept == [1.5] * len(health)  # half of WATCHDOG_USEC's 3 s
    assert sent == ["WATCHDOG=1\nSTATUS=ok"] * 2 + ["STATUS=unhealthy: ok", "WATCHDOG=1\nSTATUS=ok"]


def test_notifier_reaches_an_abstract_socket_and_is_silent_without_one() -> None:
    name = f"hwgateway-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        notifier = Notifier({"NOTIFY_SOCKET": "@" + name, "WATCHDOG_USEC": "3000000"})
        notifier.notify("READY=1", "STATUS=ok")
        assert sock.recv(100) == b"READY=1\nSTATUS=ok"
        assert notifier.watchdog_interval == 3.0
        notifier.close()
    silent = Notifier({})
    assert not silent.enabled
    silent.notify("READY=1")
    other_process = Notifier({"NOTIFY_SOCKET": "@x", "WATCHDOG_USEC": "5", "WATCHDOG_PID": "1"})
    assert other_process.watchdog_interval is None  # the watchdog was meant for another process
    other_process.close()


UDEV_MATCH_KEYS = {"SUBSYSTEM", "KERNEL", "KERNELS", "ATTRS{idVendor}", "ATTRS{idProduct}", "ACTION"}
UDEV_ASSIGN_KEYS = {"GROUP", "MODE", "SYMLINK", "TAG", "OWNER"}
UDEV_TOKEN = re.compile(r'^\s*([A-Z]+(?:\{[A-Za-z_]+\})?)\s*(==|!=|\+=|:=|=)\s*"([^"]*)"\s*(?:,|$)')


def parse_rules(text: str) -> list[list[tuple[str, str, str]]]:
    """A strict parser of the udev rule syntax used here: comma-separated KEY op "value" tokens."""
    rules = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        tokens, rest = [], line
        while rest.strip():
            match = UDEV_TOKEN.match(rest)
            assert match, f"line {number}: cannot parse {rest!r}"
            key, op, value = match.groups()
            if op in ("==", "!="):
                assert key in UDEV_MATCH_KEYS, f"line {number}: {key} is not a match key"
            else:
                assert key in UDEV_ASSIGN_KEYS, f"line {number}: {key} cannot be assigned"
            tokens.append((key, op, value))
            rest = rest[match.end() :]
        rules.append(tokens)
    return rules


def test_udev_rules_pass_udevadm_verify_where_it_exists() -> None:
    udevadm = shutil.which("udevadm")
    if udevadm is None or subprocess.run([udevadm, "verify", "--help"], capture_output=True, check=False).returncode:
        # systemd < 253 (Debian 12) has no `udevadm verify`: the parser test below checks the syntax.
        return
    done = subprocess.run([udevadm, "verify", str(RULES)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_udev_rules_parse_and_cover_the_devices() -> None:
    rules = parse_rules(RULES.read_text())
    assert all(("GROUP", "=", "hwgateway") in rule and ("MODE", "=", "0660") in rule for rule in rules)
    flat = [dict((k, v) for k, _, v in rule) for rule in rules]
    assert {"SUBSYSTEM": "hidraw", "KERNELS": "0005:057E:0306.*", "GROUP": "hwgateway", "MODE": "0660"} in flat
    assert any(rule.get("KERNELS") == "0005:057E:0330.*" for rule in flat)
    for product in ("000a", "000c"):
        assert any(
            rule.get("SUBSYSTEM") == "tty"
            and rule.get("ATTRS{idVendor}") == "0617"
            and rule.get("ATTRS{idProduct}") == product
            for rule in flat
        )
    assert any(rule.get("SUBSYSTEM") == "hidraw" and rule.get("ATTRS{idVendor}") == "054c" for rule in flat)


def test_the_parser_rejects_broken_rules() -> None:
    with pytest.raises(AssertionError, match="cannot parse"):
        parse_rules('SUBSYSTEM=="hidraw" GROUP="x"')
    with pytest.raises(AssertionError, match="cannot be assigned"):
        parse_rules('SUBSYSTEM="hidraw"')


def test_dockerfile_is_multi_stage_non_root_with_healthcheck() -> None:
    parser = DockerfileParser(path=str(ROOT / "Dockerfile"))
    instructions = parser.structure
    assert all(
        i["instruction"] in {"FROM", "COPY", "RUN", "ENV", "USER", "EXPOSE", "HEALTHCHECK", "CMD", "COMMENT"}
        for i in instructions
    )
    stages = [i["value"] for i in instructions if i["instruction"] == "FROM"]
    assert len(stages) == 2
    assert all(stage.startswith("python:3.11-slim") for stage in stages)
    final = instructions[max(i for i, ins in enumerate(instructions) if ins["instruction"] == "FROM") :]
    users = [i["value"] for i in final if i["instruction"] == "USER"]
    assert users == ["hwgateway"]
    exposed = " ".join(i["value"] for i in final if i["instruction"] == "EXPOSE")
    assert "8470/tcp" in exposed
    assert "8471/tcp" in exposed
    healthcheck = next(i["value"] for i in final if i["instruction"] == "HEALTHCHECK")
    assert "http://127.0.0.1:8470/healthz" in healthcheck
    # The image installs with the same script that `make check-install` runs in every `make test`.
    runs = [i["value"] for i in instructions if i["instruction"] == "RUN"]
    assert any(run.startswith("/src/scripts/install-venv.sh /opt/hwgateway/venv") for run in runs)
    # With the extras `make install` installs by default: every device kind the README describes.
    assert any(run == "/src/scripts/install-venv.sh /opt/hwgateway/venv gamepad,ble" for run in runs)
    assert "check-install" in (ROOT / "Makefile").read_text()
    for copy in (i["value"].split() for i in instructions if i["instruction"] == "COPY"):
        if copy[0].startswith("--from"):
            continue
        for source in copy[:-1]:
            assert (ROOT / source).exists(), source
    cmd = next(i["value"] for i in final if i["instruction"] == "CMD")
    assert "/etc/hwgateway/config.toml" in cmd


async def test_a_hang_is_kept_for_the_next_watchdog_tick_after_newer_small_samples() -> None:
    # After a hang the watchdog's tick may run before the monitor records the lag, and the monitor's
    # next samples are small again: the peak since the previous tick is what the next tick must see.
    monitor = LoopMonitor(period=0.01)
    monitor.start()
    try:
        await asyncio.sleep(0.05)
        monitor.take_peak()
        time.sleep(0.3)  # noqa: ASYNC251 - the hang being measured
        await asyncio.sleep(0.1)  # the monitor records it, then newer samples after it
        assert len(monitor.samples) >= 2
        assert monitor.take_peak() >= 0.29  # never less than the hang (a loaded machine only adds)
    finally:
        monitor.stop()
