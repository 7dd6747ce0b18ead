"""One lease rule, every adapter: the safe value is reached when the client leaves, the lease runs out,
on estop, at shutdown and when the device is lost.

Each kind runs in-process against its simulator (the simulated controller, the Thymio's Aseba VM
over TCP, the LEGO hub and the micro:bit on the virtual BLE radio, an SDL virtual pad, the simulated
Kortex 3 arm over loopback, the simulated Wii Remote on a socket pair), and every check reads what
the simulated device received or does, not only the adapter's state. Expiry is fired directly
(`leases.expire` at a time past every deadline), so no test sleeps for a lease term. The federated
remote device is checked at its wire: what it sends the remote gateway over MQTT.
"""

from __future__ import annotations

import abc
import asyncio
import math
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

import pytest

from devices.aseba.adapter import AsebaAdapter
from devices.aseba.options import AsebaOptions
from devices.gamepad import sdl_backend
from devices.gamepad.adapter import GamepadAdapter, GamepadOptions
from devices.gamepad.model import VirtualSpec
from devices.gamepad.sdl_backend import SdlBackend
from devices.gamepad.sdl_virtual import VirtualPad
from devices.kortex.adapter import KortexAdapter
from devices.kortex.options import KortexOptions
from devices.lego.adapter import LegoHubAdapter, LegoHubOptions
from devices.microbit.adapter import MicrobitAdapter, MicrobitOptions
from devices.remote.adapter import RemoteDevice
from devices.sim.controller import SimController, SimOptions
from devices.sim.kortex_arm import SimulatedArm
from devices.wiimote.adapter import WiimoteAdapter
from devices.wiimote.options import WiimoteOptions
from gateway.bus import Bus
from gateway.commands import CommandRouter
from gateway.core.adapter import Adapter, Command
from gateway.core.client import Hub
from gateway.core.config import ServerConfig, SupervisorConfig
from gateway.core.lease import Leases
from gateway.faces.mqtt.federation import Importer
from gateway.faces.mqtt.topics import TopicMap
from gateway.messages.aseba_gateway import ThymioMotors
from gateway.messages.generic import Led, Rumble
from gateway.messages.kortex import Command as C61Command
from gateway.messages.lego import LegoMotorSpeed
from gateway.messages.microbit import MicrobitPin
from gateway.messages.sim import SimOutputs
from gateway.supervisor import Supervisor
from tests.adapter_rig import AdapterRig

TIMEOUT_S = 10.0


class Kind(abc.ABC):
    """One adapter kind with its simulated device: drive an output, tell whether it is safe, lose the device."""

    #: Its leases have a term (they run out unless renewed).
    expires = True
    rig: AdapterRig[Any]

    @property
    def adapter(self) -> Any:
        return self.rig.adapter

    @property
    def leases(self) -> Leases[Any, Any]:
        leases: Leases[Any, Any] = self.adapter.leases
        return leases

    async def prepare(self) -> None:  # noqa: B027 (most kinds need nothing besides the adapter)
        """Start what the device needs besides the adapter (once per test)."""

    async def start(self) -> None:
        self.rig.start()
        await self.rig.connected(TIMEOUT_S)

    @abc.abstractmethod
    async def drive(self, client: str) -> None:
        """`client` sets an output to a value other than its safe one."""

    @abc.abstractmethod
    def driven(self) -> bool:
        """The simulated device shows the output driven."""

    @abc.abstractmethod
    def safe(self) -> bool:
        """The simulated device shows the output at its safe value."""

    @abc.abstractmethod
    async def lose(self) -> None:
        """The device drops its link, as when it is switched off or goes out of range."""

    async def back(self) -> None:
        """The device can be reached again: the adapter runs again, as the supervisor restarts it."""
        await self.start()

    async def stop(self) -> None:
        """The gateway stops the device (`run` cancelled, then `close`)."""
        await self.rig.stop()

    async def command(self, type_name: str, message: Any, client: str) -> Any:
        return await self.adapter.handle_command(Command(type_name, message, client, time.monotonic() + 5))


class Aseba(Kind):
    """A simulated Thymio II: the motor targets in its Aseba VM."""

    def __init__(self) -> None:
        self.rig = AdapterRig(AsebaAdapter, "thymio", AsebaOptions(simulate=True, connect_timeout_ms=2000))

    async def start(self) -> None:
        await super().start()
        await self.rig.until(lambda: self.adapter.programs, TIMEOUT_S)
        self.sim = self.adapter._sim  # kept: `close` lets go of it, and shutdown is checked after

    def motors(self) -> tuple[int, int]:
        return self.sim.get("motor.left.target"), self.sim.get("motor.right.target")

    async def drive(self, client: str) -> None:
        await self.command("hwgateway/ThymioMotors", ThymioMotors(200, -150), client)

    def driven(self) -> bool:
        return self.motors() == (200, -150)

    def safe(self) -> bool:
        return self.motors() == (0, 0)

    async def lose(self) -> None:
        for writer in list(self.sim.clients):
            writer.close()


class Lego(Kind):
    """A simulated Technic hub with a motor on port A."""

    expires = False

    def __init__(self) -> None:
        options = LegoHubOptions(simulate=True, scan_timeout_s=2.0, sim_hub="technic", sim_attached=("A=motor",))
        self.rig = AdapterRig(LegoHubAdapter, "hub", options)

    async def start(self) -> None:
        await super().start()
        await self.rig.until(lambda: 0 in self.adapter.ports, TIMEOUT_S)

    async def drive(self, client: str) -> None:
        await self.command("hwgateway/LegoMotorSpeed", LegoMotorSpeed("A", 40), client)

    def driven(self) -> bool:
        return bool(self.adapter.simulator.ports[0].speed == 40)

    def safe(self) -> bool:
        return bool(self.adapter.simulator.ports[0].speed == 0)

    async def lose(self) -> None:
        await self.adapter.simulator.drop()


class Microbit(Kind):
    """A simulated micro:bit: edge pin 1 as a digital output."""

    expires = False

    def __init__(self) -> None:
        self.rig = AdapterRig(MicrobitAdapter, "mb", MicrobitOptions(simulate=True, scan_timeout_s=2.0))

    async def drive(self, client: str) -> None:
        await self.command("hwgateway/MicrobitPin", MicrobitPin(1, 1), client)

    def driven(self) -> bool:
        return bool(self.adapter.simulator.pin_outputs.get(1) == 1)

    def safe(self) -> bool:
        return bool(self.adapter.simulator.pin_outputs.get(1) == 0)

    async def lose(self) -> None:
        await self.adapter.simulator.drop()


class Gamepad(Kind):
    """An SDL virtual pad: the rumble its callbacks received (SDL runs in its own thread)."""

    def __init__(self) -> None:
        self.rig = AdapterRig(GamepadAdapter, "pad", GamepadOptions(name_contains="lease pad"))
        self.sdl: SdlBackend | None = None
        self.pad: VirtualPad | None = None

    async def prepare(self) -> None:
        self.sdl = sdl_backend.acquire()
        await self.sdl.ready()
        self.pad = await self.sdl.attach_virtual(VirtualSpec("Lease Pad"))

    async def back(self) -> None:
        assert self.sdl is not None
        self.pad = await self.sdl.attach_virtual(VirtualSpec("Lease Pad"))
        await self.start()

    def rumble(self) -> tuple[int, ...] | None:
        assert self.pad is not None
        calls = [args for name, args in self.pad.calls if name == "Rumble"]
        return calls[-1] if calls else None

    async def drive(self, client: str) -> None:
        await self.command("rumble", Rumble(1.0, 0.5, 30.0), client)

    def driven(self) -> bool:
        return self.rumble() == (65535, 32768)

    def safe(self) -> bool:
        return self.rumble() in (None, (0, 0))

    async def lose(self) -> None:
        assert self.sdl is not None
        assert self.pad is not None
        await self.sdl.detach_virtual(self.pad)
        self.pad = None  # `back` plugs in a pad again: a new SDL device

    async def stop(self) -> None:
        await super().stop()
        if self.sdl is not None:
            if self.pad is not None:
                await self.sdl.detach_virtual(self.pad)
            await sdl_backend.release(self.sdl)
            self.sdl = None


class Kortex(Kind):
    """A simulated Kortex 3 arm: the C61 wrist's digital outputs in the Refreshes it received."""

    expires = False

    def __init__(self) -> None:
        self.arm = SimulatedArm("kortex3")

    async def prepare(self) -> None:
        await self.arm.start()
        options = KortexOptions(
            host="127.0.0.1",
            tcp_port=self.arm.tcp_port,
            udp_port=self.arm.udp_port,
            api="kortex3",
            username="admin",
            password="admin",
            transport="tcp",
        )
        self.rig = AdapterRig(KortexAdapter, "arm", options)

    async def drive(self, client: str) -> None:
        await self.command("kortex/WristCyclicC61/Command", C61Command(digital_outputs_state=0b101), client)

    def driven(self) -> bool:
        return bool(self.arm.wrist.digital_outputs_state == 0b101)

    def safe(self) -> bool:
        return bool(self.arm.wrist.digital_outputs_state == 0)

    async def lose(self) -> None:
        self.arm.close_tcp_connections()

    async def stop(self) -> None:
        await super().stop()
        await self.arm.stop()


class Wiimote(Kind):
    """A simulated Wii Remote: its rumble motor, as the output reports set it."""

    def __init__(self) -> None:
        options = WiimoteOptions(transport="sim", status_interval_s=0.3, timeout_s=1.0, discovery_interval_s=0.05)
        self.rig = AdapterRig(WiimoteAdapter, "wm", options)

    async def drive(self, client: str) -> None:
        await self.command("rumble", Rumble(1.0, 1.0, 30.0), client)

    def driven(self) -> bool:
        return bool(self.adapter.simulator.rumble)

    def safe(self) -> bool:
        return not self.adapter.simulator.rumble

    async def lose(self) -> None:
        self.adapter.simulator.power_off()


class Sim(Kind):
    """The simulated controller (`kind = "sim"`): the rumble in the outputs it publishes."""

    def __init__(self) -> None:
        self.rig = AdapterRig(SimController, "sim", SimOptions(rate_hz=20.0))

    async def drive(self, client: str) -> None:
        await self.command("rumble", Rumble(0.75, 0.25, 30.0), client)

    def outputs(self) -> SimOutputs:
        outputs: SimOutputs = self.rig.latest("outputs")
        return outputs

    def driven(self) -> bool:
        return (self.outputs().rumble_low, self.outputs().rumble_high) == (0.75, 0.25)

    def safe(self) -> bool:
        return (self.outputs().rumble_low, self.outputs().rumble_high) == (0.0, 0.0)

    async def lose(self) -> None:
        self.adapter.options = replace(self.adapter.options, fail_after_s=1e-6)  # its fault injection

    async def back(self) -> None:
        self.adapter.options = replace(self.adapter.options, fail_after_s=0.0)
        await self.start()


KINDS: dict[str, Callable[[], Kind]] = {
    "sim": Sim,
    "aseba": Aseba,
    "lego_hub": Lego,
    "microbit": Microbit,
    "gamepad": Gamepad,
    "kortex": Kortex,
    "wiimote": Wiimote,
}


@pytest.fixture(params=list(KINDS))
async def kind(request: pytest.FixtureRequest) -> AsyncIterator[Kind]:
    device = KINDS[request.param]()
    await device.prepare()
    await device.start()
    try:
        yield device
    finally:
        await device.stop()


async def eventually(predicate: Callable[[], bool]) -> None:
    """Wait until `predicate` holds (the adapter's task may have ended)."""
    async with asyncio.timeout(TIMEOUT_S):
        while True:
            if predicate():
                return
            await asyncio.sleep(0.01)  # polled: the simulators have no change events to wait on


async def driven_by(kind: Kind, client: str) -> None:
    await kind.drive(client)
    await kind.rig.until(kind.driven, TIMEOUT_S)
    assert len(kind.leases) > 0


async def test_the_client_leaving_ends_its_lease_and_no_other(kind: Kind) -> None:
    await driven_by(kind, "alice")
    kind.adapter.release("bob")  # another client leaving changes nothing
    await asyncio.sleep(0.05)
    assert kind.driven()
    kind.adapter.release("alice")
    await kind.rig.until(kind.safe, TIMEOUT_S)
    assert len(kind.leases) == 0


async def test_a_lease_that_runs_out_reaches_the_safe_value(kind: Kind) -> None:
    await driven_by(kind, "alice")
    expired = kind.leases.expire(now=math.inf)  # every deadline passed, as if the term went by unrenewed
    if kind.expires:
        assert expired
        await kind.rig.until(kind.safe, TIMEOUT_S)
        assert len(kind.leases) == 0
    else:  # held until the client leaves (no term): nothing runs out
        assert expired == []
        assert kind.driven()


async def test_estop_reaches_the_safe_value_at_once(kind: Kind) -> None:
    await driven_by(kind, "alice")
    await kind.adapter.estop()
    await kind.rig.until(kind.safe, TIMEOUT_S)
    assert len(kind.leases) == 0


async def test_shutdown_reaches_the_safe_value(kind: Kind) -> None:
    await driven_by(kind, "alice")
    await kind.rig.stop()
    assert len(kind.leases) == 0
    await eventually(kind.safe)  # the gamepad's stop is queued to the SDL thread, the others' awaited


async def test_a_lost_device_is_safe_when_it_returns_and_nobody_holds_it(kind: Kind) -> None:
    await driven_by(kind, "alice")
    await kind.lose()
    assert kind.rig.task is not None
    await asyncio.wait({kind.rig.task}, timeout=TIMEOUT_S)
    assert kind.rig.task.done(), "the adapter did not notice the lost device"
    assert kind.rig.task.exception() is not None  # `run` raises when its device is lost
    assert len(kind.leases) == 0
    await kind.back()
    await kind.rig.until(kind.safe, TIMEOUT_S)
    await asyncio.sleep(0.1)
    assert kind.safe()  # and it stays so: nothing resumes the output nobody holds


# -- the federated remote device ----------------------------------------------------------------------


class RecordingLink:
    """The MQTT link as the importer uses it; records what it publishes (the remote gateway's input)."""

    connected = True

    def __init__(self) -> None:
        self.published: list[tuple[str, bytes]] = []

    async def publish(
        self, topic: str, payload: bytes, qos: int = 0, retain: bool = False, properties: Any = None
    ) -> None:
        self.published.append((topic, payload))

    def publish_now(self, messages: list[tuple[str, bytes]]) -> None:
        self.published.extend(messages)


@pytest.fixture
async def remote() -> AsyncIterator[tuple[Adapter[Any], RecordingLink]]:
    bus = Bus()
    supervisor = Supervisor(bus, SupervisorConfig(), ())
    hub = Hub(bus, supervisor, CommandRouter(supervisor, lambda *_: None), ServerConfig(), ())
    link = RecordingLink()
    importer = Importer(hub, RemoteDevice.imported, TopicMap("hwgateway", "lab-b"), link)
    importer.on_status("lab-a", b"online")
    importer.on_devices("lab-a", b'{"devices": [{"id": "lamp", "accepts": ["led"]}]}')
    handle = supervisor.devices["lab-a:lamp"]
    yield handle.adapter, link
    importer.close()


async def test_a_remote_device_tells_the_remote_gateway_when_its_client_leaves(
    remote: tuple[Adapter[Any], RecordingLink],
) -> None:
    adapter, link = remote
    leases: Leases[str, str] = adapter.leases  # type: ignore[attr-defined]
    command = Command("led", Led(), "c7", time.monotonic() + 30)
    forwarded = asyncio.create_task(adapter.handle_command(command))
    await asyncio.sleep(0)
    assert leases.holders() == {"c7": "c7"}
    adapter.release("someone-else")
    adapter.release("c7")
    await asyncio.sleep(0.01)
    releases = [payload for topic, payload in link.published if topic.endswith("/release")]
    assert releases == [b'{"peer":"lab-b","client":"c7"}']
    await adapter.estop()
    assert [topic for topic, _ in link.published if topic.endswith("/estop")] == ["hwgateway/lab-a/estop"]
    forwarded.cancel()
    await asyncio.gather(forwarded, return_exceptions=True)
