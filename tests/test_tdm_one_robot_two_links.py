"""One robot on two links (USB and a radio dongle) is one TDM node, and another link takes over when one leaves.

Three simulated Thymios, two of them answering with the same UUID (the same robot, configured as
two `aseba` devices) and one with its own: Thymio Suite's JavaScript client (npm thymio-api 0.11.1,
unchanged) through the daemon's TDM face sees two nodes, locks the robot through the node it is
shown as (the lock is that device's), and when that device is taken away (a reload without it) the
robot is shown through its other link at once. A token that sees only the other link sees the robot
there. Then one simulated Thymio reached over two relays, one cut as a USB cable is pulled: the
robot is listed through the other link at once, and plugging the cable back in changes nothing.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from devices.sim.thymio import SimulatedThymio
from gateway.credentials import hash_token
from gateway.faces.tdm.nodes import one_per_robot
from tests.harness import connect, free_port, gateway_config
from tests.inprocess import InProcessGateway, running_gateway
from tests.test_tdm_robot_leaves import Relay
from tests.thymio_api import ThymioApi, thymio_api

pytestmark = [pytest.mark.timeout(120)]

ROBOT = "2b9e1c3a-0d4f-4e8b-9a6c-5f7e2d1b3c4a"
OTHER = "7c4d2e1f-5a6b-4c8d-9e0f-1a2b3c4d5e6f"
LINKS = ("usb", "radio")
#: A student's token that sees only the robot's radio link.
RADIO_ONLY = "radio-only-token-0123456789"


def device(name: str, sim_uuid: str) -> str:
    return f'[devices.{name}]\nkind = "aseba"\nsimulate = true\nsim_uuid = "{sim_uuid}"\n'


def config(tmp_path: Path, ports: tuple[int, int], devices: str) -> str:
    tdm = f'[tdm]\nenabled = true\nhost = "127.0.0.1"\ntcp_port = {ports[0]}\nws_port = {ports[1]}\n'
    tokens = (
        f'[auth.tokens.teacher]\nhash = "{hash_token("teacher-token-0123456789")}"\nrole = "admin"\n'
        f'[auth.tokens.student]\nhash = "{hash_token(RADIO_ONLY)}"\nrole = "control"\ndevices = ["radio"]\n'
    )
    return gateway_config(tmp_path, devices, extra=tdm + tokens)


async def all_known(running: InProcessGateway, count: int) -> None:
    """Until `count` devices are connected with their UUIDs known (the simulators answer at once)."""
    native = await connect(running, "ws")
    await native.ok("auth", token="teacher-token-0123456789")
    try:
        for _ in range(300):
            devices = (await native.ok("list_devices"))["devices"]
            if len(devices) == count and all(d["status"] == "connected" and d["capabilities"]["uuid"] for d in devices):
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"not all connected with a UUID: {devices}")
    finally:
        await native.close()


async def names(api: ThymioApi, client: str) -> list[str]:
    return sorted(node["name"] for node in await api.call("nodes", client=client))


async def test_one_robot_on_two_links_is_one_node_and_the_other_link_takes_over(tmp_path: Path) -> None:
    ports = free_port(), free_port()
    ws = ports[1]
    devices = device("usb", ROBOT) + device("radio", ROBOT) + device("other", OTHER)
    async with running_gateway(tmp_path, config(tmp_path, ports, devices)) as running:
        await all_known(running, 3)
        async with thymio_api() as api:
            await api.call("connect", client="teacher", url=f"ws://127.0.0.1:{ws}", password="teacher-token-0123456789")
            await api.call("connect", client="student", url=f"ws://127.0.0.1:{ws}", password=RADIO_ONLY)
            await api.call("waitNodes", client="teacher", count=2, status="available")
            await asyncio.sleep(0.5)  # nothing more comes: two nodes, not three
            shown = await names(api, "teacher")
            assert len(shown) == 2, shown
            assert "other" in shown
            [link] = [name for name in shown if name in LINKS]
            # Per token: the student sees the robot through the only link its token names.
            await api.call("waitNodes", client="student", count=1, status="available")
            assert await names(api, "student") == ["radio"]

            # A lock through the shown node is its device's lock.
            await api.call("lock", client="teacher", node=link)
            await api.call("waitStatus", client="teacher", node=link, status="ready")
            native = await connect(running, "ws")
            await native.ok("auth", token="teacher-token-0123456789")
            locked = {d["id"]: d["locked_by"] for d in (await native.ok("list_devices"))["devices"]}
            await native.close()
            assert locked[link] is not None
            assert [name for name in LINKS if locked[name] is not None] == [link]
            await api.call("unlock", client="teacher", node=link)

            # The shown link is taken away: the robot is shown through the other at once.
            [rest] = [name for name in LINKS if name != link]
            path = running.gateway.reloader.path
            assert path is not None
            path.write_text(config(tmp_path, ports, device(rest, ROBOT) + device("other", OTHER)))
            await running.gateway.reloader.reload()
            await api.call("waitGone", client="teacher", node=link, timeout_s=5)
            await api.call("waitStatus", client="teacher", node=rest, status="available", timeout_s=5)
            assert await names(api, "teacher") == sorted([rest, "other"])
            assert await names(api, "student") == (["radio"] if rest == "radio" else [])


async def test_a_cable_pulled_shows_the_robot_through_its_radio_link_and_plugging_it_back_changes_nothing(
    tmp_path: Path,
) -> None:
    """One simulated Thymio reached by two devices, each through a relay the test cuts as a cable is pulled."""
    robot = SimulatedThymio(node_id=1, uuid=uuid.UUID(ROBOT))
    await robot.start()
    relays = {name: Relay(free_port(), robot.port) for name in LINKS}
    for relay in relays.values():
        await relay.start()
    ports = free_port(), free_port()
    devices = "".join(
        f'[devices.{name}]\nkind = "aseba"\ntarget = "tcp:127.0.0.1;{relay.port}"\nthymio_program = false\n'
        for name, relay in relays.items()
    )
    try:
        async with running_gateway(tmp_path, config(tmp_path, ports, devices)) as running, thymio_api() as api:
            await all_known(running, 2)
            await api.call("connect", url=f"ws://127.0.0.1:{ports[1]}", password="teacher-token-0123456789")
            [shown] = await api.call("waitNodes", count=1, status="available")
            link = shown["name"]
            [rest] = [name for name in LINKS if name != link]
            await relays[link].cut()  # the cable is pulled: the robot is still there, on the other link
            await api.call("waitGone", node=link, timeout_s=5)
            await api.call("waitStatus", node=rest, status="available", timeout_s=5)
            await relays[link].start()  # plugged in again: listed through the link it is on now
            await all_known(running, 2)
            await asyncio.sleep(0.5)
            assert [node["name"] for node in await api.call("nodes")] == [rest]
            told = [node["name"] for event in api.events if event["event"] == "nodes" for node in event["nodes"]]
            # Never both at once: the link shown first, then (as it left) the other, and nothing more.
            assert told == [link, link, rest], told
    finally:
        for relay in relays.values():
            await relay.cut()
        await robot.stop()


@dataclass
class Handle:
    """What `one_per_robot` reads of a device."""

    id: str
    identity: str | None
    status: str = "connected"
    connected_since: float | None = 0.0


def test_one_per_robot_shows_the_longest_connected_then_the_first() -> None:
    def shown(*handles: Handle) -> list[str]:
        return [handle.id for handle in one_per_robot(handles)]

    usb, radio = Handle("usb", ROBOT, connected_since=2.0), Handle("radio", ROBOT, connected_since=1.0)
    assert shown(usb, radio, Handle("other", OTHER), Handle("plain", None), Handle("plain2", None)) == [
        "radio", "other", "plain", "plain2"
    ]  # fmt: skip
    assert shown(Handle("a", ROBOT), Handle("b", ROBOT)) == ["a"]  # a tie: the first in config order
    gone = Handle("usb", ROBOT, status="connecting", connected_since=None)
    assert shown(gone, Handle("radio", ROBOT, connected_since=5.0)) == ["radio"]
    # None connected: the first stands for the robot (listed nowhere, as it is not connected).
    assert shown(gone, Handle("radio", ROBOT, status="stopped", connected_since=None)) == ["usb"]
