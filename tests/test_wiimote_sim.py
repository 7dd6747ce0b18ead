"""The simulated remote's device side, driven with the spec's raw bytes over its socket pair."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from devices.sim import wiimote as sim_module
from devices.sim.wiimote import SimulatedWiimote
from protocols.errors import ProtocolError
from protocols.wiimote import extensions as ext
from protocols.wiimote import reports as rp
from protocols.wiimote.calibration import checksum, parse_gyro_calibration


class Host:
    """The host end: raw reports out, raw reports in."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    async def send(self, hex_report: str) -> None:
        await asyncio.get_running_loop().sock_sendall(self.sock, bytes.fromhex(hex_report))

    async def recv(self, skip_data: bool = True) -> bytes:
        """The next report; data reports (0x30-0x3F) are skipped unless asked for."""
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(2):
            while True:
                report = await loop.sock_recv(self.sock, 64)
                if not (skip_data and report[0] >= 0x30):
                    return report

    async def quiet(self, seconds: float = 0.1) -> list[bytes]:
        """Every non-data report arriving within `seconds`."""
        got: list[bytes] = []
        try:
            async with asyncio.timeout(seconds):
                while True:
                    got.append(await self.recv())
        except TimeoutError:
            return got


@pytest.fixture
async def pair() -> AsyncIterator[tuple[SimulatedWiimote, Host]]:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ours.setblocking(False)
    sim = SimulatedWiimote(theirs, battery=0xC0)
    sim.start()
    yield sim, Host(ours)
    await sim.stop()
    ours.close()


async def test_status_leds_and_acks(pair: tuple[SimulatedWiimote, Host]) -> None:
    sim, host = pair
    await host.send("1500")
    assert (await host.recv()).hex() == "200000" + "00" + "0000c0"
    await host.send("1190")  # LED1 + LED4, no ack bit: no answer
    assert await host.quiet() == []
    await host.send("1192")  # ack requested (bit 1)
    assert (await host.recv()).hex() == "2200001100"
    await host.send("1500")
    assert (await host.recv()).hex() == "200000" + "90" + "0000c0"
    await host.send("1001")
    await host.send("1501")  # keeps the rumble bit
    await host.recv()
    assert sim.rumble
    await host.send("1500")  # any report without the bit switches the motor off
    await host.recv()
    assert not sim.rumble


async def test_eeprom_read_in_16_byte_chunks(pair: tuple[SimulatedWiimote, Host]) -> None:
    _, host = pair
    await host.send("17000000160014")  # 20 bytes from 0x0016
    first, second = await host.recv(), await host.recv()
    assert first[:6].hex() == "2100" + "00f0" + "0016"  # 16 bytes, no error, address 0x0016
    assert second[:6].hex() == "2100" + "0030" + "0026"  # 4 bytes
    data = first[6:] + second[6:10]
    for block in (data[:10], data[10:]):
        assert checksum(block[:9]) == block[9]
    await host.send("17000017000010")  # beyond the EEPROM
    assert (await host.recv())[:6].hex() == "2100" + "0008" + "1700"


async def test_register_errors(pair: tuple[SimulatedWiimote, Host]) -> None:
    _, host = pair
    await host.send("1704a400fa0006")  # no extension plugged in
    assert (await host.recv())[:6].hex() == "2100" + "0007" + "00fa"
    await host.send("1604b0003001" + "08" + "00" * 15)  # camera off: writes are refused
    assert (await host.recv()).hex() == "2200001607"


async def test_reporting_mode_falls_back_after_every_status_report(pair: tuple[SimulatedWiimote, Host]) -> None:
    sim, host = pair
    await host.send("120431")
    report = await host.recv(skip_data=False)
    while report[0] == 0x30:  # sent in the power-on mode before the 0x12 arrived
        report = await host.recv(skip_data=False)
    assert report[0] == 0x31
    assert len(report) == 6
    await host.send("1500")
    await host.recv()
    assert (sim.mode, sim.continuous) == (0x30, False)


async def test_extension_init_and_id(pair: tuple[SimulatedWiimote, Host]) -> None:
    sim, host = pair
    sim.plug("nunchuk")
    status = await host.recv()  # unsolicited: the extension flag is set
    assert status[0] == 0x20
    assert status[3] & 0x02
    await host.send("1704a400fa0006")
    assert (await host.recv())[6:12].hex() == "0000a420ffff"  # not initialised yet
    await host.send("1604a400f001" + "55" + "00" * 15)
    assert (await host.recv()).hex() == "2200001600"
    await host.send("1604a400fb01" + "00" + "00" * 15)
    assert (await host.recv()).hex() == "2200001600"
    await host.send("1704a400fa0006")
    assert (await host.recv())[6:12].hex() == "0000a4200000"  # Nunchuk
    await host.send("1704a400200010")
    cal = (await host.recv())[6:22]
    assert cal[14] == checksum(cal[:14])
    assert cal[15] == (cal[14] + 0x55) & 0xFF


async def test_motionplus_activation(pair: tuple[SimulatedWiimote, Host]) -> None:
    sim, host = pair
    sim.attach_motionplus()
    assert await host.quiet() == []  # an inactive MotionPlus sends no status report
    await host.send("1704a600fa0006")
    assert (await host.recv())[6:12].hex() == "0000a6200005"
    await host.send("1604a600fe01" + "04" + "00" * 15)
    assert (await host.recv()).hex() == "2200001600"
    status = await host.recv()
    assert status[0] == 0x20
    assert status[3] & 0x02
    await host.send("1704a400fa0006")
    assert (await host.recv())[6:12].hex() == "0000a4200405"
    await host.send("1704a600fa0006")  # active: no longer answers at 0xA6
    assert (await host.recv())[:4].hex() == "21000007"
    await host.send("120435")
    # The first frame is the junk a real MotionPlus sends after activation (Dolphin, from hardware);
    # then MotionPlus data at rest, near the unit's slow-range zero (0x7749/4, 0x75A4/4, 0x739A/4).
    first = await host.recv(skip_data=False)
    while first[0] != 0x35:
        first = await host.recv(skip_data=False)
    assert first[6:12].hex() == "d5b04e6efc02"
    frame = (await host.recv(skip_data=False))[6:12]
    assert frame[5] & 0x02  # MotionPlus data
    rest = ext.decode_motionplus(frame)
    assert (rest.yaw, rest.roll, rest.pitch) == pytest.approx((0x7749 / 4, 0x75A4 / 4, 0x739A / 4), abs=12)
    assert (rest.yaw_slow, rest.roll_slow, rest.pitch_slow) == (True, True, True)


async def test_motionplus_calibration_register_holds_a_real_units_block(pair: tuple[SimulatedWiimote, Host]) -> None:
    sim, host = pair
    sim.attach_motionplus()
    await host.send("1704a600200020")  # 32 bytes at 0xA60020: two replies
    replies = [await host.recv(), await host.recv()]
    assert [r[3:6].hex() for r in replies] == ["f00020", "f00030"]
    block = replies[0][6:22] + replies[1][6:22]
    assert block.hex() == "7983735472e830c3cc4a34fcc84fcc5b774975a4739a3552ca2237262de5b5a2"  # issue 14, unit 1
    assert parse_gyro_calibration(block).factory


async def test_wii_u_pro_controller_device_side() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ours.setblocking(False)
    sim = SimulatedWiimote(theirs, pro_controller=True, pad_to=23)
    sim.start()
    host = Host(ours)
    try:
        await host.send("1500")
        status = await host.recv()
        assert len(status) == 23  # padded with zeros past its 7 bytes
        assert status[3] & 0x02  # its "extension" is always plugged in
        await host.send("1604a400f001" + "55" + "00" * 15)
        await host.recv()
        await host.send("1704a400fa0006")
        assert (await host.recv())[6:12].hex() == "0000a4200120"
        await host.send("1306")
        await host.recv()
        await host.send("1604b00030" + "0108" + "00" * 15)
        assert (await host.recv())[:5].hex() == "2200001607"  # no camera behind the registers
        sim.pro_buttons = ext.ProButton.A | ext.ProButton.THUMB_R
        await host.send("120434")
        report = await host.recv(skip_data=False)
        while report[0] != 0x34:
            report = await host.recv(skip_data=False)
        pro = ext.decode_pro(report[3:22])
        assert pro == ext.ProController(sim_module.PRO_REST, ext.ProButton.A | ext.ProButton.THUMB_R, 4, False, False)
    finally:
        await sim.stop()
        ours.close()


@given(
    st.lists(st.tuples(st.sampled_from(sorted(rp.OUTPUT_LENGTHS)), st.binary(min_size=21, max_size=21)), max_size=20)
)
@settings(max_examples=150, deadline=None)
def test_no_output_report_crashes_the_simulated_remote(reports: list[tuple[int, bytes]]) -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sim = SimulatedWiimote(theirs, extension="nunchuk", motionplus=True)
        for report_id, payload in reports:
            try:
                decoded = rp.decode_output(bytes((report_id,)) + payload[: rp.OUTPUT_LENGTHS[report_id]])
            except ProtocolError:
                continue
            sim._handle(decoded)
            assert len(sim._camera) == 256
            assert len(sim.data_reports()) in (1, 2)
    finally:
        ours.close()
        theirs.close()
