"""The sans-I/O connection state machine, driven by hand-written reports and a fake clock."""

from __future__ import annotations

from protocols.wiimote import connection as wc
from protocols.wiimote import reports as rp
from protocols.wiimote.calibration import AccelCalibration

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
