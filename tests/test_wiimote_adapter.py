"""The wiimote adapter against the simulated remote over a SOCK_SEQPACKET socket pair."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from devices.sim import wiimote as sim_module
from devices.sim.wiimote import SimulatedWiimote
from devices.wiimote import adapter as adapter_module
from devices.wiimote.adapter import WiimoteAdapter
from devices.wiimote.discovery import find_remotes, is_wiimote, select
from devices.wiimote.options import WiimoteOptions
from devices.wiimote.transport import BluetoothUnavailable, LinkLost, ReportLink, open_l2cap
from gateway.errors import InvalidArgument
from gateway.messages.generic import Led, Rumble
from gateway.messages.wiimote import State, TimedSwitch
from gateway.messages.wiimote_gateway import Calibrate, WiimoteClassic, WiimoteLeds
from protocols.wiimote import extensions as ext
from protocols.wiimote import reports as rp
from tests.adapter_rig import AdapterRig

FAST: dict[str, Any] = {"status_interval_s": 0.3, "timeout_s": 1.0, "discovery_interval_s": 0.05}


class Device(AdapterRig[WiimoteAdapter]):
    """The Wii Remote adapter in-process, as `wm`, with its simulated remote."""

    def __init__(self, options: WiimoteOptions) -> None:
        super().__init__(WiimoteAdapter, "wm", options)

    @property
    def sim(self) -> SimulatedWiimote:
        assert self.adapter.simulator is not None
        return self.adapter.simulator

    async def connected(self, timeout: float = 5.0) -> None:
        await super().connected(timeout)
        await self.until(lambda: self.latest("state") is not None, timeout)

    def state(self) -> State:
        state = self.latest("state")
        assert isinstance(state, State)
        return state


@pytest.fixture
async def make() -> AsyncIterator[Callable[..., Device]]:
    devices: list[Device] = []

    def build(**options: Any) -> Device:
        device = Device(WiimoteOptions(transport="sim", **{**FAST, **options}))
        devices.append(device)
        device.start()
        return device

    yield build
    for device in devices:
        await device.stop()


async def test_connect_sequence_against_the_simulated_remote(make: Callable[..., Device]) -> None:
    device = make()
    await device.connected()
    sim = device.sim
    ids = [o.report for o in sim.outputs]
    assert ids[:3] == [rp.Out.LEDS, rp.Out.STATUS_REQUEST, rp.Out.READ_MEMORY]
    first_read = sim.outputs[2]
    assert (first_read.space, first_read.address, first_read.size) == (rp.Space.EEPROM, 0x16, 20)
    assert sim.leds == 0b0001
    assert sim.mode == 0x33
    assert sim.continuous
    assert rp.Out.IR_PIXEL_CLOCK in ids
    assert rp.Out.IR_LOGIC in ids
    await device.until(lambda: device.latest("state") is not None)
    state = device.state()
    # Lying flat: +1 g on Z from the simulated factory calibration (0 g 0x204, 1 g 0x26C on Z).
    assert state.linear_acceleration_zeroed.z == pytest.approx(9.80665, abs=0.2)
    assert state.linear_acceleration_raw.z == pytest.approx(0x26C, abs=2)
    assert state.LEDs == (True, False, False, False)
    assert state.rumble is False
    assert state.raw_battery == 0xC0
    assert state.percent_battery == pytest.approx(0xC0 * 100 / 208)
    assert len(state.ir_tracking) == 4
    assert state.ir_tracking[0].x == 312
    assert state.ir_tracking[0].ir_size == 3
    assert state.ir_tracking[3].x == State.INVALID_FLOAT
    assert state.ir_tracking[3].ir_size == State.INVALID
    assert state.angular_velocity_covariance[0] == -1.0
    assert device.adapter.capabilities()["extension"] == "none"


async def test_buttons_follow_the_msg_btn_constants(make: Callable[..., Device]) -> None:
    device = make()
    await device.connected()
    device.sim.buttons = rp.Button.ONE | rp.Button.PLUS | rp.Button.HOME
    await device.until(lambda: device.state().buttons[State.MSG_BTN_PLUS])
    buttons = device.state().buttons
    pressed = {i for i, b in enumerate(buttons) if b}
    assert pressed == {State.MSG_BTN_1, State.MSG_BTN_PLUS, State.MSG_BTN_HOME}
    controller = device.latest("controller")
    assert controller.buttons[:11] == tuple(int(b) for b in buttons)


@pytest.mark.parametrize("mode", rp.DATA_MODES)
async def test_every_reporting_mode(make: Callable[..., Device], mode: int) -> None:
    device = make(report_mode=mode, sim_extension="nunchuk")
    await device.connected()
    assert device.sim.mode == mode
    device.sim.buttons = rp.Button.A
    layout = rp.DATA_LAYOUTS[mode]
    await device.until(lambda: device.latest("state") is not None)
    await asyncio.sleep(0.1)
    state = device.state()
    assert state.buttons[State.MSG_BTN_A] == layout.buttons
    assert (state.linear_acceleration_raw.z > 0) == layout.accel
    seen = state.ir_tracking[0].x != State.INVALID_FLOAT
    assert seen == (layout.ir_bytes > 0)
    if mode in (0x36, 0x37):
        assert state.ir_tracking[0].ir_size == State.INVALID  # basic IR has no size
    assert (state.nunchuk_acceleration_raw.z > 0) == (layout.ext_bytes >= 6)


async def test_nunchuk_plug_and_unplug(make: Callable[..., Device]) -> None:
    device = make()
    await device.connected()
    device.sim.plug("nunchuk")
    await device.until(lambda: device.adapter.capabilities().get("extension") == "nunchuk")
    assert device.sim.mode == 0x37  # extension: basic IR + extension bytes
    device.sim.nunchuk_buttons = (True, False)
    await device.until(lambda: device.state().nunchuk_buttons == (True, False))
    state = device.state()
    assert state.nunchuk_acceleration_zeroed.z == pytest.approx(9.80665, abs=0.2)
    assert -1.0 <= state.nunchuk_joystick_zeroed[0] <= 1.0
    assert state.nunchuk_joystick_raw[1] > 0
    device.sim.unplug()
    await device.until(lambda: device.adapter.capabilities().get("extension") == "none")
    await device.until(lambda: device.state().nunchuk_acceleration_raw.z == 0)
    assert device.state().nunchuk_buttons == (False, False)
    assert device.sim.mode == 0x33


@pytest.mark.parametrize("kind", ["classic", "classic_pro"])
async def test_classic_controller_on_its_own_topic(make: Callable[..., Device], kind: str) -> None:
    device = make()
    await device.connected()
    device.sim.plug(kind)
    await device.until(lambda: device.adapter.capabilities().get("extension") == kind)
    device.sim.classic_buttons = ext.ClassicButton.ZR | ext.ClassicButton.HOME
    await device.until(
        lambda: isinstance(device.latest("classic"), WiimoteClassic) and device.latest("classic").buttons[14]
    )
    classic = device.latest("classic")
    pressed = {i for i, b in enumerate(classic.buttons) if b}
    assert pressed == {State.MSG_CLASSIC_BTN_ZR, State.MSG_CLASSIC_BTN_HOME}
    assert classic.pro == (kind == "classic_pro")
    assert classic.sticks[2] == pytest.approx(0.0)
    assert all(-1 <= v <= 1 for v in classic.sticks)
    controller = device.latest("controller")
    assert len(controller.buttons) == 11 + 2 + 15
    assert controller.buttons[13 + 14] == 1


async def test_motionplus_activation_and_pass_through(make: Callable[..., Device]) -> None:
    device = make(sim_motionplus=True)
    await device.connected()
    await device.until(lambda: device.adapter.capabilities().get("extension") == "motionplus")
    assert device.sim.mp_mode == ext.MP_MODE_ALONE
    await device.until(lambda: device.state().angular_velocity_covariance[0] != -1.0)
    state = device.state()
    # x = pitch: the unit's slow-range zero (0x739A / 4) plus its drift at rest.
    assert state.angular_velocity_raw.x == pytest.approx(0x739A / 4 + sim_module.GYRO_DRIFT[0], abs=3)
    await device.until(lambda: device.state().zeroing_time.sec > 0)  # zeroed at rest once active
    assert abs(device.state().angular_velocity_zeroed.z) < 0.01
    # A Nunchuk plugged into the MotionPlus: re-activated in Nunchuk pass-through mode.
    device.sim.plug("nunchuk")
    await device.until(lambda: device.adapter.capabilities().get("extension") == "motionplus_nunchuk")
    assert device.sim.mp_mode == ext.MP_MODE_NUNCHUK
    # Frames alternate: once both kinds arrived, each state carries the latest of each.
    await device.until(lambda: device.state().nunchuk_acceleration_raw.z > 0)
    await device.until(lambda: device.state().angular_velocity_covariance[0] != -1.0)
    for _ in range(5):
        await asyncio.sleep(0.02)
        state = device.state()
        assert state.nunchuk_acceleration_raw.z > 0
        assert state.angular_velocity_raw.x > 0
    device.sim.unplug()
    await device.until(lambda: device.adapter.capabilities().get("extension") == "motionplus")
    device.sim.detach_motionplus()
    await device.until(lambda: device.adapter.capabilities().get("extension") == "none")
    await device.until(lambda: device.state().angular_velocity_covariance[0] == -1.0)
    assert device.state().angular_velocity_raw.x == 0.0
    # Plugged again: found by the periodic probe of 0xA600FA (an inactive MotionPlus sends no status).
    device.sim.attach_motionplus()
    await device.until(lambda: device.adapter.capabilities().get("extension") == "motionplus")


async def test_motionplus_with_classic_pass_through(make: Callable[..., Device]) -> None:
    device = make(sim_motionplus=True, sim_extension="classic")
    await device.connected()
    await device.until(lambda: device.adapter.capabilities().get("extension") == "motionplus_classic")
    device.sim.classic_buttons = ext.ClassicButton.UP | ext.ClassicButton.LEFT
    await device.until(
        lambda: isinstance(device.latest("classic"), WiimoteClassic) and device.latest("classic").buttons[8]
    )
    classic = device.latest("classic")
    assert classic.buttons[State.MSG_CLASSIC_BTN_UP]
    assert classic.buttons[State.MSG_CLASSIC_BTN_LEFT]
    # The gyro's first good frame may follow the Classic's: its first one after activation is junk.
    await device.until(lambda: device.state().angular_velocity_covariance[0] != -1.0)


async def test_calibrate_command(make: Callable[..., Device]) -> None:
    device = make(sim_motionplus=True, calibrate_on_connect=False)
    await device.connected()
    await device.until(lambda: device.adapter.capabilities().get("extension") == "motionplus")
    assert device.state().zeroing_time.sec == 0
    result = await device.command(Calibrate(), "hwgateway/Calibrate")
    assert result["calibrated"] is True
    await device.until(lambda: device.state().zeroing_time.sec > 0)
    covariance = device.state().linear_acceleration_covariance
    # ±1 count of noise on ~100 counts per g: variance about (0.8 × 9.8 / 100)² ≈ 0.006 m²/s⁴.
    assert 0.0 < covariance[0] < 0.05
    assert covariance[1] == 0.0


async def test_calibration_is_rejected_while_moving(make: Callable[..., Device]) -> None:
    device = make(sim_motionplus=True, sim_motion="demo", calibrate_on_connect=False)
    await device.connected()
    device.sim.rest_s = 0.0
    await device.until(lambda: device.adapter.capabilities().get("extension") == "motionplus")
    await asyncio.sleep(1.0)  # well into the motion
    result = await device.command(Calibrate(), "hwgateway/Calibrate")
    assert result["calibrated"] is False
    assert "std" in result["reason"]
    assert device.state().zeroing_time.sec == 0


async def test_led_and_rumble_commands(make: Callable[..., Device]) -> None:
    device = make()
    await device.connected()
    on, off = TimedSwitch(TimedSwitch.ON), TimedSwitch(TimedSwitch.OFF)
    result = await device.command(
        WiimoteLeds((off, on, TimedSwitch(TimedSwitch.NO_CHANGE), on)), "hwgateway/WiimoteLeds"
    )
    assert result["leds"] == [False, True, False, True]
    await device.until(lambda: device.sim.leds == 0b1010)
    await device.until(lambda: device.state().LEDs == (False, True, False, True))
    await device.command(Led(index=0, rgb=(0.0, 1.0, 0.0)), "led")
    await device.until(lambda: device.sim.leds == 0b1011)
    await device.command(Led(index=-1, rgb=(0.0, 0.0, 0.0)), "led")
    await device.until(lambda: device.sim.leds == 0)
    with pytest.raises(InvalidArgument, match=r"data\.index"):
        await device.command(Led(index=4, rgb=(1.0, 1.0, 1.0)), "led")
    with pytest.raises(InvalidArgument, match=r"data.leds\[1\]"):
        await device.command(WiimoteLeds((on, TimedSwitch(TimedSwitch.REPEAT, 1, ()))), "hwgateway/WiimoteLeds")
    # Rumble: a TimedSwitch pulse, on at once and off after the pattern.
    await device.command(TimedSwitch(TimedSwitch.REPEAT, 1, (0.2,)), "wiimote/TimedSwitch")
    await device.until(lambda: device.sim.rumble)
    await device.until(lambda: device.state().rumble)
    await device.until(lambda: not device.sim.rumble)
    on_at, off_at = device.sim.rumble_changes[0][0], device.sim.rumble_changes[1][0]
    # Off by the pattern, never before its 0.2 s (a late timer is a busy machine's, so no upper bound;
    # the pattern's own timing is test_wiimote_switch's, on a controllable clock).
    assert off_at - on_at >= 0.15
    # While rumbling, every output report carries the rumble bit (status polls, mode reports).
    await device.command(Rumble(1.0, 0.0, 1.0), "rumble")
    await device.until(lambda: device.sim.rumble)
    start = len(device.sim.outputs)
    await device.until(lambda: len(device.sim.outputs) > start + 2)
    assert all(o.rumble for o in device.sim.outputs[start : start + 2])
    await device.adapter.estop()
    await device.until(lambda: not device.sim.rumble)


async def test_led_pattern_repeats_on_the_remote(make: Callable[..., Device]) -> None:
    device = make(leds=0)
    await device.connected()
    blink = TimedSwitch(TimedSwitch.REPEAT, 2, (0.1, 0.1))
    await device.command(WiimoteLeds((blink,)), "hwgateway/WiimoteLeds")
    await asyncio.sleep(0.6)
    masks = [o.flags >> 4 for o in device.sim.outputs if o.report == rp.Out.LEDS]
    # Connect mask 0, then on, off, on, off: two cycles, ending off.
    assert masks[-4:] == [1, 0, 1, 0]


async def test_malformed_reports_are_counted_and_ignored(make: Callable[..., Device]) -> None:
    device = make()
    await device.connected()
    for junk in (b"\x99\x01", b"\x20\x00", b"\x3d" + b"\x00" * 5):
        device.sim.inject(junk)
    await device.until(lambda: device.adapter.malformed_reports == 3)
    device.sim.buttons = rp.Button.B
    await device.until(lambda: device.state().buttons[State.MSG_BTN_B])
    assert device.adapter.capabilities()["malformed_reports"] == 3


async def test_disconnect_and_reconnect(make: Callable[..., Device]) -> None:
    device = make()
    await device.connected()
    device.sim.power_off()
    assert device.task is not None
    with pytest.raises(LinkLost):
        await asyncio.wait_for(device.task, 2.0)
    device.start()  # what the supervisor does after its backoff
    await device.connected()
    await device.until(lambda: device.sim.mode == 0x33)


async def test_silent_remote_counts_as_lost(make: Callable[..., Device]) -> None:
    device = make()
    await device.connected()
    sim = device.sim
    sim.continuous = False
    loop = asyncio.get_running_loop()
    loop.remove_reader(sim.sock.fileno())  # it neither answers nor reports any more
    assert sim._task is not None
    sim._task.cancel()
    assert device.task is not None
    with pytest.raises(LinkLost, match="no report"):
        await asyncio.wait_for(device.task, 3.0)


# ---------------------------------------------------------------- hidraw discovery and transport


def fake_hidraw(root: Path, node: str, uniq: str, product: str = "00000306", driver: str = "hid-generic") -> None:
    device = root / "class" / "hidraw" / node / "device"
    device.mkdir(parents=True)
    (device / "uevent").write_text(
        f"DRIVER={driver}\nHID_ID=0005:0000057E:{product}\nHID_NAME=Nintendo RVL-CNT-01\n"
        f"HID_PHYS=00:1a:7d:da:71:13\nHID_UNIQ={uniq}\nMODALIAS=hid:b0005g0000v0000057Ep{product}\n"
    )
    drivers = root / "bus" / "hid" / "drivers" / driver
    drivers.mkdir(parents=True, exist_ok=True)
    os.symlink(drivers, device / "driver")


def test_the_pro_controller_is_found_by_name_too() -> None:
    # Same product 0330 as the Wii Remote Plus; the kernel also knows it by name.
    assert is_wiimote({"HID_ID": "0005:0000057E:00000330", "HID_NAME": "Nintendo RVL-CNT-01-UC"})
    assert is_wiimote({"HID_ID": "0005:00000000:00000000", "HID_NAME": "Nintendo RVL-CNT-01-UC"})


def test_discovery_from_sysfs(tmp_path: Path) -> None:
    fake_hidraw(tmp_path, "hidraw3", "00:1F:32:AA:BB:CC", driver="wiimote")
    fake_hidraw(tmp_path, "hidraw1", "00:1f:32:11:22:33", product="00000330")
    other = tmp_path / "class" / "hidraw" / "hidraw0" / "device"
    other.mkdir(parents=True)
    (other / "uevent").write_text("HID_ID=0003:0000046D:0000C52B\nHID_NAME=Logitech USB Receiver\nHID_UNIQ=\n")
    remotes = find_remotes(str(tmp_path), "/dev")
    assert [(r.node, r.address, r.product, r.driver) for r in remotes] == [
        ("hidraw1", "00:1f:32:11:22:33", 0x330, "hid-generic"),
        ("hidraw3", "00:1f:32:aa:bb:cc", 0x306, "wiimote"),
    ]
    assert remotes[1].kernel_driver_bound
    assert remotes[1].device_id == "wiimote-00:1f:32:aa:bb:cc"
    assert remotes[0].dev_path == "/dev/hidraw1"
    assert select(remotes, "00:1F:32:AA:BB:CC", set()) == remotes[1]
    assert select(remotes, "", {"00:1f:32:11:22:33"}) == remotes[1]
    assert select(remotes, "00:00:00:00:00:01", set()) is None
    assert find_remotes(str(tmp_path / "nothing")) == []


class Collector:
    """Callbacks that record what a ReportLink delivers and wake the test."""

    def __init__(self) -> None:
        self.reports: list[bytes] = []
        self.lost: list[Exception] = []
        self.changed = asyncio.Event()

    def report(self, data: bytes) -> None:
        self.reports.append(data)
        self.changed.set()

    def lose(self, error: Exception) -> None:
        self.lost.append(error)
        self.changed.set()

    async def wait(self, condition: Callable[[], bool]) -> None:
        async with asyncio.timeout(2):
            while not condition():
                self.changed.clear()
                await self.changed.wait()


async def test_report_link_one_report_per_read() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    seen = Collector()
    link = ReportLink(ours.fileno(), seen.report, seen.lose, keep=(ours,))
    theirs.send(bytes.fromhex("200000100000c0"))
    theirs.send(bytes.fromhex("301080"))
    link.write(bytes.fromhex("1500"))
    assert theirs.recv(64) == bytes.fromhex("1500")
    await seen.wait(lambda: len(seen.reports) >= 2)
    assert seen.reports == [bytes.fromhex("200000100000c0"), bytes.fromhex("301080")]
    theirs.close()
    await seen.wait(lambda: bool(seen.lost))
    assert isinstance(seen.lost[0], LinkLost)
    link.close()


async def test_l2cap_framing_adds_and_strips_transaction_headers() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    seen = Collector()
    link = ReportLink(ours.fileno(), seen.report, seen.lose, header_in=b"\xa1", header_out=b"\xa2", keep=(ours,))
    link.write(bytes.fromhex("1110"))
    assert theirs.recv(64) == bytes.fromhex("a21110")
    theirs.send(bytes.fromhex("a1301080"))
    theirs.send(bytes.fromhex("a3"))  # not an input frame: dropped
    theirs.send(bytes.fromhex("a1300000"))
    await seen.wait(lambda: len(seen.reports) >= 2)
    assert seen.reports == [bytes.fromhex("301080"), bytes.fromhex("300000")]
    link.close()
    theirs.close()


async def test_l2cap_without_af_bluetooth_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(socket, "AF_BLUETOOTH", raising=False)
    with pytest.raises(BluetoothUnavailable, match="built without AF_BLUETOOTH"):
        await open_l2cap("00:1f:32:aa:bb:cc", lambda _: None, lambda _: None)


async def test_hidraw_waits_warns_and_reconnects_when_the_remote_reappears(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    sims: list[SimulatedWiimote] = []
    opened: list[str] = []

    def open_fake_hidraw(
        path: str, on_report: Callable[[bytes], None], on_lost: Callable[[Exception], None]
    ) -> ReportLink:
        # A socket pair stands in for /dev/hidrawN; the simulated remote answers on the other end.
        opened.append(path)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sim = SimulatedWiimote(theirs)
        sim.start()
        sims.append(sim)
        return ReportLink(ours.fileno(), on_report, on_lost, keep=(ours,))

    monkeypatch.setattr(adapter_module, "open_hidraw", open_fake_hidraw)
    options = WiimoteOptions(
        transport="hidraw", address="00:1f:32:aa:bb:cc", sysfs_root=str(tmp_path), dev_root="/dev", **FAST
    )
    device = Device(options)
    device.start()
    try:
        await device.until(lambda: device.statuses and device.statuses[-1][0] == "connecting")
        fake_hidraw(tmp_path, "hidraw5", "00:1F:32:AA:BB:CC", driver="wiimote")
        with caplog.at_level(logging.WARNING, logger="devices.wiimote.adapter"):
            await device.connected()
        assert opened == ["/dev/hidraw5"]
        assert any("hid-wiimote" in r.getMessage() for r in caplog.records)
        assert device.adapter.capabilities()["address"] == "00:1f:32:aa:bb:cc"
        # The remote goes away (EOF / EIO on the node) and its sysfs entry with it.
        for child in sorted((tmp_path / "class").rglob("*"), reverse=True):
            child.unlink() if child.is_file() or child.is_symlink() else child.rmdir()
        sims[0].power_off()
        assert device.task is not None
        with pytest.raises(LinkLost):
            await asyncio.wait_for(device.task, 2.0)
        device.start()
        await device.until(lambda: device.statuses and device.statuses[-1][0] == "connecting")
        fake_hidraw(tmp_path, "hidraw6", "00:1f:32:aa:bb:cc")
        await device.connected()
        assert opened == ["/dev/hidraw5", "/dev/hidraw6"]
    finally:
        await device.stop()
        for sim in sims:
            await sim.stop()


async def test_rumble_stops_when_its_client_leaves_and_at_shutdown(make: Callable[..., Device]) -> None:
    device = make()
    await device.connected()
    forever = TimedSwitch(TimedSwitch.REPEAT, TimedSwitch.FOREVER, (5.0, 0.1))
    await device.command(forever, "wiimote/TimedSwitch")
    await device.until(lambda: device.sim.rumble)
    device.adapter.release("someone-else")
    await asyncio.sleep(0.1)
    assert device.sim.rumble
    device.adapter.release("client-1")
    await device.until(lambda: not device.sim.rumble)
    await device.command(forever, "wiimote/TimedSwitch")
    await device.until(lambda: device.sim.rumble)
    sim = device.sim
    assert device.task is not None
    device.task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await device.task
    assert sim.outputs[-1].report == rp.Out.RUMBLE
    assert not sim.outputs[-1].rumble


async def test_garbled_extension_id_is_read_again(make: Callable[..., Device]) -> None:
    device = make()
    await device.connected()
    device.sim.glitch_id_reads = 2
    device.sim.plug("classic_pro")
    await device.until(lambda: device.adapter.capabilities().get("extension") == "classic_pro")
    assert device.sim.glitch_id_reads == 0


async def test_battery_is_refreshed_by_status_polls(make: Callable[..., Device]) -> None:
    device = make()
    await device.connected()
    device.sim.battery = 0x10
    await device.until(lambda: device.state().raw_battery == 0x10)
    assert device.state().percent_battery == pytest.approx(0x10 * 100 / 208)


# ---------------------------------------------------------------- cases real hardware hits (issue 14)


async def test_motionplus_junk_frame_after_activation_does_not_loop(make: Callable[..., Device]) -> None:
    # With a Nunchuk in the MotionPlus, the junk frame (byte 4 bit 0 clear: "nothing plugged in")
    # used to deactivate the MotionPlus, whose re-activation sent the junk again: a loop.
    device = make(sim_motionplus=True, sim_extension="nunchuk")
    await device.connected()
    await device.until(lambda: device.adapter.capabilities().get("extension") == "motionplus_nunchuk")
    await device.until(lambda: device.state().nunchuk_acceleration_raw.z > 0)
    await asyncio.sleep(8 * FAST["status_interval_s"])  # eight status periods
    caps = device.adapter.capabilities()
    assert device.sim.activations == 1
    assert caps["extension"] == "motionplus_nunchuk"
    assert caps["motionplus_junk_frames"] >= 1
    deactivations = [o for o in device.sim.outputs if o.report == rp.Out.WRITE_MEMORY and o.address == 0xA400F0]
    assert len(deactivations) == 1  # the extension's own init before activation, none after
    # The junk's wild rates (roll 0x3FB0, pitch 0x4E in the fast range) never reached the bus.
    assert abs(device.state().angular_velocity_zeroed.y) < 0.05


async def test_gyro_rates_follow_the_units_calibration_in_both_ranges(make: Callable[..., Device]) -> None:
    device = make(sim_motionplus=True)
    await device.connected()
    await device.until(lambda: device.state().zeroing_time.sec > 0)
    assert device.adapter.capabilities()["gyro_calibration"] == "factory"

    async def settled(rates: tuple[float, float, float], tolerance: float) -> None:
        device.sim.spin = rates
        await device.until(lambda: abs(device.state().angular_velocity_zeroed.x - rates[0]) < 10 * tolerance)
        await asyncio.sleep(0.05)
        zeroed = device.state().angular_velocity_zeroed
        assert (zeroed.x, zeroed.y, zeroed.z) == pytest.approx(rates, abs=tolerance)

    # Slow range (below 250 deg/s): the nominal scale was 0.77-1.08x off on this unit.
    await settled((1.0, 2.0, -3.0), 0.01)
    # Fast range (344, 458 and 573 deg/s): the at-rest bias used to put 13-37 deg/s on top.
    await settled((6.0, -8.0, 10.0), 0.06)
    device.sim.spin = None
    await device.until(lambda: abs(device.state().angular_velocity_zeroed.x) < 0.01)


async def test_a_corrupt_gyro_calibration_falls_back_to_nominal_and_says_why(
    make: Callable[..., Device], caplog: pytest.LogCaptureFixture
) -> None:
    device = make(calibrate_on_connect=False)
    await device.connected()
    device.sim.gyro_calibration = sim_module.GYRO_CALIBRATION[:-1] + b"\x00"  # last CRC byte wrong
    with caplog.at_level(logging.WARNING, logger=adapter_module.__name__):
        device.sim.attach_motionplus()  # found by the next periodic probe
        await device.until(lambda: device.adapter.capabilities().get("extension") == "motionplus")
    assert device.adapter.capabilities()["gyro_calibration"] == "nominal"
    assert "MotionPlus calibration not used: MotionPlus calibration CRC 0xcc5bb500 != computed 0xcc5bb5a2" in (
        caplog.text
    )


async def test_wii_u_pro_controller(make: Callable[..., Device]) -> None:
    device = make(sim_device="pro_controller")
    await device.until(lambda: device.latest("controller") is not None)
    caps = device.adapter.capabilities()
    assert caps["extension"] == "pro_controller"
    assert caps["pro_controller"] is True
    assert caps["report_mode"] == rp.In.BUTTONS_EXT19
    assert device.sim.mode == rp.In.BUTTONS_EXT19
    # Set up as the kernel does: no camera, no MotionPlus probe, no EEPROM calibration read.
    sent = device.sim.outputs
    assert not [o for o in sent if o.report in (rp.Out.IR_PIXEL_CLOCK, rp.Out.IR_LOGIC)]
    assert not [o for o in sent if o.report == rp.Out.READ_MEMORY and o.address != ext.EXT_ID_ADDRESS]
    assert not [o for o in sent if o.report == rp.Out.WRITE_MEMORY and o.address >> 16 in (0xA6, 0xB0)]
    rest = sim_module.PRO_REST
    pad = device.latest("controller")
    assert pad.axes == (0.0,) * 6  # centred on the first report
    assert pad.buttons == (0,) * 17
    # B (bottom face button) is the seed's ✕, ZR its R2 (and right trigger axis), Home its PS.
    device.sim.pro_buttons = ext.ProButton.B | ext.ProButton.ZR | ext.ProButton.HOME | ext.ProButton.UP
    device.sim.pro_sticks = (rest[0] + 0x400, rest[1] - 0x200, rest[2], rest[3] + 0x500)
    await device.until(lambda: device.latest("controller").buttons[0] == 1)
    pad = device.latest("controller")
    assert pad.axes == pytest.approx((1.0, -0.5, 0.0, 1.0, 0.0, 1.0))
    assert [i for i, b in enumerate(pad.buttons) if b] == [0, 7, 10, 14]  # ✕, R2, PS, D-pad up
    assert device.latest("state") is None  # no accelerometer, gyro or camera: no wiimote/State
    assert device.adapter.capabilities()["pro_battery_level"] == 4
    # Rumble and LEDs as on a remote; no calibration to run.
    await device.command(Rumble(1.0, 1.0, 5.0), "rumble")
    await device.command(Led(2, (1.0, 1.0, 1.0)), "led")
    await device.until(lambda: device.sim.rumble and device.sim.leds == 0b0101)
    with pytest.raises(InvalidArgument, match="Pro Controller has no accelerometer or gyro"):
        await device.command(Calibrate(), "hwgateway/Calibrate")


async def test_reports_longer_than_declared_and_buttons_only_reports(make: Callable[..., Device]) -> None:
    device = make(sim_motionplus=True)
    await device.connected()
    await device.until(lambda: device.adapter.capabilities().get("extension") == "motionplus")
    device.sim.pad_to = 23  # every report padded, as some remotes and adapters send them
    device.sim.buttons = rp.Button.A
    await device.until(lambda: device.state().buttons[State.MSG_BTN_A])
    await device.until(lambda: device.adapter.capabilities()["oversized_reports"] > 20)
    device.sim.inject(b"\x37\x00\x04")  # cut down to its buttons: B
    await device.until(lambda: device.adapter.capabilities()["buttons_only_reports"] == 1)
    caps = device.adapter.capabilities()
    assert caps["malformed_reports"] == 0
    assert caps["ignored_bytes"] >= caps["oversized_reports"]
    assert caps["extension"] == "motionplus"  # padded status reports keep the state machine going
