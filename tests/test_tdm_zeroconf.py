"""The TDM face announced over zeroconf (`_mobsya._tcp`), browsed with python-zeroconf's own browser.

Multicast runs only inside the tests' loopback-only network namespace, with multicast switched on
for `lo` there (`ip link set lo multicast on`): nothing leaves this host.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from tdmclient import ClientAsync

from devices.sim.aseba_playground import loopback_only
from gateway.faces.tdm.announce import MAX_INSTANCE_BYTES, SERVICE_TYPE, addresses_for, instance_name, service_uuid
from tests import tdm_programs
from tests.harness import free_port, gateway_config
from tests.inprocess import running_gateway

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(60)]

#: Generous: mDNS waits up to a few hundred ms before it answers, and CI machines are loaded.
BROWSE_TIMEOUT_S = 10.0
SIM_THYMIO = """
[devices.thymio]
kind = "aseba"
simulate = true
"""


def _tdm(tcp: int, ws: int, zeroconf: bool = True) -> str:
    return f"[tdm]\nenabled = true\ntcp_port = {tcp}\nws_port = {ws}\nzeroconf = {str(zeroconf).lower()}\n"


@pytest.fixture(scope="module")
def multicast_loopback() -> Iterator[None]:
    """Multicast on `lo`, only in a loopback-only namespace (never on a host's network)."""
    if not loopback_only():
        message = "zeroconf multicast runs only in the loopback-only namespace (scripts/loopback-only.sh)"
        if os.environ.get("HWGW_REQUIRE_PEERS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    subprocess.run(["ip", "link", "set", "lo", "multicast", "on"], check=True)
    yield
    subprocess.run(["ip", "link", "set", "lo", "multicast", "off"], check=True)  # the namespace as it was


@pytest_asyncio.fixture(loop_scope="module")
async def browser(multicast_loopback: None) -> AsyncIterator[Browsed]:
    from zeroconf.asyncio import AsyncServiceBrowser, AsyncZeroconf

    zeroconf = AsyncZeroconf(interfaces=["127.0.0.1"])
    browsed = Browsed(zeroconf)
    service_browser = AsyncServiceBrowser(zeroconf.zeroconf, [SERVICE_TYPE], handlers=[browsed.on_change])
    yield browsed
    await service_browser.async_cancel()
    await zeroconf.async_close()


async def logged(lines: list[dict[str, Any]], start: str) -> dict[str, Any]:
    """The first log line whose message starts with `start` (announcing runs in the background)."""
    async with asyncio.timeout(BROWSE_TIMEOUT_S):
        while True:
            for line in lines:
                if str(line.get("event", "")).startswith(start):
                    return line
            await asyncio.sleep(0.02)


class Browsed:
    """What python-zeroconf's browser saw of `_mobsya._tcp`: names added and removed, in order."""

    def __init__(self, zeroconf: object) -> None:
        self.zeroconf = zeroconf
        self.changes: list[tuple[str, str]] = []

    def on_change(self, zeroconf: object, service_type: str, name: str, state_change: object) -> None:
        self.changes.append((str(getattr(state_change, "name", state_change)), name))

    async def until(self, change: str) -> str:
        """The first service name with `change` ("Added", "Removed")."""
        async with asyncio.timeout(BROWSE_TIMEOUT_S):
            while True:
                for seen, name in self.changes:
                    if seen == change:
                        return name
                await asyncio.sleep(0.05)


async def test_the_face_is_found_with_its_port_and_txt_records(tmp_path: Path, browser: Browsed) -> None:
    from zeroconf.asyncio import AsyncServiceInfo

    tcp, ws = free_port(), free_port()
    async with running_gateway(tmp_path, gateway_config(tmp_path, SIM_THYMIO, extra=_tdm(tcp, ws))) as running:
        name = await browser.until("Added")
        assert name.startswith("Thymio Device Manager (hwgateway) on ")
        assert name.endswith("." + SERVICE_TYPE)
        info = AsyncServiceInfo(SERVICE_TYPE, name)
        assert await info.async_request(browser.zeroconf.zeroconf, 3000)  # type: ignore[attr-defined]
        assert info.port == tcp
        assert info.parsed_addresses() == ["127.0.0.1"]
        properties = {key.decode(): (value or b"").decode() for key, value in info.properties.items()}
        hostname = info.server.split(".")[0] if info.server else ""
        assert properties == {"uuid": service_uuid(hostname, tcp), "ws-port": str(ws)}
        announced = await logged(running.logs, "tdm face announced over zeroconf")
        assert announced["port"] == tcp
    # The stop said goodbye: the service left the browser at once, not when its record expired.
    assert await browser.until("Removed") == name


async def test_tdmclient_finds_the_face_by_zeroconf(tmp_path: Path, multicast_loopback: None) -> None:
    tcp, ws = free_port(), free_port()
    async with running_gateway(tmp_path, gateway_config(tmp_path, SIM_THYMIO, extra=_tdm(tcp, ws))):
        found = await asyncio.to_thread(_tdmclient_by_zeroconf)
    assert found == ("127.0.0.1", tcp, "thymio")


def _tdmclient_by_zeroconf() -> tuple[str, int, str]:
    """tdmclient 0.1.21 (unchanged) finding the TDM by zeroconf only (every interface: here `lo`)."""
    found: list[tuple[str, int, str]] = []
    client = ClientAsync(zeroconf=True, zeroconf_all=True)
    try:

        async def main() -> None:
            node = await client.wait_for_node()
            found.append((str(client.tdm_addr), int(client.tdm_port), str(node.props["name"])))

        client.run_async_program(main)
    finally:
        tdm_programs.leave(client)
        client.close()
    return found[0]


async def test_without_python_zeroconf_the_face_runs_and_the_log_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "zeroconf", None)  # `import zeroconf` raises ImportError, as when not installed
    monkeypatch.setitem(sys.modules, "zeroconf.asyncio", None)
    tcp, ws = free_port(), free_port()
    async with running_gateway(tmp_path, gateway_config(tmp_path, SIM_THYMIO, extra=_tdm(tcp, ws))) as running:
        reader, writer = await asyncio.open_connection("127.0.0.1", tcp)  # the face listens
        writer.close()
        await writer.wait_closed()
        assert reader is not None
        why = str((await logged(running.logs, "tdm face: not announced over zeroconf"))["event"])
        assert "python-zeroconf package is not installed" in why
        assert "hwgateway[zeroconf]" in why


async def test_the_instance_name_is_one_dns_label_and_the_uuid_is_stable() -> None:
    long = instance_name("é" * 80)
    assert len(long.encode()) <= MAX_INSTANCE_BYTES
    assert long.startswith("Thymio Device Manager (hwgateway) on é")
    assert service_uuid("pi", 8596) == service_uuid("pi", 8596) != service_uuid("pi", 8597)
    assert addresses_for("127.0.0.1") == ["127.0.0.1"]
