"""Wii Remote reports, IR, extensions and calibration: byte tables, round trips, hostile input."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.errors import ProtocolError
from protocols.wiimote import extensions as ext
from protocols.wiimote import ir
from protocols.wiimote import reports as rp
from protocols.wiimote.calibration import (
    DEFAULT_ACCEL,
    NOMINAL_GYRO,
    AccelCalibration,
    GyroAxis,
    checksum,
    encode_accel_block,
    encode_ext_calibration,
    parse_accel_block,
    parse_accel_calibration,
    parse_classic_calibration,
    parse_gyro_calibration,
    parse_nunchuk_calibration,
    pro_calibration_from,
)
from protocols.wiimote.connection import WiimoteConnection
from tests.fuzzing import fuzz_settings

# The spec's EEPROM example (wiibrew), whose checksum was verified by hand: 0x3E.
SPEC_BLOCK = bytes.fromhex("828282159c9c9e38403e")

OUTPUT_TABLE = [
    (rp.rumble_report(True), "1001"),
    (rp.rumble_report(False), "1000"),
    (rp.leds_report(0b0101, False), "1150"),
    (rp.leds_report(0b1000, True), "1181"),
    (rp.report_mode_report(0x33, True, False), "120433"),
    (rp.report_mode_report(0x37, False, True), "120137"),
    (rp.ir_pixel_clock_report(True, False), "1306"),
    (rp.ir_pixel_clock_report(False, True), "1303"),
    (rp.speaker_enable_report(True, False), "1404"),
    (rp.status_request_report(True), "1501"),
    (rp.status_request_report(False), "1500"),
    (rp.write_memory_report(rp.Space.REGISTER, 0xA400F0, b"\x55", False), "1604a400f00155" + "00" * 15),
    (rp.write_memory_report(rp.Space.EEPROM, 0x0016, bytes(range(16)), True), "160100001610" + bytes(range(16)).hex()),
    (rp.read_memory_report(rp.Space.EEPROM, 0x0016, 20, True), "170100001600" + "14"),
    (rp.read_memory_report(rp.Space.REGISTER, 0xA600FA, 6, False), "1704a600fa0006"),
    (rp.speaker_data_report(b"\x01\x02", False), "18100102" + "00" * 18),
    (rp.speaker_mute_report(True, True), "1905"),
    (rp.ir_logic_report(True, False), "1a06"),
]


@pytest.mark.parametrize(("encoded", "expected"), OUTPUT_TABLE)
def test_output_reports_byte_table(encoded: bytes, expected: str) -> None:
    assert encoded.hex() == expected
    # Exact lengths: report ID + the table's payload length, never padded.
    assert len(encoded) == 1 + rp.OUTPUT_LENGTHS[encoded[0]]


def test_every_output_report_carries_the_rumble_bit() -> None:
    for on in (False, True):
        reports = [
            rp.rumble_report(on),
            rp.leds_report(0xF, on),
            rp.report_mode_report(0x30, True, on),
            rp.ir_pixel_clock_report(True, on),
            rp.speaker_enable_report(False, on),
            rp.status_request_report(on),
            rp.write_memory_report(rp.Space.REGISTER, 0xB00030, b"\x08", on),
            rp.read_memory_report(rp.Space.EEPROM, 0, 1, on),
            rp.speaker_data_report(b"", on),
            rp.speaker_mute_report(False, on),
            rp.ir_logic_report(False, on),
        ]
        assert sorted(r[0] for r in reports) == sorted(rp.OUTPUT_LENGTHS)
        for report in reports:
            assert report[1] & 1 == on
            assert rp.decode_output(report).rumble == on


def test_output_decoder_reads_back_the_fields() -> None:
    write = rp.decode_output(bytes.fromhex("1604a400f00155" + "00" * 15))
    assert (write.report, write.space, write.address, write.size, write.data) == (0x16, 0x04, 0xA400F0, 1, b"\x55")
    read = rp.decode_output(bytes.fromhex("1701000016" + "0014"))
    assert (read.space, read.address, read.size, read.rumble) == (0, 0x16, 20, True)
    mode = rp.decode_output(bytes.fromhex("120433"))
    assert (mode.mode, mode.enabled, mode.ack_requested) == (0x33, True, False)
    assert rp.decode_output(bytes.fromhex("1306")).ack_requested


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty output report"),
        (b"\x1b\x00", "unknown output report 0x1b"),
        (b"\x11", "output report 0x11 has 0 payload bytes, expected 1"),
        (b"\x11\x00\x00", "output report 0x11 has 2 payload bytes, expected 1"),
        (bytes.fromhex("1604a400f000") + b"\x00" * 16, "memory write of 0 bytes (1 to 16 allowed)"),
    ],
)
def test_output_decoder_rejects(data: bytes, message: str) -> None:
    with pytest.raises(ProtocolError, match=message.replace("(", r"\(").replace(")", r"\)")):
        rp.decode_output(data)


def test_encoders_refuse_out_of_range_values() -> None:
    with pytest.raises(ValueError, match="4 bits"):
        rp.leds_report(16, False)
    with pytest.raises(ValueError, match="not a data reporting mode"):
        rp.report_mode_report(0x38, True, False)
    with pytest.raises(ValueError, match="1 to 16 bytes"):
        rp.write_memory_report(rp.Space.REGISTER, 0, b"\x00" * 17, False)
    with pytest.raises(ValueError, match="24 bits"):
        rp.read_memory_report(rp.Space.REGISTER, 1 << 24, 1, False)


# ---------------------------------------------------------------- input reports

IR12 = bytes.fromhex("388053") + b"\xff" * 9  # one object at (312, 384), size 3
IR10 = bytes.fromhex("388056c880") + b"\xff" * 5  # (312, 384) and (712, 384), basic format


def test_status_report() -> None:
    status = rp.decode_input(bytes.fromhex("20080812" + "0000c0"))
    assert isinstance(status, rp.Status)
    assert status.buttons == rp.Button.UP | rp.Button.A
    assert status.extension
    assert status.leds == 0b0001
    assert status.battery == 0xC0
    low = rp.decode_input(bytes.fromhex("200000f9" + "000010"))
    assert isinstance(low, rp.Status)
    assert rp.StatusFlag.BATTERY_LOW in low.flags
    assert rp.StatusFlag.IR in low.flags
    assert low.leds == 0xF


def test_read_reply_and_ack() -> None:
    reply = rp.decode_input(bytes.fromhex("2100" + "00f00016") + SPEC_BLOCK + SPEC_BLOCK[:6])
    assert reply == rp.ReadReply(0, 0, 0x0016, SPEC_BLOCK + SPEC_BLOCK[:6])
    short = rp.decode_input(bytes.fromhex("21000050" + "0020") + bytes(range(16)))
    assert short == rp.ReadReply(0, 0, 0x0020, bytes(range(6)))
    for code in (6, 7, 8):
        failed = rp.decode_input(bytes.fromhex(f"2100000{code}00fa") + b"\x00" * 16)
        assert isinstance(failed, rp.ReadReply)
        assert failed.error == code
    assert rp.decode_input(bytes.fromhex("2200001600")) == rp.Ack(0, 0x16, 0)
    assert rp.decode_input(bytes.fromhex("2210001303")) == rp.Ack(rp.Button.PLUS, 0x13, 3)


def test_core_buttons_and_accelerometer_bits() -> None:
    buttons = rp.decode_input(bytes.fromhex("301080"))
    assert buttons == rp.DataReport(0x30, rp.Button.PLUS | rp.Button.HOME, None, b"", b"")
    accel = rp.decode_input(bytes.fromhex("316060" + "82829c"))
    assert isinstance(accel, rp.DataReport)
    # X takes b0 bits 6:5 as its 2 LSBs; Y and Z only one LSB each (b1 bit 5, bit 6).
    assert accel.accel == (0x82 << 2 | 3, 0x82 << 2 | 2, 0x9C << 2 | 2)
    assert accel.buttons == 0
    every = rp.decode_input(bytes.fromhex("301f9f"))
    assert isinstance(every, rp.DataReport)
    assert every.buttons == rp.BUTTON_MASK == sum(rp.Button)


EXT = bytes(range(0x40, 0x40 + 21))
DATA_TABLE = [
    ("3000" + "00", None, b"", b""),
    ("3100" + "00828282", (520, 520, 520), b"", b""),
    ("3200" + "00" + EXT[:8].hex(), None, b"", EXT[:8]),
    ("3300" + "00828282" + IR12.hex(), (520, 520, 520), IR12, b""),
    ("3400" + "00" + EXT[:19].hex(), None, b"", EXT[:19]),
    ("3500" + "00828282" + EXT[:16].hex(), (520, 520, 520), b"", EXT[:16]),
    ("3600" + "00" + IR10.hex() + EXT[:9].hex(), None, IR10, EXT[:9]),
    ("3700" + "00828282" + IR10.hex() + EXT[:6].hex(), (520, 520, 520), IR10, EXT[:6]),
    ("3d" + EXT.hex(), None, b"", EXT),
]


@pytest.mark.parametrize(("hex_report", "accel", "ir_bytes", "ext_bytes"), DATA_TABLE)
def test_data_reports_byte_table(hex_report: str, accel: object, ir_bytes: bytes, ext_bytes: bytes) -> None:
    report = bytes.fromhex(hex_report)
    assert len(report) == 1 + rp.INPUT_LENGTHS[report[0]]
    decoded = rp.decode_input(report)
    assert isinstance(decoded, rp.DataReport)
    assert (decoded.report, decoded.accel, decoded.ir, decoded.ext) == (report[0], accel, ir_bytes, ext_bytes)


def test_interleaved_pair_joins_accel_and_full_ir() -> None:
    # AZ = 0x9C: bits 5:4 in 0x3E b0 6:5, bits 7:6 in 0x3E b1 6:5, bits 1:0 / 3:2 likewise in 0x3F.
    ir36 = bytes.fromhex("388053" + "272f29310003") + b"\xff" * 27
    first = bytes.fromhex("3e" + "2048" + "82") + ir36[:18]
    second = bytes.fromhex("3f" + "0068" + "83") + ir36[18:]
    joined = rp.Interleave()
    assert joined.feed(first) is None
    sample = joined.feed(second)
    assert sample is not None
    assert sample.buttons == rp.Button.A
    assert sample.accel == (0x82 << 2, 0x83 << 2, 0x9C << 2)
    assert sample.ir == ir36
    # A second half on its own (its first half lost) is dropped, not mis-joined.
    assert rp.Interleave().feed(second) is None
    # Concatenated stream of pairs: one sample per pair.
    stream = rp.Interleave()
    samples = [stream.feed(r) for r in (first, second, first, second)]
    assert samples[0] is None
    assert samples[2] is None
    assert samples[1] == samples[3] == sample
    assert rp.data_input(0x3E, rp.Button.A, (0x82 << 2, 0x83 << 2, 0x9C << 2), ir36, b"") == [first, second]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty input report"),
        (b"\x38" + b"\x00" * 21, "unknown input report 0x38"),
        (b"\x20\x00", r"input report 0x20 has 1 payload bytes, expected 6 \(or at least 2\)"),
        (b"\x30\x00", r"input report 0x30 has 1 payload bytes, expected 2$"),
        # The kernel has no buttons-only handler for these: they need all their bytes.
        (b"\x3d" + b"\x00" * 2, r"input report 0x3d has 2 payload bytes, expected 21$"),
        (b"\x3e" + b"\x00" * 20, r"input report 0x3e has 20 payload bytes, expected 21$"),
    ],
)
def test_input_decoder_rejects(data: bytes, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        rp.decode_input(data)


# The kernel's handler table (hid-wiimote-core.c `handlers[]`, matched by `h->size < size`): a report
# is taken when its payload has at least the declared bytes, the rest ignored; status, read reply,
# ack and 0x30-0x37 also have a 2-byte buttons-only entry. Buttons 0x0008 = A in every row.
KERNEL_LENGTH_TABLE = [
    ("30" + "0008" + "ff", rp.DataReport(0x30, rp.Button.A, None, b"", b""), 1),
    ("31" + "0008" + "808080" + "aabb", rp.DataReport(0x31, rp.Button.A, (0x200, 0x200, 0x200), b"", b""), 2),
    ("37" + "0008" + "808080" + "ff" * 10 + "00" * 6 + "99", None, 1),
    ("20" + "0008" + "020000" + "c0" + "ee", rp.Status(rp.Button.A, rp.StatusFlag.EXTENSION, 0xC0), 1),
    ("20" + "0008", rp.ButtonsOnly(0x20, rp.Button.A), 0),
    ("20" + "0008" + "0200", rp.ButtonsOnly(0x20, rp.Button.A), 0),
    ("21" + "0008", rp.ButtonsOnly(0x21, rp.Button.A), 0),
    ("22" + "0008" + "16", rp.ButtonsOnly(0x22, rp.Button.A), 0),
    ("22" + "0008" + "1600" + "00", rp.Ack(rp.Button.A, 0x16, 0), 1),
    ("33" + "0008" + "8080", rp.ButtonsOnly(0x33, rp.Button.A), 0),
    ("37" + "0008", rp.ButtonsOnly(0x37, rp.Button.A), 0),
]


@pytest.mark.parametrize(("hex_report", "expected", "extra"), KERNEL_LENGTH_TABLE)
def test_report_lengths_the_kernel_accepts(hex_report: str, expected: rp.InputReport | None, extra: int) -> None:
    report = bytes.fromhex(hex_report)
    decoded = rp.decode_input(report)
    if expected is not None:
        assert decoded == expected
    else:
        assert decoded == rp.decode_input(report[:22])  # the extra byte changes nothing
    assert rp.excess_bytes(report) == extra


@given(st.binary(max_size=40))
@pytest.mark.fuzz
@fuzz_settings(400)
def test_no_input_crashes_the_decoder(data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        rp.decode_input(data)


@given(st.binary(max_size=30))
@pytest.mark.fuzz
@fuzz_settings(300)
def test_no_output_crashes_the_decoder(data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        rp.decode_output(data)


@given(st.lists(st.binary(max_size=24), max_size=12), st.sampled_from([0x20, 0x21, 0x22, 0x33, 0x37, 0x3E]))
@pytest.mark.fuzz
@fuzz_settings(200)
def test_no_report_sequence_crashes_the_connection(reports: list[bytes], first: int) -> None:
    conn = WiimoteConnection()
    conn.start(0.0)
    for step, report in enumerate(reports):
        conn.receive(bytes((first,)) + report if step % 2 else report, float(step))
        conn.poll(float(step))
    assert conn.malformed <= len(reports)


@given(
    st.sampled_from(rp.DATA_MODES),
    st.integers(0, 0xFFFF),
    st.tuples(st.integers(0, 1023), st.integers(0, 1023), st.integers(0, 1023)),
    st.binary(min_size=36, max_size=36),
    st.binary(min_size=21, max_size=21),
)
def test_data_round_trip(
    mode: int, buttons: int, accel: tuple[int, int, int], ir_bytes: bytes, ext_bytes: bytes
) -> None:
    reports = rp.data_input(mode, buttons, accel, ir_bytes, ext_bytes)
    if mode == rp.In.INTERLEAVED_A:
        joined = rp.Interleave()
        assert joined.feed(reports[0]) is None
        sample = joined.feed(reports[1])
        assert sample is not None
        assert sample.accel == tuple(v >> 2 << 2 for v in accel)
        assert sample.ir == ir_bytes
        return
    [report] = reports
    decoded = rp.decode_input(report)
    assert isinstance(decoded, rp.DataReport)
    layout = rp.DATA_LAYOUTS[mode]
    assert decoded.buttons == (buttons & rp.BUTTON_MASK if layout.buttons else 0)
    if layout.accel:
        x, y, z = accel
        assert decoded.accel == (x, y & ~1, z & ~1)  # Y and Z have no LSB on the wire
    assert decoded.ir == ir_bytes[: layout.ir_bytes]
    assert decoded.ext == ext_bytes[: layout.ext_bytes]


# ---------------------------------------------------------------- IR


def test_ir_formats_byte_table() -> None:
    seen = ir.IrObject(312, 384, 3)
    assert ir.decode_objects(ir.IrMode.EXTENDED, IR12) == [seen, None, None, None]
    assert ir.decode_objects(ir.IrMode.BASIC, IR10) == [ir.IrObject(312, 384), ir.IrObject(712, 384), None, None]
    full = bytes.fromhex("388053" + "272f29310003") + b"\xff" * 27
    assert ir.decode_objects(ir.IrMode.FULL, full) == [seen, None, None, None]
    with pytest.raises(ProtocolError, match="does not fit"):
        ir.decode_objects(ir.IrMode.BASIC, IR12)


@given(
    st.sampled_from([ir.IrMode.BASIC, ir.IrMode.EXTENDED, ir.IrMode.FULL]),
    st.lists(
        st.none() | st.builds(ir.IrObject, st.integers(0, 1022), st.integers(0, 767), st.integers(0, 15)), max_size=4
    ),
)
def test_ir_round_trip(mode: ir.IrMode, objects: list[ir.IrObject | None]) -> None:
    decoded = ir.decode_objects(mode, ir.encode_objects(mode, objects))
    expected = (objects + [None] * 4)[:4]
    if mode == ir.IrMode.BASIC:
        expected = [ir.IrObject(o.x, o.y) if o else None for o in expected]
    assert decoded == expected


def test_camera_init_sequence() -> None:
    writes = ir.init_writes(ir.IrMode.EXTENDED)
    assert writes == [
        (0xB00030, b"\x01"),
        (0xB00000, bytes.fromhex("020000710100aa0064")),
        (0xB0001A, bytes.fromhex("6303")),
        (0xB00033, b"\x03"),
        (0xB00030, b"\x08"),
    ]


# ---------------------------------------------------------------- extensions


def test_extension_ids() -> None:
    assert ext.identify(bytes.fromhex("0000a4200000")) == ext.ExtensionType.NUNCHUK
    assert ext.identify(bytes.fromhex("0000a4200101")) == ext.ExtensionType.CLASSIC
    assert ext.identify(bytes.fromhex("0100a4200101")) == ext.ExtensionType.CLASSIC_PRO
    assert ext.identify(bytes.fromhex("0000a4200405")) == ext.ExtensionType.MOTIONPLUS
    assert ext.identify(bytes.fromhex("0000a4200505")) == ext.ExtensionType.MOTIONPLUS_NUNCHUK
    assert ext.identify(bytes.fromhex("0000a4200705")) == ext.ExtensionType.MOTIONPLUS_CLASSIC
    assert ext.identify(b"\xff" * 6) == ext.ExtensionType.NONE
    assert ext.identify(bytes.fromhex("0000a4200103")) == ext.ExtensionType.UNKNOWN
    assert ext.identify(bytes.fromhex("0000a4200120")) == ext.ExtensionType.PRO_CONTROLLER
    assert ext.is_motionplus_id(bytes.fromhex("0000a6200005"))
    with pytest.raises(ProtocolError, match="expected 6"):
        ext.identify(b"\x00")


def test_nunchuk_byte_table() -> None:
    released = ext.decode_nunchuk(bytes.fromhex("808080" + "80b3ff"))
    assert released == ext.Nunchuk((128, 128), (0x80 << 2 | 3, 0x80 << 2 | 3, 0xB3 << 2 | 3), False, False)
    both = ext.decode_nunchuk(bytes.fromhex("ff0080" + "80b3fc"))
    assert (both.stick, both.c, both.z) == ((255, 0), True, True)
    only_c = ext.decode_nunchuk(bytes.fromhex("808080" + "80b3fd"))
    assert (only_c.c, only_c.z) == (True, False)


def test_classic_byte_table() -> None:
    centred = ext.decode_classic(bytes.fromhex("a0201000" + "ffff"))
    assert centred == ext.Classic((32, 32), (16, 16), (0, 0), ext.ClassicButton(0))
    pressed = ext.decode_classic(bytes.fromhex("a0201000" + "f7ef"))
    assert pressed.buttons == ext.ClassicButton.HOME | ext.ClassicButton.A
    corners = ext.decode_classic(bytes.fromhex("ffffffff" + "0000"))
    assert corners.left == (63, 63)
    assert corners.right == (31, 31)
    assert corners.triggers == (31, 31)
    assert corners.buttons == ext.CLASSIC_BUTTON_MASK


def test_motionplus_byte_table() -> None:
    mp = ext.decode_motionplus(bytes.fromhex("7ffeb87f7e7e"))
    assert mp == ext.MotionPlus(0x1F7F, 0x1FFE, 0x1FB8, True, True, True, False)
    assert ext.is_motionplus_frame(bytes.fromhex("7ffeb87f7e7e"))
    with pytest.raises(ProtocolError, match="not MotionPlus data"):
        ext.decode_motionplus(bytes.fromhex("808080" + "80b3fc"))


# The junk frame a real MotionPlus sends after activation (Dolphin's maintainers, from hardware).
JUNK_FRAME = bytes.fromhex("d5b04e6efc02")


def test_motionplus_invalid_flag_and_junk_frame() -> None:
    # Byte 5 bit 0 flags an invalid frame (kernel `handler_ext`); the junk frame is not flagged, and
    # decodes as wild rates (roll and pitch in fast mode), which is why it must be dropped by timing.
    assert ext.is_flagged_invalid(bytes.fromhex("7ffeb87f7e7f"))
    assert not ext.is_flagged_invalid(JUNK_FRAME)
    junk = ext.decode_motionplus(JUNK_FRAME)
    assert (junk.yaw, junk.roll, junk.pitch) == (0x1BD5, 0x3FB0, 0x004E)
    assert (junk.yaw_slow, junk.roll_slow, junk.pitch_slow, junk.ext_connected) == (True, False, False, False)


def test_gyro_scales() -> None:
    # Slow mode: 8192 counts = 440 deg/s; fast mode covers 2000 deg/s.
    assert 8192 * ext.rad_per_count(True) == pytest.approx(0.0174533 * 440, rel=1e-4)
    assert 8192 * ext.rad_per_count(False) == pytest.approx(0.0174533 * 2000, rel=1e-4)


def test_passthrough_frames_alternate_with_motionplus_ones() -> None:
    nunchuk = ext.Nunchuk((10, 250), (0x200, 0x1FE, 0x2CC), True, False)
    frame = ext.encode_nunchuk_passthrough(nunchuk)
    assert not ext.is_motionplus_frame(frame)
    assert ext.decode_nunchuk_passthrough(frame) == nunchuk
    classic = ext.Classic(
        (32, 20), (5, 9), (3, 30), ext.ClassicButton.UP | ext.ClassicButton.LEFT | ext.ClassicButton.ZR
    )
    frame = ext.encode_classic_passthrough(classic)
    assert not ext.is_motionplus_frame(frame)
    assert ext.decode_classic_passthrough(frame) == classic
    stream = frame + ext.encode_motionplus(ext.MotionPlus(1, 2, 3, False, True, False, True))
    kinds = [ext.is_motionplus_frame(stream[i : i + 6]) for i in (0, 6)]
    assert kinds == [False, True]


@given(st.binary(min_size=6, max_size=6))
def test_extension_decoders_take_any_six_bytes(data: bytes) -> None:
    ext.decode_nunchuk(data)
    ext.decode_classic(data)
    ext.decode_nunchuk_passthrough(data)
    ext.decode_classic_passthrough(data)
    if ext.is_motionplus_frame(data):
        assert ext.encode_motionplus(ext.decode_motionplus(data))[:3] == data[:3]


@given(
    st.tuples(st.integers(0, 255), st.integers(0, 255)),
    st.tuples(st.integers(0, 1023), st.integers(0, 1023), st.integers(0, 1023)),
    st.booleans(),
    st.booleans(),
)
def test_nunchuk_round_trip(stick: tuple[int, int], accel: tuple[int, int, int], c: bool, z: bool) -> None:
    sample = ext.Nunchuk(stick, accel, c, z)
    assert ext.decode_nunchuk(ext.encode_nunchuk(sample)) == sample


# ---------------------------------------------------------------- calibration


def test_spec_eeprom_example() -> None:
    assert checksum(SPEC_BLOCK[:9]) == 0x3E
    cal = parse_accel_block(SPEC_BLOCK)
    assert cal == AccelCalibration((521, 521, 521), (627, 626, 632), factory=True)
    assert encode_accel_block(cal) == SPEC_BLOCK
    assert cal.to_g((521.0, 521.0, 632.0)) == (0.0, 0.0, 1.0)


def test_calibration_falls_back_to_the_second_block_then_the_default() -> None:
    broken = SPEC_BLOCK[:9] + b"\x00"
    other = encode_accel_block(AccelCalibration((500, 510, 520), (600, 610, 620), True))
    assert parse_accel_calibration(SPEC_BLOCK + other).zero == (521, 521, 521)
    assert parse_accel_calibration(broken + other).zero == (500, 510, 520)
    assert parse_accel_calibration(broken + broken) == DEFAULT_ACCEL
    assert not DEFAULT_ACCEL.factory
    with pytest.raises(ProtocolError, match="checksum"):
        parse_accel_block(broken)


# 32 bytes read at 0xA60020 from two real MotionPlus units (issue 14): zlib CRC-32 over 0x00-0x0D and
# 0x10-0x1D equals bytes 0x0E, 0x0F, 0x1E, 0x1F; fast range at 0x00, slow at 0x10.
REAL_GYRO_CAL = [
    bytes.fromhex("79837354 72e830c3 cc4a34fc c84fcc5b 774975a4 739a3552 ca223726 2de5b5a2".replace(" ", "")),
    bytes.fromhex("78d97838 779d2f0c cff031ad c80b5e39 6f817b89 78513360 c9f537c1 2de9158d".replace(" ", "")),
]


def test_real_motionplus_calibration_blocks() -> None:
    first, second = (parse_gyro_calibration(block) for block in REAL_GYRO_CAL)
    assert first.factory
    assert second.factory
    # Slow range of unit 1: zeros 0x7749, 0x75A4, 0x739A (16-bit) = 14-bit counts / 4; scale points
    # 0x3552, 0xCA22, 0x3726 at 45 × 6 = 270 deg/s.
    assert first.slow.zero == (0x7749 / 4, 0x75A4 / 4, 0x739A / 4)
    assert first.zero(GyroAxis.YAW, slow=True) == pytest.approx(7634.25)
    assert first.slow.counts_per_deg_s == pytest.approx(
        (abs(0x3552 - 0x7749) / 4 / 270, abs(0xCA22 - 0x75A4) / 4 / 270, abs(0x3726 - 0x739A) / 4 / 270)
    )
    # Fast range of unit 1: zeros 0x7983, 0x7354, 0x72E8; scale points at 200 × 6 = 1200 deg/s.
    assert first.fast.zero == (0x7983 / 4, 0x7354 / 4, 0x72E8 / 4)
    assert first.fast.counts_per_deg_s[GyroAxis.ROLL] == pytest.approx(abs(0xCC4A - 0x7354) / 4 / 1200)
    # What the nominal scale got wrong (issue 14): 0.77-1.16× the unit's own scale ...
    ratios = [
        cal.range(slow).counts_per_deg_s[axis] / NOMINAL_GYRO.range(slow).counts_per_deg_s[axis]
        for cal in (first, second)
        for slow in (True, False)
        for axis in GyroAxis
    ]
    assert min(ratios) == pytest.approx(0.766, abs=0.005)
    assert max(ratios) == pytest.approx(1.158, abs=0.005)
    # ... and the slow-range (at-rest) zero applied in the fast range: 11-146 deg/s off.
    offsets = [
        abs(cal.fast.zero[axis] - cal.slow.zero[axis]) / NOMINAL_GYRO.fast.counts_per_deg_s[axis]
        for cal in (first, second)
        for axis in GyroAxis
    ]
    assert min(offsets) == pytest.approx(10.9, abs=0.1)
    assert max(offsets) == pytest.approx(146.0, abs=0.1)
    assert second.rad_per_count(GyroAxis.PITCH, slow=False) == pytest.approx(
        0.017453293 / (abs(0x31AD - 0x779D) / 4 / 1200)
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (REAL_GYRO_CAL[0][:14] + b"\x00\x00" + REAL_GYRO_CAL[0][16:], r"CRC 0x0000b5a2 != computed 0xcc5bb5a2"),
        (bytes([REAL_GYRO_CAL[1][0] ^ 1]) + REAL_GYRO_CAL[1][1:], "CRC 0x5e39158d != computed"),
        (REAL_GYRO_CAL[0][:31], "has 31 bytes, expected 32"),
        (b"\x00" * 32, "CRC 0x00000000 != computed"),
    ],
)
def test_motionplus_calibration_rejects(data: bytes, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        parse_gyro_calibration(data)


@given(st.binary(min_size=30, max_size=34))
@pytest.mark.fuzz
@fuzz_settings(200)
def test_motionplus_calibration_takes_any_bytes(data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        calibration = parse_gyro_calibration(data)
        assert all(per_deg > 0 for span in (calibration.slow, calibration.fast) for per_deg in span.counts_per_deg_s)


@given(st.binary(max_size=21))
@pytest.mark.fuzz
@fuzz_settings(200)
def test_pro_controller_decoder_takes_any_bytes(data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        pro = ext.decode_pro(data)
        assert all(0 <= stick <= 0xFFF for stick in pro.sticks)
        assert 0 <= pro.battery <= 7


# The kernel's Pro Controller layout (`wiimod_pro_in_ext` comment): LX, RX, LY, RY as 12-bit little
# endian pairs, then buttons active-low in bytes 8-9, byte 10 = 1, battery(3), USB, CHARG, LTHUM, RTHUM.
PRO_TABLE = [
    # At rest, nothing pressed, battery 4 (full), on battery power (USB 1, CHARG 1).
    ("0008000800080008ffffcf", (0x800, 0x800, 0x800, 0x800), ext.ProButton(0), 4, False, False),
    # Left stick full right (0xC00) and up (0xC00); B and ZL; L3; battery 2; charging over USB.
    (
        "000c0008000c0008ff3fa1",
        (0xC00, 0xC00, 0x800, 0x800),
        ext.ProButton.B | ext.ProButton.ZL | ext.ProButton.THUMB_L,
        2,
        True,
        True,
    ),
    # Every button (all bits 0), sticks at their extremes, battery 0.
    ("ff0f0000ff0f0000000080", (0xFFF, 0xFFF, 0x000, 0x000), ext.ProButton(ext.PRO_BUTTON_MASK), 0, True, True),
]


@pytest.mark.parametrize(("hex_ext", "sticks", "buttons", "battery", "charging", "usb"), PRO_TABLE)
def test_pro_controller_byte_table(
    hex_ext: str, sticks: tuple[int, int, int, int], buttons: ext.ProButton, battery: int, charging: bool, usb: bool
) -> None:
    data = bytes.fromhex(hex_ext) + b"\x00" * 8  # 19 extension bytes of report 0x34
    pro = ext.decode_pro(data)
    assert pro == ext.ProController(sticks, buttons, battery, charging, usb)
    assert ext.decode_pro(ext.encode_pro(pro)) == pro


def test_pro_controller_rejects_short_data_and_centres_like_the_kernel() -> None:
    with pytest.raises(ProtocolError, match="10 bytes, at least 11"):
        ext.decode_pro(b"\x00" * 10)
    cal = pro_calibration_from((0x7F0, 0x810, 0x800 + 600, 0x800))
    # Within 500 counts the first reading is the centre; further off (a held stick) 0x800 stays.
    assert [axis.centre for axis in cal.axes] == [0x7F0, 0x810, 0x800, 0x800]
    assert cal.axes[0].normalize(0x7F0 + 0x400) == 1.0
    assert cal.axes[1].normalize(0x810 - 0x200) == -0.5


def test_extension_calibration_checksums() -> None:
    body = bytes.fromhex("80808000b3b3b300e02080e02080")
    nunchuk = parse_nunchuk_calibration(encode_ext_calibration(body))
    assert nunchuk.factory
    assert nunchuk.accel.zero == (512, 512, 512)
    assert nunchuk.accel.one == (716, 716, 716)
    assert (nunchuk.stick_x.minimum, nunchuk.stick_x.centre, nunchuk.stick_x.maximum) == (0x20, 0x80, 0xE0)
    assert nunchuk.stick_x.normalize(0xE0) == 1.0
    assert nunchuk.stick_x.normalize(0x20) == -1.0
    assert nunchuk.stick_x.normalize(0xFF) == 1.0  # clamped
    bad = encode_ext_calibration(body)[:15] + b"\x00"
    assert not parse_nunchuk_calibration(bad).factory
    classic = parse_classic_calibration(encode_ext_calibration(bytes.fromhex("f00880f00880f00880f008800808")))
    assert classic.factory
    assert classic.left_x.centre == 32
    assert classic.right_x.centre == 16
    assert classic.left_trigger_zero == 1
