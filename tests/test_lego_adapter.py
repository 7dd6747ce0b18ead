"""The LEGO hub adapter against simulated BOOST, City and Technic hubs on the virtual radio."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator
from typing import Any

import pytest

from devices.lego.adapter import LegoHubAdapter, LegoHubOptions
from devices.sim import lwp3_dumps
from devices.sim.lego_hub import SimulatedLegoHub
from gateway.errors import DeviceError, InvalidArgument
from gateway.messages.common import Vector3
from gateway.messages.generic import Led
from gateway.messages.lego import (
    LegoColorDistance,
    LegoMotor,
    LegoMotorPosition,
    LegoMotorSpeed,
    LegoMotorStop,
    LegoTilt,
)
from protocols.lwp3 import messages as lwp
from protocols.lwp3.constants import Completion, EndState, IoType, PropertyOperation, SubCommand
from protocols.lwp3.modes import SCALE_INFO_TYPES, PortModeInformationRequest
from tests.adapter_rig import AdapterRig


class Hub(AdapterRig[LegoHubAdapter]):
    """The adapter in-process as `hub-1`, with its simulated hub."""

    def __init__(self, **options: Any) -> None:
        super().__init__(
            LegoHubAdapter, "hub-1", LegoHubOptions(**{"simulate": True, "scan_timeout_s": 2.0, **options})
        )

    @property
    def sim(self) -> SimulatedLegoHub:
        assert self.adapter.simulator is not None
        return self.adapter.simulator

    def attached(self) -> list[tuple[str, str]]:
        return [(p.port_name, p.device) for p in self.latest("hub").attached]


@pytest.fixture
async def technic() -> AsyncIterator[Hub]:
    hub = Hub(sim_hub="technic", sim_attached=("A=motor", "B=color_distance"))
    hub.start()
    await hub.connected()
    await hub.until(lambda: hub.latest("hub") is not None and hub.latest("hub").battery_percent == 87)
    yield hub
    await hub.stop()


async def test_technic_hub_state_and_sensors(technic: Hub) -> None:
    await technic.until(
        lambda: (
            technic.latest("hub").firmware_version != ""
            and technic.latest("hub").temperature != 0
            and technic.latest("hub").acceleration.z != 0
        )
    )
    state = technic.latest("hub")
    assert (state.name, state.hub, state.system_type) == ("Technic Hub", "technic_hub", 0x80)
    assert (state.battery_percent, state.rssi_dbm, state.firmware_version) == (87, -55, "1.1.00.0202")
    assert ("A", "technic_large_motor") in technic.attached()
    assert ("B", "color_distance_sensor") in technic.attached()
    assert state.temperature == 24.5
    assert state.acceleration.z == pytest.approx(-9.80665)
    await technic.until(lambda: technic.latest("port/B") is not None)
    assert technic.latest("port/B") == LegoColorDistance(technic.latest("port/B").stamp, "B", 9, "red", 4)
    await technic.until(lambda: isinstance(technic.latest("port/A"), LegoMotor))
    technic.sim.set_tilt(5, -10, 30)
    await technic.until(lambda: technic.latest("port/0x63") is not None and technic.latest("port/0x63").x_deg == 5)
    tilt = technic.latest("port/0x63")
    assert isinstance(tilt, LegoTilt)
    assert (tilt.y_deg, tilt.z_deg) == (-10, 30)
    technic.sim.press_button(True)
    await technic.until(lambda: technic.latest("hub").button)
    assert technic.latest("button").buttons == (1,)
    # What the adapter asked for on connect: updates of button, RSSI, battery; mode 2 on the motor.
    enabled = {
        m.property
        for m in technic.sim.received
        if isinstance(m, lwp.HubPropertyMessage) and m.operation == PropertyOperation.ENABLE_UPDATES
    }
    assert {p.name for p in enabled} == {"BUTTON", "RSSI", "BATTERY_VOLTAGE"}
    assert lwp.PortInputFormatSetup(0, 2, 1, True) in technic.sim.received


async def test_sensor_values_are_scaled_by_the_hubs_own_mode_information(technic: Hub) -> None:
    """The hub's mode information (sharpbrick/powered-up's Technic hub capture) says raw ±32768 is ±8000 mG.

    node-poweredup (src/devices/technicmediumhubaccelerometersensor.ts) divides raw by 4.096 for mG:
    500 mG is raw 2048 on the wire, which must come out as 0.5 g, not 2.048 g.
    """
    sim = technic.sim
    sim.acceleration_mg = (500.0, -250.0, -1000.0)
    await technic.until(lambda: technic.latest("hub").acceleration.x != 0)
    acceleration = technic.latest("hub").acceleration
    assert acceleration.x == pytest.approx(0.5 * 9.80665)
    assert acceleration.y == pytest.approx(-0.25 * 9.80665)
    assert acceleration.z == pytest.approx(-9.80665)
    # What the simulated hub put on the wire for it, by the same capture.
    raw = sim._value(sim.ports[0x61])
    assert raw is not None
    assert struct.unpack("<hhh", raw) == (2048, -1024, -4096)
    # Asked for, in this order, before the mode was subscribed.
    asked = [
        m.info_type for m in sim.received if isinstance(m, PortModeInformationRequest) and (m.port, m.mode) == (0x61, 0)
    ]
    assert asked == list(SCALE_INFO_TYPES)
    order = [
        type(m).__name__
        for m in sim.received
        if getattr(m, "port", None) == 0x61 and isinstance(m, PortModeInformationRequest | lwp.PortInputFormatSetup)
    ]
    assert order == ["PortModeInformationRequest"] * len(SCALE_INFO_TYPES) + ["PortInputFormatSetup"]
    scales = technic.adapter.capabilities()["scales"]
    assert scales["0x61"] == {"mode": 0, "raw": [-32768.0, 32768.0], "si": [-8000.0, 8000.0], "unit": "mG"}
    assert scales["0x3d"] == {"mode": 0, "raw": [-900.0, 900.0], "si": [-90.0, 90.0], "unit": "DEG"}
    assert scales["A"]["unit"] == "DEG"


async def test_a_device_without_mode_information_goes_out_as_sent() -> None:
    # No capture of the WeDo 2.0 tilt sensor's mode information is public: the simulated hub refuses.
    device = Hub(hub="city", sim_hub="city", sim_attached=("B=tilt",))
    device.start()
    await device.connected()
    device.sim.set_tilt(12, -7)
    await device.until(lambda: device.latest("port/B") is not None and device.latest("port/B").x_deg == 12)
    assert device.latest("port/B").y_deg == -7
    assert "B" not in device.adapter.capabilities()["scales"]
    await device.stop()


async def test_mode_information_that_cannot_scale_publishes_no_acceleration(monkeypatch: pytest.MonkeyPatch) -> None:
    # A hub whose accelerometer says RAW 0..0 onto SI ±8000 mG: nothing to scale by, so no guess goes out.
    path, lines = lwp3_dumps.DUMPS[IoType.TECHNIC_HUB_ACCELEROMETER]
    empty_raw = "0E-00-44-61-00-01-00-00-00-00-00-00-00-00"
    hostile = tuple(empty_raw if line.startswith("0E-00-44-61-00-01-") else line for line in lines)
    assert hostile != lines
    monkeypatch.setitem(lwp3_dumps.DUMPS, IoType.TECHNIC_HUB_ACCELEROMETER, (path, hostile))
    hub = Hub(sim_hub="technic", sim_attached=())
    hub.start()
    try:
        await hub.connected()
        await hub.until(lambda: hub.latest("hub") is not None and hub.latest("hub").temperature == 24.5)
        await hub.until(
            lambda: any(isinstance(m, lwp.PortInputFormatSetup) and m.port == 0x61 for m in hub.sim.received)
        )
        await asyncio.sleep(0.2)  # values of port 0x61 come at every tick: none may turn into acceleration
        assert hub.latest("hub").acceleration == Vector3()
        scales = hub.adapter.capabilities()["scales"]
        assert "0x61" not in scales
        assert "0x3d" in scales
    finally:
        await hub.stop()


async def test_every_command_reaches_the_hub(technic: Hub) -> None:
    sim = technic.sim
    assert (await technic.command(Led(-1, (1.0, 0.5, 0.0)), "led"))["rgb"] == [255, 128, 0]
    assert sim.ports[0x32].rgb == (255, 128, 0)
    assert lwp.PortInputFormatSetup(0x32, 1, 1, False) in sim.received  # RGB mode first
    result = await technic.command(LegoMotorSpeed("A", 40), "hwgateway/LegoMotorSpeed")
    assert result == {"port": "A", "feedback": 1}  # buffer empty + command in progress
    assert sim.ports[0].speed == 40
    await technic.until(lambda: technic.latest("port/A").position_deg > 100)
    assert technic.latest("port/A").speed_deg_s > 0
    await technic.command(LegoMotorPosition("A", -90, 100, end_state=127), "hwgateway/LegoMotorPosition")
    await technic.until(lambda: technic.latest("port/A").position_deg == -90 and sim.ports[0].speed == 0)
    goto = [
        m
        for m in sim.received
        if isinstance(m, lwp.PortOutputCommand) and m.subcommand == SubCommand.GOTO_ABSOLUTE_POSITION
    ]
    assert goto[-1] == lwp.goto_absolute_position(0, -90, 100, 100, EndState.BRAKE)
    await technic.command(LegoMotorSpeed("a", -20), "hwgateway/LegoMotorSpeed")
    assert await technic.command(LegoMotorStop(brake=True), "hwgateway/LegoMotorStop") == {"ports": ["A"]}
    assert sim.received[-1] == lwp.start_power(0, 127)
    assert sim.ports[0].speed == 0


async def test_refusals(technic: Hub) -> None:
    with pytest.raises(InvalidArgument, match="port B has color_distance_sensor attached, not a motor"):
        await technic.command(LegoMotorSpeed("B", 10), "hwgateway/LegoMotorSpeed")
    with pytest.raises(InvalidArgument, match="'E' is not a port of this technic_hub"):
        await technic.command(LegoMotorSpeed("E", 10), "hwgateway/LegoMotorSpeed")
    with pytest.raises(InvalidArgument, match="port C has nothing attached"):
        await technic.command(LegoMotorSpeed("C", 10), "hwgateway/LegoMotorSpeed")
    # A stalled motor: the hub answers Generic Error Overcurrent (§3.9), the client device_error.
    technic.sim.stalled.add(0)
    with pytest.raises(DeviceError, match="LWP3 error OVERCURRENT, message type 0x81"):
        await technic.command(LegoMotorSpeed("A", 10), "hwgateway/LegoMotorSpeed")
    assert len(technic.adapter.leases) == 0


async def test_motors_are_leased(technic: Hub) -> None:
    sim = technic.sim
    sim.attach("C", IoType.TECHNIC_XL_MOTOR)
    await technic.until(lambda: ("C", "technic_xl_motor") in technic.attached())
    await technic.command(LegoMotorSpeed("A", 30), "hwgateway/LegoMotorSpeed", client="alice")
    await technic.command(LegoMotorSpeed("C", 30), "hwgateway/LegoMotorSpeed", client="bob")
    technic.adapter.release("alice")
    await technic.until(lambda: sim.ports[0].speed == 0)
    assert sim.ports[2].speed == 30
    await technic.adapter.estop()
    await technic.until(lambda: sim.ports[2].speed == 0)
    await technic.command(LegoMotorPosition("C", 5000, 10), "hwgateway/LegoMotorPosition", client="carol")
    assert sim.ports[2].speed == 10
    before = len(sim.received)
    await technic.stop()
    # Port setup requests still under way may reach the hub after the stop: look for it, not at the end.
    assert lwp.PortOutputCommand(2, 0x51, bytes([0, 0]), completion=Completion.NONE) in sim.received[before:]
    assert sim.ports[2].speed == 0


async def test_devices_attached_and_detached_while_connected(technic: Hub) -> None:
    sim = technic.sim
    sim.attach("D", IoType.TECHNIC_LARGE_ANGULAR_MOTOR)
    await technic.until(lambda: ("D", "technic_large_angular_motor") in technic.attached())
    await technic.until(lambda: isinstance(technic.latest("port/D"), LegoMotor))
    await technic.command(LegoMotorSpeed("D", 50), "hwgateway/LegoMotorSpeed")
    assert 3 in technic.adapter.leases
    sim.detach("D")
    await technic.until(lambda: "D" not in [name for name, _ in technic.attached()])
    assert 3 not in technic.adapter.leases
    with pytest.raises(InvalidArgument, match="port D has nothing attached"):
        await technic.command(LegoMotorSpeed("D", 50), "hwgateway/LegoMotorSpeed")


@pytest.mark.parametrize(
    ("hub", "connectors", "built_in"),
    [
        (
            "boost",
            ["A", "B", "C", "D"],
            {("A", "internal_motor_tacho"), ("B", "internal_motor_tacho"), ("0x3a", "internal_tilt")},
        ),
        ("city", ["A", "B"], {("0x32", "rgb_light"), ("0x3b", "current")}),
    ],
)
async def test_boost_and_city_hubs_by_system_type(
    hub: str, connectors: list[str], built_in: set[tuple[str, str]]
) -> None:
    device = Hub(hub=hub, sim_hub=hub, sim_attached=("B=tilt",) if hub == "city" else ("C=motor",))
    device.start()
    await device.connected()
    await device.until(lambda: device.latest("hub") is not None and device.latest("hub").firmware_version != "")
    assert device.adapter.capabilities()["connectors"] == connectors
    assert built_in <= set(device.attached())
    if hub == "boost":
        device.sim.set_tilt(12, -7)
        await device.until(lambda: device.latest("port/0x3a") is not None and device.latest("port/0x3a").x_deg == 12)
        await device.command(LegoMotorSpeed("B", 25), "hwgateway/LegoMotorSpeed")  # a built-in motor
        assert device.sim.ports[1].speed == 25
        assert ("C", "external_motor_tacho") in device.attached()
    else:
        assert ("B", "external_tilt") in device.attached()
        with pytest.raises(InvalidArgument, match="'C' is not a port of this city_hub"):
            await device.command(LegoMotorSpeed("C", 10), "hwgateway/LegoMotorSpeed")
    await device.stop()


async def test_a_hub_of_another_kind_is_not_taken() -> None:
    device = Hub(hub="boost", sim_hub="technic", scan_timeout_s=0.3)  # wants a BOOST hub, only a Technic one advertises
    device.start()
    with pytest.raises(ConnectionError, match=r"no device advertising with .*service 00001623"):
        await device.until(lambda: False)
    await device.stop()


async def test_hostile_notifications_and_reconnect(technic: Hub) -> None:
    sim = technic.sim
    # The last notification is malformed only for the mode port A is set to: wait for that (a loaded
    # host may set it after the hub's battery arrives; a value of a port without a mode is ignored).
    await technic.until(lambda: (port_a := technic.adapter.ports.get(0)) is not None and port_a.mode is not None)
    for data in (
        b"\x03\x00",
        b"\x05\x00\x99\x00\x00",
        b"\x09\x00\x04\x00\x01\x2e",
        b"\x06\x00\x82\x00\x01\x02",
        b"\x06\x00\x45\x00\x01\x02",
    ):
        sim.send_raw(data)  # the last is a well-formed Port Value, 2 bytes short for the motor's mode 2
    await technic.until(lambda: technic.adapter.malformed == 5)
    assert technic.statuses[-1][0] == "connected"
    await sim.drop()
    with pytest.raises(ConnectionError, match="disconnected"):
        await technic.until(lambda: False)
    technic.start()
    await technic.connected()
    await technic.until(
        lambda: technic.latest("hub").battery_percent == 87 and ("A", "technic_large_motor") in technic.attached()
    )
    await technic.command(LegoMotorSpeed("A", 10), "hwgateway/LegoMotorSpeed")
    assert sim.ports[0].speed == 10
