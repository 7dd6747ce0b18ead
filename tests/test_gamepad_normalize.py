"""Gamepad pieces without SDL: normalization to ControllerState, long presses, mapping files, selectors, options."""

from __future__ import annotations

import pytest

from devices.gamepad.adapter import GamepadOptions
from devices.gamepad.mappings import MappingFileError, parse_mappings, read_mapping_file
from devices.gamepad.model import PadInfo, Selector, demo_motion, guid_matches
from devices.gamepad.normalize import (
    BUTTONS,
    LongPressTracker,
    Normalizer,
    RawPad,
    Settings,
    TriggerLatch,
    normalize_axes,
    stick,
    trigger,
)
from gateway.config import loads
from gateway.errors import ConfigError
from gateway.messages.gamepad import PAD_BUTTON_NAMES

# SDL GameController button index -> position in the seed's button list, written out independently.
SDL_BUTTON_TO_SEED = {
    0: 0,  # A (south) -> ✕
    1: 1,  # B (east) -> ◯
    2: 3,  # X (west) -> □
    3: 2,  # Y (north) -> △
    4: 8,  # BACK -> Share
    5: 10,  # GUIDE -> PS
    6: 9,  # START -> Options
    7: 11,  # LEFTSTICK -> L3
    8: 12,  # RIGHTSTICK -> R3
    9: 4,  # LEFTSHOULDER -> L1
    10: 5,  # RIGHTSHOULDER -> R1
    11: 14,  # DPAD_UP
    12: 16,  # DPAD_DOWN
    13: 13,  # DPAD_LEFT
    14: 15,  # DPAD_RIGHT
}


def raw(axes: dict[int, int] | None = None, buttons: set[int] | frozenset[int] = frozenset()) -> RawPad:
    values = [0] * 6
    for axis, value in (axes or {}).items():
        values[axis] = value
    return RawPad(tuple(values), tuple(index in buttons for index in range(15)))


def test_seed_has_17_buttons_in_its_order() -> None:
    assert BUTTONS == 17
    assert PAD_BUTTON_NAMES == (
        "✕", "◯", "△", "□", "L1", "R1", "L2", "R2", "Share", "Options", "PS", "L3", "R3",
        "D-pad left", "D-pad up", "D-pad right", "D-pad down",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("value", "flip", "expected"),
    [
        (0, False, 0.0),
        (32767, False, 1.0),
        (-32768, False, -1.0),  # one step beyond -32767 is clamped
        (16384, False, 16384 / 32767),
        (-16384, False, -16384 / 32767),
        (-32768, True, 1.0),  # SDL's Y: up is negative; the seed's: up is +1
        (32767, True, -1.0),
        (8192, True, -8192 / 32767),
    ],
)
def test_stick_scaling_and_y_flip(value: int, flip: bool, expected: float) -> None:
    assert stick(value, 0.0, flip) == expected


def test_centred_flipped_axis_is_positive_zero() -> None:
    assert str(stick(0, 0.0, flip=True)) == "0.0"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, 0.0),
        (3276, 0.0),  # 0.09998 of full scale: inside a 0.1 dead zone
        (-3276, 0.0),
        (32767, 1.0),  # extremes stay at ±1
        (-32768, -1.0),
        (16384, (16384 / 32767 - 0.1) / 0.9),  # the rest of the travel is stretched to [0, 1]
        (-16384, -(16384 / 32767 - 0.1) / 0.9),
    ],
)
def test_dead_zone(value: int, expected: float) -> None:
    assert stick(value, 0.1) == pytest.approx(expected, abs=1e-12)


def test_triggers_in_0_to_1() -> None:
    assert trigger(0) == 0.0
    assert trigger(32767) == 1.0
    assert trigger(16383) == 16383 / 32767
    assert trigger(-5) == 0.0


def test_axes_in_seed_order() -> None:
    axes = normalize_axes(raw({0: 32767, 1: -32768, 2: -16384, 3: 16384, 4: 32767, 5: 8192}), 0.0)
    assert axes == (1.0, 1.0, -16384 / 32767, -16384 / 32767, 1.0, 8192 / 32767)


@pytest.mark.parametrize(("sdl_button", "seed_index"), sorted(SDL_BUTTON_TO_SEED.items()))
def test_each_sdl_button_lands_in_its_seed_position(sdl_button: int, seed_index: int) -> None:
    _, buttons = Normalizer(Settings()).update(raw(buttons={sdl_button}), now=0.0)
    assert buttons == tuple(1 if index == seed_index else 0 for index in range(17))


def test_triggers_press_l2_and_r2_through_threshold_with_hysteresis() -> None:
    normalizer = Normalizer(Settings(trigger_threshold=0.5, trigger_hysteresis=0.1))

    def l2_r2(left: int, right: int) -> tuple[int, int]:
        _, buttons = normalizer.update(raw({4: left, 5: right}), now=0.0)
        return buttons[6], buttons[7]

    assert l2_r2(16000, 0) == (0, 0)  # 0.488: below the threshold
    assert l2_r2(16384, 32767) == (1, 1)  # 0.50002 and 1.0
    assert l2_r2(14000, 32767) == (1, 1)  # 0.427: still held, above 0.5 - 0.1
    assert l2_r2(13000, 0) == (0, 0)  # 0.397: released
    assert l2_r2(16000, 0) == (0, 0)  # back to 0.488: not pressed again until 0.5


def test_trigger_latch_on_exact_threshold() -> None:
    latch = TriggerLatch(0.5, 0.05)
    assert latch.update(0.5) is True
    assert latch.update(0.45) is True
    assert latch.update(0.4499) is False


def test_long_press_after_configured_time_with_injected_clock() -> None:
    # Binary-exact times, so the comparison at the boundary is exact too.
    tracker = LongPressTracker(0.5, size=2)
    assert tracker.update([True, False], now=10.0) == (1, 0)
    assert tracker.next_change(10.0) == 10.5
    assert tracker.update([True, True], now=10.25) == (1, 1)
    assert tracker.update([True, True], now=10.4375) == (1, 1)
    assert tracker.update([True, True], now=10.5) == (2, 1)  # exactly long_press_s after the press
    assert tracker.next_change(10.5) == 10.75
    assert tracker.update([True, True], now=10.75) == (2, 2)
    assert tracker.next_change(10.75) is None
    assert tracker.update([False, True], now=11.0) == (0, 2)
    assert tracker.update([True, True], now=11.25) == (1, 2)  # a new press starts over


def test_normalizer_long_press_applies_to_every_button_including_triggers() -> None:
    normalizer = Normalizer(Settings(long_press_s=0.5))
    everything = raw({4: 32767, 5: 32767}, buttons=set(range(15)))
    assert normalizer.update(everything, now=1.0)[1] == (1,) * 17
    assert normalizer.next_change(1.0) == 1.5
    assert normalizer.update(everything, now=1.5)[1] == (2,) * 17
    normalizer.reset()
    assert normalizer.update(everything, now=1.75)[1] == (1,) * 17


def test_settings_refuse_inconsistent_values() -> None:
    with pytest.raises(ValueError, match="trigger_hysteresis"):
        Settings(trigger_threshold=0.1, trigger_hysteresis=0.2)
    with pytest.raises(ValueError, match="dead_zone"):
        Settings(dead_zone=1.0)


def test_raw_pad_has_fixed_sizes() -> None:
    with pytest.raises(ValueError, match="6 axes and 15 buttons"):
        RawPad((0,) * 5)


MAPPINGS = """\
# user mappings
030000004c050000cc09000011810000,PS4 Controller,a:b0,b:b1,platform:Linux,

03000000de280000ff11000001000000,Steam Virtual Gamepad,a:b0,platform:Windows,
ff000000341200007856000000007600,No Platform Pad,a:b1,leftx:a0
"""


def test_mapping_lines_for_this_platform_only() -> None:
    lines = parse_mappings(MAPPINGS, "Linux", "user.txt")
    assert [(m.line, m.guid) for m in lines] == [
        (2, "030000004c050000cc09000011810000"),
        (5, "ff000000341200007856000000007600"),  # no platform: applies everywhere
    ]
    assert lines[1].text == "ff000000341200007856000000007600,No Platform Pad,a:b1,leftx:a0"


@pytest.mark.parametrize(
    "line",
    ["not a mapping", "0300004c050000cc09000011810000,Short GUID,a:b0", "030000004c050000cc09000011810000,,a:b0"],
)
def test_mapping_line_errors_name_file_and_line(line: str) -> None:
    with pytest.raises(MappingFileError, match=r"^user\.txt:3: not a mapping"):
        parse_mappings(f"# a\n\n{line}\n", "Linux", "user.txt")


def test_unreadable_mapping_file(tmp_path) -> None:
    with pytest.raises(MappingFileError, match=r"cannot read mapping file .*missing\.txt"):
        read_mapping_file(str(tmp_path / "missing.txt"), "Linux")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(MappingFileError, match="is not UTF-8"):
        read_mapping_file(str(binary), "Linux")


def pad(**fields: object) -> PadInfo:
    values: dict[str, object] = {
        "instance_id": 7, "name": "Wireless Controller", "guid": "0500ab124c050000cc09000000810000",
        "serial": "", "path": "/dev/input/event5", "vendor_id": 0x054C, "product_id": 0x09CC, "type": "ps4",
        "rumble": True, "trigger_rumble": False, "led": True, "virtual": False,
    }  # fmt: skip
    values.update(fields)
    return PadInfo(**values)  # type: ignore[arg-type]


def test_pad_key_is_guid_plus_serial_or_path_never_an_index() -> None:
    assert pad().key == "0500ab124c050000cc09000000810000//dev/input/event5"
    assert pad(serial="a4:ae:12:00:00:01").key == "0500ab124c050000cc09000000810000/a4:ae:12:00:00:01"
    assert pad(path="").key == "0500ab124c050000cc09000000810000"


def test_guid_with_zero_crc_matches_any_name() -> None:
    device = "0500ab124c050000cc09000000810000"
    assert guid_matches(device, device)
    assert guid_matches("050000004c050000cc09000000810000", device)
    assert guid_matches("050000004C050000CC09000000810000", device)
    assert not guid_matches("0500ffff4c050000cc09000000810000", device)
    assert not guid_matches("050000004c050000cc09000011810000", device)  # another version


def test_selector_fields_must_all_match() -> None:
    assert Selector().matches(pad())
    assert Selector(name_contains="wireless").matches(pad())
    assert Selector(guid="050000004c050000cc09000000810000", path="/dev/input/event5").matches(pad())
    assert not Selector(name_contains="xbox").matches(pad())
    assert not Selector(serial="x").matches(pad())
    assert Selector(serial="x").may_match("Wireless Controller", pad().guid, "/dev/input/event5")
    assert Selector(serial="x", name_contains="pad").describe() == "a pad with serial 'x', name containing 'pad'"
    assert Selector().describe() == "any pad"


def test_demo_motion_stays_in_range_and_holds_each_button_long_enough() -> None:
    held: dict[int, float] = {}
    for step in range(0, 2000):
        t = step * 0.01
        inputs = demo_motion(t)
        assert all(-32768 <= value <= 32767 for value in inputs.axes)
        assert len(inputs.buttons) == 15
        assert sum(inputs.buttons) <= 1
        for index, down in enumerate(inputs.buttons):
            if down:
                held[index] = held.get(index, 0.0) + 0.01
    assert set(held) == set(range(15))
    assert min(held.values()) >= 0.85  # held about 0.9 s: a long press with the default 0.6 s


def test_gamepad_options_from_config() -> None:
    config = loads(
        '[devices.pad]\nkind = "gamepad"\nname_contains = "DualSense"\ndead_zone = 0.1\nlong_press_s = 1.5\n'
        'mapping_files = ["/etc/hwgateway/gamecontrollerdb.txt", "/etc/hwgateway/mine.txt"]\n'
    )
    options = config.devices[0].options
    assert isinstance(options, GamepadOptions)
    assert options.selector() == Selector(name_contains="DualSense")
    assert options.settings() == Settings(dead_zone=0.1, long_press_s=1.5)
    assert options.mapping_files == ("/etc/hwgateway/gamecontrollerdb.txt", "/etc/hwgateway/mine.txt")
    assert options.rate_hz == 20.0
    assert GamepadOptions().long_press_s == 0.6


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("dead_zone = 0.95", "devices.pad.dead_zone: 0.95 is outside [0.0, 0.9]"),
        ('guid = "xyz"', "devices.pad: guid 'xyz' is not 32 hexadecimal digits"),
        ('virtual = true\nname_contains = "x"', "devices.pad: a virtual pad is its own selector"),
        ('virtual_motion = "demo"', 'devices.pad: virtual_motion = "demo" needs virtual = true'),
        ('virtual_features = ["smell"]', "devices.pad.virtual_features[0]: expected one of 'rumble'"),
        ("trigger_threshold = 0.1\ntrigger_hysteresis = 0.2", "devices.pad: trigger_hysteresis must be"),
        ("bogus = 1", "devices.pad.bogus: unknown key"),
    ],
)
def test_gamepad_options_errors_name_their_key(table: str, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        loads(f'[devices.pad]\nkind = "gamepad"\n{table}\n')
    assert str(error.value).startswith(message)
