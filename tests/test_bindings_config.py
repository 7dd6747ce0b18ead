"""`[bindings.<name>]` is checked at load against the devices' schemas: each mistake refused, named by its key path.

An unknown device, input path, stream, field or command, an option out of its range, a mode's
missing input, a missing deadman, and a loop where a binding's output feeds its own source: each
is refused by `gateway.config.loads` (the daemon and `hwgateway check-config`), all in one pass.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.bindings.spec import parse_bindings_section
from gateway.config import loads
from gateway.errors import ConfigError

DEVICES = """
[devices.pad]
kind = "sim"

[devices.pad-2]
kind = "sim"

[devices.thymio]
kind = "aseba"
simulate = true
"""

DRIVE = """
[bindings.drive]
source = "pad"
target = "thymio"
mode = "arcade"
deadman = "state.buttons.l1"
inputs.throttle = { path = "state.axes.left_y", deadzone = 0.1, expo = 0.3 }
inputs.steer = { path = "state.axes.left_x", deadzone = 0.1, scale = 0.6 }
outputs.left = { command = "hwgateway/ThymioMotors", field = "left" }
outputs.right = { command = "hwgateway/ThymioMotors", field = "right" }
"""


def _errors(text: str) -> dict[str, str]:
    """Every problem of a config, by key path (several at one path joined with "; ")."""
    with pytest.raises(ConfigError) as caught:
        loads(DEVICES + textwrap.dedent(text))
    errors: dict[str, str] = {}
    for problem in caught.value.errors:
        errors[problem.path] = (
            f"{errors[problem.path]}; {problem.message}" if problem.path in errors else problem.message
        )
    return errors


def _drive(old: str, new: str) -> str:
    assert old in DRIVE
    return DRIVE.replace(old, new)


def test_a_good_binding_loads_with_its_paths_and_fields_resolved() -> None:
    config = loads(DEVICES + DRIVE)
    (drive,) = config.bindings.bindings
    assert (drive.source, drive.target, drive.mix.mode, drive.rate_hz, drive.timeout_s) == (
        "pad",
        "thymio",
        "arcade",
        50.0,
        0.5,
    )
    assert drive.deadman is not None
    assert drive.deadman.steps == ("buttons", 4)
    assert [(o.command, o.field, o.full_scale, o.minimum, o.maximum) for o in drive.outputs] == [
        ("hwgateway/ThymioMotors", "left", 500.0, -500.0, 500.0),
        ("hwgateway/ThymioMotors", "right", 500.0, -500.0, 500.0),
    ]


def test_a_priority_per_target_loads_for_the_devices_the_binding_drives() -> None:
    text = _drive('mode = "arcade"', 'mode = "arcade"\npriority = 120\ntarget_priority = { thymio = 20, pad-2 = 200 }')
    text += (
        '\n[[bindings.drive.actions]]\ninput = "state.buttons.cross"\non = "press"\ndevice = "pad-2"\ncommand = "led"\n'
    )
    text += "args = { rgb = [0.0, 1.0, 0.0] }\n"
    (drive,) = loads(DEVICES + text).bindings.bindings
    assert (drive.priority, drive.target_priority) == (120, (("thymio", 20), ("pad-2", 200)))


@pytest.mark.parametrize(
    ("text", "path", "fragment"),
    [
        (_drive('source = "pad"', 'source = "pda"'), "bindings.drive.source", "unknown device 'pda'"),
        (_drive('source = "pad"', 'source = ""'), "bindings.drive.source", "must name a device"),
        (_drive('source = "pad"', 'source = "pad one"'), "bindings.drive.source", "not a device id or glob"),
        (_drive('target = "thymio"', 'target = "thymo"'), "bindings.drive.target", "unknown device 'thymo'"),
        (_drive('"state.axes.left_y"', '"stat.axes.left_y"'), "bindings.drive.inputs.throttle", "no stream 'stat'"),
        (_drive('"state.axes.left_y"', '"state.axez[1]"'), "bindings.drive.inputs.throttle", "no field 'axez'"),
        (_drive('"state.axes.left_y"', '"state.axes.left_z"'), "bindings.drive.inputs.throttle.path", "not a axes"),
        (_drive('"state.axes.left_y"', '"state.axes[64]"'), "bindings.drive.inputs.throttle", "at most 64"),
        (_drive('"state.buttons.l1"', '"state.timestamp"'), "bindings.drive.deadman", "not a number"),
        (_drive('field = "left"', 'field = "lft"'), "bindings.drive.outputs.left.field", "no field 'lft'"),
        (
            _drive('command = "hwgateway/ThymioMotors", field = "left"', 'command = "ThymioMotors", field = "left"'),
            "bindings.drive.outputs.left.command",
            "unknown command type",
        ),
        (_drive("deadzone = 0.1, expo", "deadzone = 1.2, expo"), "bindings.drive.inputs.throttle.deadzone", "outside"),
        (_drive("expo = 0.3", "expo = 2"), "bindings.drive.inputs.throttle.expo", "outside"),
        (
            _drive('field = "left" }', 'field = "left", max = 900 }'),
            "bindings.drive.outputs.left.max",
            "outside (0, 500]",
        ),
        (_drive('field = "left" }', 'field = "left", safe = -600 }'), "bindings.drive.outputs.left.safe", "outside"),
        (_drive('mode = "arcade"', 'mode = "arcade"\nrate_hz = 0'), "bindings.drive.rate_hz", "outside"),
        (
            _drive(
                'command = "hwgateway/ThymioMotors", field = "left"',
                'command = "thymio_msgs/Sound", field = "frequency"',
            ),
            "bindings.drive.outputs.left.max",
            "declares no range",
        ),
        (
            _drive(
                'command = "hwgateway/ThymioMotors", field = "left"',
                'command = "hwgateway/LegoMotorPosition", field = "end_state"',
            ),
            "bindings.drive.outputs.left.field",
            "takes only the values",
        ),
        (_drive('mode = "arcade"', 'mode = "arcade"\npriority = 300'), "bindings.drive.priority", "outside"),
        (_drive('mode = "arcade"', 'mode = "arcade"\ntimeout_s = 0'), "bindings.drive.timeout_s", "outside"),
        (_drive('mode = "arcade"', 'mode = "arcade"\nspeed = 3'), "bindings.drive.speed", "unknown key"),
        (_drive("scale = 0.6", "scale = nan"), "bindings.drive.inputs.steer.scale", "finite"),
        (_drive('mode = "arcade"', 'mode = "arcade"\nrate_hz = nan'), "bindings.drive.rate_hz", "finite"),
        (_drive('mode = "arcade"', 'mode = "joystick"'), "bindings.drive.mode", "expected one of"),
        (_drive('deadman = "state.buttons.l1"\n', ""), "bindings.drive.deadman", 'or "none"'),
        (_drive('mode = "arcade"', 'mode = "tank"'), "bindings.drive.inputs.throttle", "only left, right"),
        (_drive("scale = 0.6", "scale = 0.6, turbo_scale = 1"), "bindings.drive.inputs.steer.turbo_scale", "turbo"),
        (
            _drive("deadzone = 0.1, expo", 'deadzone = 0.1, deadzone_shape = "radial", expo'),
            "bindings.drive.inputs.throttle.pair",
            "the stick's other input",
        ),
        (
            _drive("expo = 0.3", "curve = [[0, 0.1], [1, 1]]"),
            "bindings.drive.inputs.throttle.curve",
            "the first [0, 0]",
        ),
        (
            _drive("expo = 0.3", "curve = [[0, 0], [0.5, 0.2], [0.4, 1]]"),
            "bindings.drive.inputs.throttle.curve",
            "increase strictly",
        ),
        (
            _drive("expo = 0.3", "expo = 0.3, curve = [[0, 0], [1, 1]]"),
            "bindings.drive.inputs.throttle.curve",
            "not both",
        ),
        (
            _drive('target = "thymio"', 'target = "pad-2"'),
            "bindings.drive.outputs.left.command",
            "pad-2 does not accept 'hwgateway/ThymioMotors'",
        ),
        (
            _drive('mode = "arcade"', 'mode = "arcade"\ntarget_priority = { thymo = 120 }'),
            "bindings.drive.target_priority.thymo",
            "not a device the binding drives ('thymio')",
        ),
        (
            _drive('mode = "arcade"', 'mode = "arcade"\ntarget_priority = { thymio = 256 }'),
            "bindings.drive.target_priority.thymio",
            "outside [0, 255]",
        ),
        (
            _drive('mode = "arcade"', 'mode = "arcade"\ntarget_priority = { thymio = "high" }'),
            "bindings.drive.target_priority.thymio",
            "expected an integer",
        ),
        (
            _drive('mode = "arcade"', 'mode = "arcade"\ntarget_priority = 120'),
            "bindings.drive.target_priority",
            "expected a table",
        ),
    ],
)
def test_each_mistake_is_refused_and_named_by_its_key_path(text: str, path: str, fragment: str) -> None:
    errors = _errors(text)
    assert path in errors, errors
    assert fragment in errors[path]


def test_a_binding_whose_output_feeds_its_own_source_is_refused() -> None:
    # The pad drives the Thymio; the Thymio's wheel speed drives the pad's rumble: pad -> thymio -> pad.
    errors = _errors(
        DRIVE
        + """
        [bindings.feedback]
        source = "thymio"
        target = "pad*"
        mode = "direct"
        deadman = "none"
        inputs.low = { path = "node/1/state.motor_left_speed", scale = 0.002 }
        outputs.low = { command = "rumble", field = "low" }

        [bindings.self]
        source = "pad-2"
        target = "pad-2"
        mode = "direct"
        deadman = "none"
        inputs.high = "state.axes.right_trigger"
        outputs.high = { command = "rumble", field = "high" }
        """
    )
    assert errors["bindings.drive.target"] == "its output feeds its own source: pad -> thymio -> pad"
    assert errors["bindings.feedback.target"] == "its output feeds its own source: thymio -> pad -> thymio"
    assert errors["bindings.self.target"] == "its output feeds its own source: pad-2 -> pad-2"


def test_a_disabled_binding_makes_no_loop_and_an_action_back_to_the_source_is_none() -> None:
    config = loads(
        DEVICES
        + DRIVE
        + """
        [[bindings.drive.actions]]
        input = "state.buttons.cross"
        on = "press"
        device = "pad"
        command = "rumble"
        args = { low = 1.0, high = 0.0, duration_s = 0.2 }

        [bindings.feedback]
        enabled = false
        source = "thymio"
        target = "pad"
        mode = "direct"
        deadman = "none"
        inputs.low = "node/1/state.motor_left_speed"
        outputs.low = { command = "rumble", field = "low" }
        """.replace("\n        ", "\n")
    )
    assert [b.name for b in config.bindings.bindings] == ["drive", "feedback"]


def test_actions_sets_and_their_mistakes() -> None:
    good = loads(
        DEVICES
        + DRIVE
        + textwrap.dedent(
            """
            set = "slow"

            [[bindings.drive.actions]]
            input = "state.buttons.triangle"
            on = "double"
            switch_set = "fast"

            [bindings.fast]
            set = "fast"
            source = "pad"
            target = "thymio"
            mode = "tank"
            deadman = "none"
            inputs = { left = "state.axes.left_y", right = "state.axes.right_y" }
            outputs.left = { command = "hwgateway/ThymioMotors", field = "left" }
            outputs.right = { command = "hwgateway/ThymioMotors", field = "right" }

            [bindings.lights]
            source = "pad*"
            target = "pad"
            mode = "none"

            [[bindings.lights.actions]]
            input = "state.buttons.circle"
            on = "toggle"
            command = "led"
            args = { rgb = [1, 0, 0] }
            off_args = { rgb = [0, 0, 0] }
            """
        )
    )
    assert good.bindings.sets() == ("slow", "fast")
    assert good.bindings.initial_set == "slow"
    errors = _errors(
        DRIVE
        + """
        [[bindings.drive.actions]]
        input = "state.buttons.circle"
        on = "tap"
        command = "led"

        [[bindings.drive.actions]]
        input = "state.buttons.circle"
        on = "press"
        switch_set = "turbo"

        [[bindings.drive.actions]]
        input = "state.buttons.circle"
        on = "press"
        command = "led"
        args = { rgb = [2, 0, 0] }

        [[bindings.drive.actions]]
        input = "state.buttons.nope"
        on = "press"
        command = "rumble"
        switch_set = "x"

        [[bindings.drive.actions]]
        input = "state.buttons.cross"
        on = "press"
        command = "hwgateway/GamepadPlayerIndex"

        [[bindings.drive.actions]]
        input = "state.buttons.cross"
        on = "press"
        device = "pad-3"
        command = "rumble"

        [[bindings.drive.actions]]
        input = "state.buttons.cross"
        on = "release"
        device = "pad*"
        command = "rumble"

        [bindings.lights]
        source = "pad"
        mode = "none"

        [[bindings.lights.actions]]
        input = "state.buttons.cross"
        on = "press"
        command = "led"
        """
    )
    assert "expected one of" in errors["bindings.drive.actions[0].on"]
    assert "no binding is in set 'turbo'" in errors["bindings.drive.actions[1].switch_set"]
    assert "rgb" in errors["bindings.drive.actions[2].args"]
    assert errors["bindings.drive.actions[3]"] == "set exactly one of command and switch_set"
    assert "not a buttons name" in errors["bindings.drive.actions[3].input"]
    assert "thymio does not accept 'hwgateway/GamepadPlayerIndex'" in errors["bindings.drive.actions[4].command"]
    assert "unknown device 'pad-3'" in errors["bindings.drive.actions[5].device"]
    assert "bindings.drive.actions[6].command" not in errors  # a rumble to the pads, not to the Thymio
    assert errors["bindings.lights.actions[0].device"] == "required: the binding has no target"
    assert "no binding is in set" in _errors(DRIVE + "\n[bindings]\ninitial_set = 'x'\n")["bindings.initial_set"]


def test_a_glob_may_name_devices_that_appear_at_run_time_but_is_checked_against_those_configured() -> None:
    assert loads(DEVICES + _drive('source = "pad"', 'source = "mqtt-*"')).bindings.bindings[0].source == "mqtt-*"
    errors = _errors(_drive('"state.axes.left_y"', '"state.axes.lefty"').replace('source = "pad"', 'source = "pad*"'))
    assert "not a axes name" in errors["bindings.drive.inputs.throttle.path"]
    errors = _errors(_drive('"state.axes.left_y"', '"outputs.leds[0]"').replace('source = "pad"', 'source = "pad*"'))
    assert "not a number" in errors["bindings.drive.inputs.throttle"]


def test_check_config_reports_every_binding_mistake_in_one_pass(tmp_path: Path) -> None:
    bad = DEVICES + _drive('"state.axes.left_y"', '"state.axes[1]x"').replace(
        'field = "right"', 'field = "rite"'
    ).replace('source = "pad"', 'source = "pda"').replace("expo = 0.3", "expo = 3")
    path = tmp_path / "bad.toml"
    path.write_text(bad)
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "check-config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == "hwgateway: 4 configuration errors:", done.stderr
    named = sorted(line.split(":")[0].strip() for line in lines[1:])
    assert named == [
        "bindings.drive.inputs.throttle.expo",
        "bindings.drive.inputs.throttle.path",
        "bindings.drive.outputs.right.field",
        "bindings.drive.source",
    ]


KEYS = [
    *("source", "target", "mode", "deadman", "turbo", "rate_hz", "timeout_s", "priority", "set", "enabled"),
    *("inputs", "outputs", "slew", "actions", "path", "deadzone", "deadzone_shape", "pair", "expo", "curve"),
    *("invert", "scale", "turbo_scale", "command", "field", "args", "off_args", "max", "safe", "input", "on"),
    *("throttle", "steer", "left", "right", "up_per_s", "down_per_s", "switch_set", "initial_set", "device"),
]
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.sampled_from(["arcade", "tank", "direct", "none", "radial", "press", "state.axes.left_y", "led", "none"]),
    st.sampled_from(["hwgateway/ThymioMotors", "left", "right", "rumble", "low", "pad*", "state.buttons.l1"]),
    st.text(max_size=12),
)
TABLES = st.recursive(
    VALUES,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner, max_size=8)
    ),
    max_leaves=20,
)


@settings(max_examples=60, deadline=None, database=None)
@given(st.dictionaries(st.sampled_from(["drive", "initial_set", "a b"]), TABLES, max_size=3))
def test_any_bindings_table_is_answered_with_named_errors_never_a_crash(table: dict[str, object]) -> None:
    section, problems = parse_bindings_section(table)
    assert all(problem.path.startswith("bindings") for problem in problems)
    if not problems:
        assert all(binding.name in table for binding in section.bindings)


def test_every_example_of_docs_bindings_md_loads() -> None:
    text = (Path(__file__).resolve().parent.parent / "docs" / "bindings.md").read_text()
    blocks = text.split("```toml\n")[1:]
    assert len(blocks) == 4  # one per mode
    modes = []
    for block in blocks:
        config = loads(block.split("```")[0])
        modes += [binding.mix.mode for binding in config.bindings.bindings]
    assert sorted(set(modes)) == ["arcade", "direct", "none", "tank"]


def test_every_declared_stream_carries_a_registered_type_the_kind_publishes() -> None:
    from devices.registry import KINDS
    from gateway.messages import REGISTRY

    declaring = []
    for kind in KINDS.kinds():
        adapter = KINDS.adapter_class(kind)
        for stream, message_type in adapter.streams.items():
            if message_type:  # "": the type is known only at run time
                assert message_type in REGISTRY, (kind, stream)
                assert message_type in adapter.publishes, (kind, stream, message_type)
        if adapter.streams:
            declaring.append(kind)
    assert declaring == ["aseba", "gamepad", "lego_hub", "microbit", "sim", "wiimote"]
