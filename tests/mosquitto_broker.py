"""Debian's mosquitto as a test peer: started on a free loopback port with a generated config, then stopped.

The config listens on 127.0.0.1 only, turns Nagle off (`set_tcp_nodelay true`, without which QoS 1
round trips take tens of milliseconds) and keeps nothing on disk. `restart` stops and starts the same
broker on the same port (for outage tests); retained messages are lost with it, as after a real crash.
`start_broker(tmp_path, tls=BrokerTls(...), users={...})` adds a TLS listener (optionally requiring a
client certificate) and password authentication (`mosquitto_passwd`), for mqtts:// tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import require_peer
from tests.harness import free_port

START_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class BrokerTls:
    """A TLS listener's files (PEM): the CA that signs client certificates, the server's chain and key."""

    ca_file: Path
    cert_file: Path
    key_file: Path
    require_certificate: bool = False


def broker_config(port: int, tls: BrokerTls | None = None, password_file: Path | None = None) -> str:
    """A mosquitto.conf for tests: loopback only, no persistence, anonymous clients, TCP_NODELAY."""
    secure = ""
    if tls is not None:
        secure += f"cafile {tls.ca_file}\ncertfile {tls.cert_file}\nkeyfile {tls.key_file}\n"
        secure += f"require_certificate {'true' if tls.require_certificate else 'false'}\n"
    if password_file is not None:
        secure += f"password_file {password_file}\n"
    return (
        f"listener {port} 127.0.0.1\n"
        f"{secure}"
        f"allow_anonymous {'false' if password_file is not None else 'true'}\n"
        "persistence false\n"
        "set_tcp_nodelay true\n"
        "log_dest stderr\n"
        "log_type error\n"
        "log_type warning\n"
        # Started as root (CI, or the namespace's mapped root) mosquitto would switch to its own
        # user, which the user namespace cannot do: stay the user that started it.
        f"user {getpass.getuser()}\n"
    )


@dataclass
class Broker:
    """A running mosquitto on `port`."""

    executable: str
    config_path: Path
    port: int
    proc: asyncio.subprocess.Process | None = None
    tls: bool = False

    @property
    def url(self) -> str:
        return f"{'mqtts' if self.tls else 'mqtt'}://127.0.0.1:{self.port}"

    async def start(self) -> None:
        """Start mosquitto and wait until it accepts connections."""
        self.proc = await asyncio.create_subprocess_exec(
            self.executable, "-c", str(self.config_path),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        async with asyncio.timeout(START_TIMEOUT_S):
            while True:
                if self.proc.returncode is not None:
                    assert self.proc.stderr is not None
                    raise RuntimeError(f"mosquitto exited: {(await self.proc.stderr.read()).decode()}")
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 0.2):
                    return
                await asyncio.sleep(0.02)

    async def stop(self) -> None:
        """Stop mosquitto (SIGTERM, then SIGKILL after 5 s)."""
        proc, self.proc = self.proc, None
        if proc is None or proc.returncode is not None:
            return
        proc.terminate()
        try:
            async with asyncio.timeout(5.0):
                await proc.wait()
        except TimeoutError:
            proc.kill()
            await proc.wait()

    async def restart(self) -> None:
        """Stop and start again on the same port."""
        await self.stop()
        await self.start()


async def start_broker(tmp_path: Path, tls: BrokerTls | None = None, users: dict[str, str] | None = None) -> Broker:
    """Start Debian's mosquitto on a free loopback port (skipped, or failed under HWGW_REQUIRE_PEERS, without it).

    `tls` makes the listener TLS-only; `users` (name → password) turns anonymous access off.
    """
    executable = require_peer("mosquitto")
    port = free_port()
    password_file = None
    if users:
        passwd = require_peer("mosquitto_passwd")
        password_file = tmp_path / "mosquitto.passwd"
        password_file.touch()
        for user, password in users.items():
            done = await asyncio.create_subprocess_exec(passwd, "-b", str(password_file), user, password)
            if await done.wait() != 0:
                raise RuntimeError("mosquitto_passwd failed")
    config_path = tmp_path / "mosquitto.conf"
    config_path.write_text(broker_config(port, tls, password_file))
    broker = Broker(executable, config_path, port, tls=tls is not None)
    await broker.start()
    return broker


@pytest.fixture
async def mosquitto(tmp_path: Path) -> AsyncIterator[Broker]:
    """A mosquitto broker for one test."""
    broker = await start_broker(tmp_path)
    try:
        yield broker
    finally:
        await broker.stop()
