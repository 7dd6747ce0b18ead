"""The sans-I/O connection state machine, driven by hand-written reports and a fake clock."""

from __future__ import annotations

from collections.abc import Callable

from protocols.wiimote import connection as wc
from protocols.wiimote import extensions as ext
from protocols.wiimote import reports as rp
from protocols.wiimote.calibration import NOMINAL_GYRO, AccelCalibration

EEPROM = bytes.fromhex("828282159c9c9e38403e") * 2
STATUS = bytes.fromhex("200000" + "1000" + "00c0")  # LED1, no extension, battery 0xC0


def hexes(conn: wc.WiimoteConnection) -> list[str]:
    return [report.hex() for report in conn.data_to_send()]


def ack(report: int, error: int = 0) -> bytes:
    return bytes((0x22, 0, 0, report, error))


def read_reply(address: int, data: bytes, error: int = 0) -> bytes:
    size = max(len(data), 1) - 1
    return bytes((0x21, 0, 0, size << 4 | error)) + (address & 0xFFFF).to_bytes(2, "big") + data.ljust(16, b"\x00")


def connect(conn: wc.WiimoteConnection, now: float = 0.0) -> list[wc.Event]:
    """Run the connect sequence of a remote without extension or MotionPlus; return every event."""
    conn.start(now)
    assert hexes(conn) == ["1110", "1500"]
    events = conn.receive(STATUS, now)
    assert hexes(conn) == ["170000001600" + "14"]  # both calibration blocks, 20 bytes from 0x16
    events += conn.receive(read_reply(0x16, EEPROM[:16]), now)
    assert hexes(conn) == []  # the read is not complete: nothing else goes out meanwhile
    events += conn.receive(read_reply(0x26, EEPROM[16:]), now)
    assert hexes(conn) == ["1704a600fa0006"]  # MotionPlus probe
    events += conn.receive(read_reply(0xFA, b"", error=7), now)
    # Camera on (pixel clock, logic), then its registers one write at a time, then the mode.
    assert hexes(conn) == ["1306", "1a06", "1604b00030" + "0101" + "00" * 15]
    expected_writes = [
        "1604b00000" + "09" + "020000710100aa0064" + "00" * 7,
        "1604b0001a" + "02" + "6303" + "00" * 14,
        "1604b00033" + "01" + "03" + "00" * 15,
        "1604b00030" + "01" + "08" + "00" * 15,
    ]
    for write in expected_writes:
        events += conn.receive(ack(0x13), now)  # acks of other reports change nothing
        assert hexes(conn) == []
        events += conn.receive(ack(0x16), now)
        assert hexes(conn) == [write]
    events += conn.receive(ack(0x16), now)
    assert hexes(conn) == ["120433"]
    return events


def test_connect_sequence() -> None:
    conn = wc.WiimoteConnection()
    events = connect(conn)
    assert events[0] == wc.StatusUpdate(0xC0, False, 0b0001, False)
    ready = [e for e in events if isinstance(e, wc.Ready)]
    assert ready == [wc.Ready(AccelCalibration((521, 521, 521), (627, 626, 632), True), 0x33)]
    assert conn.ready
    assert conn.memory_errors == 1


def test_reporting_mode_is_resent_after_every_status_report() -> None:
    conn = wc.WiimoteConnection()
    connect(conn)
    for _ in range(3):
        conn.receive(STATUS, 1.0)
        assert hexes(conn) == ["120433"]


def test_samples_after_ready() -> None:
    conn = wc.WiimoteConnection()
    connect(conn)
    [sample] = conn.receive(bytes.fromhex("33" + "0008" + "828282" + "388053") + b"\xff" * 9, 0.5)
    assert isinstance(sample, wc.Sample)
    assert sample.buttons == rp.Button.A
    assert sample.accel == (520, 520, 520)
    assert sample.ir is not None
    assert sample.ir[0] is not None
    assert sample.ir[0].size == 3
    assert sample.ir[1:] == (None, None, None)


def test_status_polls_and_liveness_with_a_fake_clock() -> None:
    conn = wc.WiimoteConnection(wc.ConnectionSettings(status_interval_s=2.0, timeout_s=3.0))
    connect(conn)
    assert conn.next_deadline() == 2.0
    assert conn.poll(1.9) == []
    assert hexes(conn) == []
    conn.poll(2.0)
    assert hexes(conn)[0] == "1500"
    conn.receive(STATUS, 2.1)
    hexes(conn)
    assert not any(isinstance(e, wc.Lost) for e in conn.poll(5.0))
    [lost] = [e for e in conn.poll(5.25) if isinstance(e, wc.Lost)]
    assert lost.silence_s >= 3.0
    assert not any(isinstance(e, wc.Lost) for e in conn.poll(5.5))  # reported once


def test_memory_operations_time_out_one_at_a_time() -> None:
    conn = wc.WiimoteConnection(wc.ConnectionSettings(memory_timeout_s=1.0, motionplus=False, ir=False))
    conn.start(0.0)
    hexes(conn)
    conn.receive(STATUS, 0.0)
    assert hexes(conn) == ["17000000160014"]
    conn.poll(0.99)
    assert hexes(conn) == []
    events = conn.poll(1.0)
    # The calibration read timed out: default calibration, and the mode goes out (0x31: no IR).
    assert hexes(conn) == ["120431"]
    assert next(e for e in events if isinstance(e, wc.Ready)).calibration.factory is False
    assert conn.memory_errors == 1
    # A late reply to the abandoned read is ignored.
    conn.receive(read_reply(0x16, EEPROM[:16]), 1.1)
    assert conn.malformed == 0


def test_outputs_carry_rumble_in_every_report() -> None:
    conn = wc.WiimoteConnection(wc.ConnectionSettings(ir=False, motionplus=False))
    conn.start(0.0)
    hexes(conn)
    conn.set_outputs(0b0011, True)
    assert hexes(conn) == ["1131"]
    conn.set_outputs(0b0011, True)
    assert hexes(conn) == []  # unchanged: nothing to send
    conn.receive(STATUS, 0.0)
    assert hexes(conn) == ["17010000160014"]


def test_malformed_reports_are_counted_and_ignored() -> None:
    conn = wc.WiimoteConnection()
    connect(conn)
    events = conn.receive(b"\x99\x00", 0.1) + conn.receive(b"\x20\x00", 0.1) + conn.receive(b"", 0.1)
    assert [type(e) for e in events] == [wc.Malformed] * 3
    assert conn.malformed == 3
    [sample] = conn.receive(bytes.fromhex("33" + "0000" + "828282") + b"\xff" * 12, 0.2)
    assert isinstance(sample, wc.Sample)


def test_chosen_report_modes() -> None:
    settings = [
        (wc.ConnectionSettings(ir=False), "120431"),
        (wc.ConnectionSettings(report_mode=0x30), "120430"),
        (wc.ConnectionSettings(report_mode=0x3D, continuous=False), "12003d"),
    ]
    for setting, expected in settings:
        conn = wc.WiimoteConnection(setting)
        conn.start(0.0)
        hexes(conn)
        conn.receive(STATUS, 0.0)
        conn.receive(read_reply(0x16, EEPROM[:16]), 0.0)
        conn.receive(read_reply(0x26, EEPROM[16:]), 0.0)
        conn.receive(read_reply(0xFA, b"", error=7), 0.0)
        assert hexes(conn)[-1] == expected


# ---------------------------------------------------------------- cases real hardware hits (issue 14)

# Unit 1 of the two real MotionPlus calibration blocks (see test_wiimote_codec.REAL_GYRO_CAL).
REAL_GYRO_CAL = bytes.fromhex("7983735472e830c3cc4a34fcc84fcc5b774975a4739a3552ca2237262de5b5a2")
# The junk frame a real MotionPlus sends after activation (Dolphin's maintainers, from hardware).
JUNK = bytes.fromhex("d5b04e6efc02")
REST_GYRO = ext.encode_motionplus(ext.MotionPlus(7634, 7529, 7398, True, True, True, False))
STATUS_EXT = bytes.fromhex("200000" + "1200" + "00c0")  # LED1, extension flag


def mode37(ext_bytes: bytes, buttons: str = "0000") -> bytes:
    return bytes.fromhex("37" + buttons + "828282") + b"\xff" * 10 + ext_bytes


class Remote:
    """Answers the connection's reads from a register map, acks its writes; `after_write` reacts."""

    def __init__(self, conn: wc.WiimoteConnection, registers: dict[int, bytes]) -> None:
        self.conn = conn
        self.registers = registers
        self.sent: list[rp.OutputReport] = []
        self.after_write: dict[int, Callable[[], list[bytes]]] = {}

    def serve(self, now: float = 0.0) -> list[wc.Event]:
        events: list[wc.Event] = []
        while outputs := self.conn.data_to_send():
            for raw in outputs:
                report = rp.decode_output(raw)
                self.sent.append(report)
                for answer in self._answer(report):
                    events += self.conn.receive(answer, now)
        return events

    def _answer(self, report: rp.OutputReport) -> list[bytes]:
        if report.report == rp.Out.STATUS_REQUEST:
            return [STATUS_EXT if self.registers.get(ext.EXT_ID_ADDRESS) else STATUS]
        if report.report in (rp.Out.IR_PIXEL_CLOCK, rp.Out.IR_LOGIC):
            return [ack(report.report)]
        if report.report == rp.Out.WRITE_MEMORY:
            follow = self.after_write.pop(report.address, list)
            return [ack(rp.Out.WRITE_MEMORY), *follow()]
        if report.report != rp.Out.READ_MEMORY:
            return []
        key = 0x0016 if report.space == rp.Space.EEPROM else report.address
        data = self.registers.get(key)
        if data is None:
            return [read_reply(report.address, b"", error=7)]
        data = data[: report.size]
        return [read_reply(report.address + i, data[i : i + 16]) for i in range(0, len(data), 16)]

    def reads(self) -> list[int]:
        return [r.address for r in self.sent if r.report == rp.Out.READ_MEMORY]

    def writes(self) -> list[tuple[int, bytes]]:
        return [(r.address, r.data) for r in self.sent if r.report == rp.Out.WRITE_MEMORY]


def motionplus_remote(conn: wc.WiimoteConnection, calibration: bytes = REAL_GYRO_CAL) -> Remote:
    """A remote with an inactive MotionPlus that activates alone (0x04) as a real one does."""
    remote = Remote(conn, {0x0016: EEPROM, ext.MP_ID_ADDRESS: ext.MP_INACTIVE_ID, 0xA60020: calibration})

    def activate() -> list[bytes]:
        del remote.registers[ext.MP_ID_ADDRESS]
        remote.registers[ext.EXT_ID_ADDRESS] = ext.IDS[ext.ExtensionType.MOTIONPLUS]
        return [STATUS, STATUS_EXT]  # the port reads empty, then the active MotionPlus

    remote.after_write[ext.MP_ACTIVATE_ADDRESS] = activate
    return remote


def connect_motionplus(calibration: bytes = REAL_GYRO_CAL) -> tuple[wc.WiimoteConnection, Remote, list[wc.Event]]:
    conn = wc.WiimoteConnection()
    remote = motionplus_remote(conn, calibration)
    conn.start(0.0)
    events = remote.serve()
    assert conn.extension == ext.ExtensionType.MOTIONPLUS
    assert conn.mode == 0x37
    return conn, remote, events


def test_gyro_calibration_is_read_before_activation() -> None:
    conn, remote, events = connect_motionplus()
    # The probe finds the inactive MotionPlus, then its 32 calibration bytes are read at 0xA60020
    # (two 16-byte replies), and only then is it initialised and activated.
    assert remote.reads()[:3] == [0x0016, ext.MP_ID_ADDRESS, 0xA60020]
    assert [r.size for r in remote.sent if r.report == rp.Out.READ_MEMORY][2] == 32
    assert remote.writes()[:2] == [(0xA600F0, b"\x55"), (0xA600FE, b"\x04")]
    [read] = [e for e in events if isinstance(e, wc.GyroCalibrationRead)]
    assert read.reason == ""
    assert read.calibration.factory
    assert conn.gyro_calibration.slow.zero == (0x7749 / 4, 0x75A4 / 4, 0x739A / 4)


def test_a_bad_gyro_calibration_crc_falls_back_to_nominal_with_a_reason() -> None:
    broken = REAL_GYRO_CAL[:30] + b"\x00\x00"
    conn, _, events = connect_motionplus(broken)
    [read] = [e for e in events if isinstance(e, wc.GyroCalibrationRead)]
    assert read.calibration == NOMINAL_GYRO
    assert "CRC 0xcc5b0000 != computed 0xcc5bb5a2" in read.reason
    assert "nominal scale" in read.reason
    assert conn.gyro_calibration == NOMINAL_GYRO


def test_junk_frame_after_activation_is_dropped_not_published() -> None:
    conn, remote, _ = connect_motionplus()
    sent_before = len(remote.sent)
    [junk] = conn.receive(mode37(JUNK), 1.0)
    assert isinstance(junk, wc.Sample)
    assert junk.motionplus is None  # not decoded into wild rates
    assert conn.junk_frames == 1
    [good] = conn.receive(mode37(REST_GYRO), 1.01)
    assert isinstance(good, wc.Sample)
    assert good.motionplus is not None
    assert (good.motionplus.yaw, good.motionplus.roll, good.motionplus.pitch) == (7634, 7529, 7398)
    # Frames flagged invalid (byte 5 bit 0) and all-0xFF extension bytes are dropped too (kernel).
    flagged = REST_GYRO[:5] + bytes((REST_GYRO[5] | 0x01,))
    conn.receive(mode37(flagged), 1.02)
    conn.receive(mode37(b"\xff" * 6), 1.03)
    assert conn.junk_frames == 3
    remote.serve(1.03)
    assert len(remote.sent) == sent_before  # nothing re-initialised


def test_one_contradicting_frame_is_checked_against_the_id_before_reinitialising() -> None:
    conn, _, _ = connect_motionplus()
    conn.receive(mode37(JUNK), 1.0)
    conn.receive(mode37(REST_GYRO), 1.01)
    # A frame saying "something is plugged into the MotionPlus" while it runs alone.
    plugged = ext.encode_motionplus(ext.MotionPlus(7634, 7529, 7398, True, True, True, True))
    [sample] = conn.receive(mode37(plugged), 1.02)
    assert isinstance(sample, wc.Sample)
    assert sample.motionplus is not None
    assert not sample.motionplus.ext_connected  # the contradicting frame is not published
    assert hexes(conn) == ["1704a400fa0006"]  # the mapped ID is read again first
    conn.receive(read_reply(0xFA, ext.IDS[ext.ExtensionType.MOTIONPLUS]), 1.025)
    conn.receive(mode37(REST_GYRO), 1.03)  # ... and the next frame disagrees with the glitch
    assert conn.motionplus_glitches == 1
    assert hexes(conn) == []  # no re-initialisation
    # A real change: the contradiction persists after the ID check, so the MotionPlus is re-initialised.
    conn.receive(mode37(plugged), 1.04)
    assert hexes(conn) == ["1704a400fa0006"]
    conn.receive(read_reply(0xFA, ext.IDS[ext.ExtensionType.MOTIONPLUS]), 1.045)
    conn.receive(mode37(plugged), 1.05)
    assert hexes(conn) == ["1604a400f00155" + "00" * 15]
    assert conn.motionplus_glitches == 1


def test_pro_controller_is_set_up_as_the_kernel_does() -> None:
    conn = wc.WiimoteConnection()
    remote = Remote(conn, {ext.EXT_ID_ADDRESS: ext.IDS[ext.ExtensionType.PRO_CONTROLLER]})
    conn.start(0.0)
    events = remote.serve()
    # Extension init and ID first; then no EEPROM calibration, no MotionPlus probe, no IR camera.
    assert remote.writes() == [(0xA400F0, b"\x55"), (0xA400FB, b"\x00")]
    assert remote.reads() == [ext.EXT_ID_ADDRESS]
    assert [r.report for r in remote.sent] == [0x11, 0x15, 0x16, 0x16, 0x17, 0x12]
    assert conn.pro_controller
    assert [e.mode for e in events if isinstance(e, wc.Ready)] == [0x34]
    assert remote.sent[-1].mode == 0x34
    # Its data: core buttons carry nothing; the 11 extension bytes are the controller.
    pro_bytes = bytes.fromhex("f0070f0800080008ffefcf")  # A pressed, left stick at rest
    [sample] = conn.receive(bytes.fromhex("34" + "6009") + pro_bytes + b"\x00" * 8, 0.5)
    assert isinstance(sample, wc.Sample)
    assert sample.pro == ext.ProController((0x7F0, 0x800, 0x80F, 0x800), ext.ProButton.A, 4, False, False)
    assert conn.pro_calibration is not None
    assert conn.pro_calibration.axes[0].centre == 0x7F0  # the first report's sticks are the centres
    conn.poll(2.0)
    assert hexes(conn) == ["1500"]  # the status poll probes no MotionPlus


def test_longer_and_buttons_only_reports_are_used_and_counted() -> None:
    conn = wc.WiimoteConnection()
    connect(conn)
    [sample] = conn.receive(bytes.fromhex("33" + "0008" + "828282") + b"\xff" * 12 + b"\x01\x02", 0.5)
    assert isinstance(sample, wc.Sample)
    assert sample.accel == (520, 520, 520)
    assert (conn.oversized, conn.ignored_bytes, conn.malformed) == (1, 2, 0)
    # A 2-byte 0x33: new buttons, the other fields as they were (the kernel only reports the keys).
    [short] = conn.receive(bytes.fromhex("33" + "0400"), 0.51)
    assert isinstance(short, wc.Sample)
    assert short.buttons == rp.Button.DOWN
    assert short.accel == (520, 520, 520)
    assert conn.buttons_only == 1
    # A 2-byte status report still resets the reporting mode, which goes out again.
    conn.receive(bytes.fromhex("20" + "0000"), 0.52)
    assert hexes(conn) == ["120433"]
    assert conn.malformed == 0
