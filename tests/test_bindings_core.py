"""The bindings' pure core: shaping, slew, mixing, buttons and the per-tick evaluator, with hypothesis properties.

No daemon, no clock: time is a number the tests pass, so the properties hold for every schedule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gateway.bindings import mixing
from gateway.bindings.buttons import Detector
from gateway.bindings.evaluator import Evaluator, OutputDecision
from gateway.bindings.paths import parse_input_path
from gateway.bindings.shaping import InputShape, SlewLimiter, axial_deadzone, radial_deadzone, shape_input
from gateway.bindings.spec import BindingSpec, parse_bindings
from gateway.messages import REGISTRY, from_plain
from gateway.messages.creos import ControllerState

PROPERTIES = settings(max_examples=100, deadline=None, database=None)
EPS = 1e-9

unit = st.floats(-1.0, 1.0, allow_nan=False)
anything = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6)
deadzones = st.floats(0.0, 0.9, allow_nan=False)
rates = st.one_of(st.just(math.inf), st.floats(1.0, 1e5, allow_nan=False))
steps = st.floats(0.0, 0.5, allow_nan=False)


def _drive_table(**overrides: Any) -> dict[str, Any]:
    """An arcade binding of a pad driving a Thymio, as its TOML table would read."""
    table: dict[str, Any] = {
        "source": "pad",
        "target": "thymio",
        "mode": "arcade",
        "deadman": "state.buttons.l1",
        "turbo": "state.buttons.r1",
        "timeout_s": 0.3,
        "inputs": {
            "throttle": {"path": "state.axes.left_y", "deadzone": 0.1, "expo": 0.3, "scale": 0.6, "turbo_scale": 1.0},
            "steer": {"path": "state.axes.left_x", "deadzone": 0.1},
        },
        "outputs": {
            "left": {"command": "hwgateway/ThymioMotors", "field": "left"},
            "right": {"command": "hwgateway/ThymioMotors", "field": "right"},
        },
        "slew": {"up_per_s": 1500, "down_per_s": 4000},
    }
    table.update(overrides)
    return table


def _binding(**overrides: Any) -> BindingSpec:
    specs, problems = parse_bindings({"drive": _drive_table(**overrides)})
    assert problems == []
    return specs[0]


def _pad(x: float = 0.0, y: float = 0.0, deadman: bool = True, turbo: bool = False) -> dict[str, Any]:
    buttons = [0] * 17
    buttons[4], buttons[5] = int(deadman), int(turbo)
    return {"state": ControllerState(axes=(x, y, 0.0, 0.0, 0.0, 0.0), buttons=tuple(buttons))}


# -- shaping -----------------------------------------------------------------------------------


@PROPERTIES
@given(deadzones, unit, unit)
def test_the_axial_deadzone_is_continuous_with_no_jump_at_its_edge(deadzone: float, a: float, b: float) -> None:
    # Lipschitz with the rescale's slope: no jump anywhere, the edge included.
    slope = 1.0 / (1.0 - deadzone)
    assert abs(axial_deadzone(a, deadzone) - axial_deadzone(b, deadzone)) <= slope * abs(a - b) + EPS
    assert axial_deadzone(math.copysign(deadzone, a), deadzone) == 0.0
    assert abs(axial_deadzone(1.0, deadzone) - 1.0) < EPS
    assert abs(axial_deadzone(-1.0, deadzone) + 1.0) < EPS


@PROPERTIES
@given(deadzones, unit, unit)
def test_the_radial_deadzone_keeps_the_direction_and_starts_at_zero_at_its_edge(
    deadzone: float, x: float, y: float
) -> None:
    out_x, out_y = radial_deadzone(x, y, deadzone)
    length = math.hypot(x, y)
    if length <= deadzone:
        assert (out_x, out_y) == (0.0, 0.0)
        return
    expected = (min(length, 1.0) - deadzone) / (1.0 - deadzone)
    assert abs(math.hypot(out_x, out_y) - expected) < 1e-9
    assert abs(out_x * y - out_y * x) < 1e-9  # the same direction
    assert out_x * x >= 0
    assert out_y * y >= 0


@PROPERTIES
@given(deadzones, st.floats(0.0, math.pi * 2), st.floats(0.0, 1e-3))
def test_the_radial_deadzone_output_is_small_just_past_its_edge(deadzone: float, angle: float, past: float) -> None:
    x, y = (deadzone + past) * math.cos(angle), (deadzone + past) * math.sin(angle)
    assume(math.hypot(x, y) <= 1.0)
    assert math.hypot(*radial_deadzone(x, y, deadzone)) <= past / (1.0 - deadzone) + 1e-9


shapes = st.builds(
    InputShape,
    deadzone=deadzones,
    expo=st.floats(0.0, 1.0),
    invert=st.booleans(),
    scale=st.floats(0.0, 10.0),
    turbo_scale=st.one_of(st.none(), st.floats(0.0, 10.0)),
    curve=st.one_of(
        st.just(()),
        st.lists(st.tuples(st.floats(0.01, 1.0), st.floats(0.0, 1.0)), min_size=1, max_size=5)
        .map(lambda points: sorted({x: y for x, y in points}.items()))
        .map(lambda points: ((0.0, 0.0), *points)),
    ),
)


@PROPERTIES
@given(shapes, anything, st.booleans())
def test_a_shaped_input_is_bounded_and_zero_at_rest(shape: InputShape, value: float, turbo: bool) -> None:
    assert -1.0 <= shape_input(value, shape, turbo) <= 1.0
    assert shape_input(0.0, shape, turbo) == 0.0


@PROPERTIES
@given(st.floats(0.0, 1.0), deadzones, unit, unit)
def test_expo_keeps_the_order_of_inputs(amount: float, deadzone: float, a: float, b: float) -> None:
    shape = InputShape(deadzone=deadzone, expo=amount)
    low, high = sorted((a, b))
    assert shape_input(low, shape) <= shape_input(high, shape) + EPS


def test_shaping_runs_deadzone_curve_invert_then_scale_or_turbo() -> None:
    shape = InputShape(
        deadzone=0.2, curve=((0.0, 0.0), (0.5, 0.25), (1.0, 1.0)), invert=True, scale=0.5, turbo_scale=1.0
    )
    # 0.6 past a 0.2 deadzone is 0.5 of the travel, the curve makes it 0.25, inverted, halved.
    assert shape_input(0.6, shape) == pytest.approx(-0.125)
    assert shape_input(0.6, shape, turbo=True) == pytest.approx(-0.25)
    assert shape_input(-1.0, shape, turbo=True) == pytest.approx(1.0)


# -- slew ----------------------------------------------------------------------------------------


@PROPERTIES
@given(rates, rates, st.lists(st.tuples(st.floats(-600, 600), steps), min_size=1, max_size=40))
def test_the_slew_limit_is_never_exceeded(up: float, down: float, moves: list[tuple[float, float]]) -> None:
    limiter = SlewLimiter(up, down)
    for target, dt in moves:
        before = limiter.value
        after = limiter.step(target, dt)
        # Never past the target, and the time spent slowing (towards 0) and speeding up (away) fits in dt.
        assert min(before, target) - EPS <= after <= max(before, target) + EPS
        if before * after < 0:  # crossed 0
            slowing, speeding = abs(before), abs(after)
        elif abs(after) < abs(before):
            slowing, speeding = abs(before) - abs(after), 0.0
        else:
            slowing, speeding = 0.0, abs(after) - abs(before)
        assert slowing / down + speeding / up <= dt + 1e-9
        if math.isinf(up) and math.isinf(down):
            assert after == target


def test_the_slew_brakes_faster_than_it_accelerates() -> None:
    limiter = SlewLimiter(up_per_s=100.0, down_per_s=400.0)
    assert limiter.step(500.0, 0.1) == pytest.approx(10.0)
    limiter.reset(200.0)
    assert limiter.step(0.0, 0.1) == pytest.approx(160.0)
    limiter.reset(20.0)
    assert limiter.step(-500.0, 0.1) == pytest.approx(-5.0)  # 0.05 s to brake from 20, then 0.05 s at 100/s


# -- mixing ---------------------------------------------------------------------------------------


@PROPERTIES
@given(unit, unit)
def test_arcade_stays_within_full_speed_and_keeps_the_turn_ratio(throttle: float, steer: float) -> None:
    mixed = mixing.arcade(throttle, steer)
    left, right = mixed.values["left"], mixed.values["right"]
    assert abs(left) <= 1.0 + EPS
    assert abs(right) <= 1.0 + EPS
    wanted_left, wanted_right = throttle + steer, throttle - steer
    assert abs(left * wanted_right - right * wanted_left) < 1e-9  # left : right as asked
    assert mixed.saturated == (max(abs(wanted_left), abs(wanted_right)) > 1.0)
    if not mixed.saturated:
        assert (left, right) == (wanted_left, wanted_right)


def test_arcade_at_full_throttle_and_steer_spins_on_the_spot_at_full_speed_not_one_wheel() -> None:
    assert mixing.arcade(1.0, 1.0).values == {"left": 1.0, "right": 0.0}
    assert mixing.arcade(0.0, 1.0).values == {"left": 1.0, "right": -1.0}
    assert mixing.arcade(1.0, 0.5).values == pytest.approx({"left": 1.0, "right": 1.0 / 3.0})


def test_tank_and_direct_clamp_each_output() -> None:
    assert mixing.tank(0.5, -2.0).values == {"left": 0.5, "right": -1.0}
    assert mixing.direct({"a": 1.5}).saturated


# -- the evaluator ---------------------------------------------------------------------------------

samples = st.builds(_pad, unit, unit, st.just(True), st.booleans())


@st.composite
def bindings(draw: st.DrawFn) -> BindingSpec:
    """Arcade or tank bindings onto a Thymio or a LEGO motor pair, with any shaping, scale and slew."""
    shape = {
        "deadzone": draw(deadzones),
        "expo": draw(st.floats(0.0, 1.0)),
        "invert": draw(st.booleans()),
        "scale": draw(st.floats(0.0, 10.0)),
        "turbo_scale": draw(st.floats(0.0, 10.0)),
    }
    mode = draw(st.sampled_from(["arcade", "tank"]))
    names = ("throttle", "steer") if mode == "arcade" else ("left", "right")
    inputs = {names[0]: {"path": "state.axes.left_y", **shape}, names[1]: {"path": "state.axes.left_x", **shape}}
    outputs: dict[str, dict[str, Any]]
    if draw(st.booleans()):
        full = draw(st.floats(1.0, 500.0))
        outputs = {
            side: {"command": "hwgateway/ThymioMotors", "field": side, "max": full} for side in ("left", "right")
        }
    else:
        outputs = {
            side: {"command": "hwgateway/LegoMotorSpeed", "field": "speed_percent", "args": {"port": port}}
            for side, port in (("left", "A"), ("right", "B"))
        }
    slew = {"up_per_s": draw(st.floats(0.0, 5000.0)), "down_per_s": draw(st.floats(0.0, 5000.0))}
    rate_hz = draw(st.floats(1.0, 200.0))
    timeout_s = draw(st.floats(0.01, 2.0))
    return _binding(mode=mode, inputs=inputs, outputs=outputs, slew=slew, rate_hz=rate_hz, timeout_s=timeout_s)


def _check_commands_are_valid(decision: OutputDecision) -> None:
    for command in decision.commands:
        from_plain(REGISTRY[command.type].cls, dict(command.data))  # raises InvalidArgument when out of range


@PROPERTIES
@given(bindings(), st.lists(st.tuples(samples, st.floats(0.0, 0.1)), min_size=1, max_size=30))
def test_outputs_stay_within_the_fields_ranges_and_the_slew_limit(
    spec: BindingSpec, ticks: list[tuple[dict[str, Any], float]]
) -> None:
    evaluator = Evaluator(spec)
    now, previous = 0.0, {output.name: output.safe for output in spec.outputs}
    for latest, dt in ticks:
        now += dt
        decision = evaluator.output(latest, 0.0, now)
        assert not decision.safe
        _check_commands_are_valid(decision)
        for output in spec.outputs:
            value = decision.values[output.name]
            assert output.minimum <= value <= output.maximum
            before = previous[output.name]
            if before * value < 0:  # crossed 0: slowed down to it, then sped up
                slowing, speeding = abs(before), abs(value)
            elif abs(value) < abs(before):
                slowing, speeding = abs(before) - abs(value), 0.0
            else:
                slowing, speeding = 0.0, abs(value) - abs(before)
            # The step is computed in floats: a few ulps of the values, in seconds at the slew's rates.
            rounding = 4 * math.ulp(max(abs(before), abs(value))) * (1 / spec.slew.down_per_s + 1 / spec.slew.up_per_s)
            assert slowing / spec.slew.down_per_s + speeding / spec.slew.up_per_s <= dt + 1e-9 + rounding
            previous[output.name] = value


@PROPERTIES
@given(
    bindings(),
    samples,
    st.floats(0.0, 100.0),  # when the last sample came
    st.floats(0.0, 1.0),  # the phase of the output timer, as a fraction of a period
)
def test_silence_reaches_the_safe_output_within_the_timeout_and_one_period(
    spec: BindingSpec, latest: dict[str, Any], last_sample_s: float, phase: float
) -> None:
    evaluator = Evaluator(spec)
    period = spec.period_s
    tick = last_sample_s - period + phase * period  # the timer's last tick at or before the sample, any phase
    while True:
        age = tick - last_sample_s if tick >= last_sample_s else 0.0
        decision = evaluator.output(latest, age, tick)
        if decision.safe:
            break
        assert age <= spec.timeout_s  # never driving on a sample older than the timeout
        tick += period
    assert decision.reason == "timeout"
    assert tick <= last_sample_s + spec.timeout_s + period + 1e-9
    assert decision.values == {output.name: output.safe for output in spec.outputs}
    _check_commands_are_valid(decision)


@PROPERTIES
@given(bindings(), unit, unit, st.floats(0.0, 0.3), st.integers(0, 5))
def test_releasing_the_deadman_gives_the_safe_output_at_the_next_tick(
    spec: BindingSpec, x: float, y: float, dt: float, driving_ticks: int
) -> None:
    evaluator = Evaluator(spec)
    now = 0.0
    for _ in range(driving_ticks):
        evaluator.output(_pad(x, y), 0.0, now)
        now += dt
    decision = evaluator.output(_pad(x, y, deadman=False), 0.0, now)
    assert decision.safe
    assert decision.reason == "deadman released"
    assert not decision.deadman_held
    assert decision.values == {output.name: output.safe for output in spec.outputs}
    for command in decision.commands:
        assert all(value == 0 for key, value in command.data.items() if key in ("left", "right", "speed_percent"))


def test_no_sample_yet_a_missing_deadman_and_a_nan_age_are_all_safe() -> None:
    evaluator = Evaluator(_binding())
    assert evaluator.output(_pad(0, 1), None, 0.0).reason == "no sample yet"
    assert evaluator.output({}, 0.0, 0.1).reason == "deadman released"
    assert evaluator.output(_pad(0, 1), math.nan, 0.2).reason == "timeout"


def test_deadman_none_drives_while_samples_are_fresh() -> None:
    evaluator = Evaluator(_binding(deadman="none", slew={}))
    decision = evaluator.output(_pad(0.0, 1.0, deadman=False), 0.0, 0.0)
    # throttle: 0.1 deadzone leaves 1.0, expo keeps 1.0, scale 0.6 -> 300 of 500 on both wheels
    assert not decision.safe
    assert decision.values == {"left": 300.0, "right": 300.0}
    assert decision.commands[0].type == "hwgateway/ThymioMotors"
    assert decision.commands[0].data == {
        "left": 300,
        "right": 300,
    }
    assert evaluator.output(_pad(0.0, 1.0, turbo=True), 0.0, 0.02).values == {"left": 500.0, "right": 500.0}


def test_after_the_safe_output_the_outputs_ramp_up_again_from_it() -> None:
    evaluator = Evaluator(_binding(slew={"up_per_s": 1000}))
    evaluator.output(_pad(0.0, 1.0), 0.0, 0.0)
    assert evaluator.output(_pad(0.0, 1.0), 0.0, 0.1).values["left"] == pytest.approx(100.0)
    assert evaluator.output(_pad(0.0, 1.0, deadman=False), 0.0, 0.2).values["left"] == 0.0
    assert evaluator.output(_pad(0.0, 1.0), 0.0, 0.3).values["left"] == pytest.approx(100.0)


def test_outputs_of_one_command_with_different_fixed_args_are_separate_commands() -> None:
    outputs = {
        "left": {"command": "hwgateway/LegoMotorSpeed", "field": "speed_percent", "args": {"port": "A"}},
        "right": {"command": "hwgateway/LegoMotorSpeed", "field": "speed_percent", "args": {"port": "B"}},
    }
    evaluator = Evaluator(_binding(outputs=outputs, slew={}, deadman="none"))
    decision = evaluator.output(_pad(1.0, 0.0), 0.0, 0.0)  # full right: spin
    assert [(c.type, dict(c.data)) for c in decision.commands] == [
        ("hwgateway/LegoMotorSpeed", {"port": "A", "speed_percent": 100}),
        ("hwgateway/LegoMotorSpeed", {"port": "B", "speed_percent": -100}),
    ]
    assert [dict(c.data) for c in evaluator.safe_commands()] == [
        {"port": "A", "speed_percent": 0},
        {"port": "B", "speed_percent": 0},
    ]


def test_a_direct_axis_drives_a_microbit_pin_and_negative_travel_is_clamped_to_its_range() -> None:
    table = {
        "source": "pad",
        "target": "bit",
        "mode": "direct",
        "deadman": "none",
        "inputs": {"duty": "state.axes.right_trigger"},
        "outputs": {"duty": {"command": "hwgateway/MicrobitPin", "field": "value", "args": {"pin": 1, "analog": True}}},
    }
    specs, problems = parse_bindings({"pwm": table})
    assert problems == []
    evaluator = Evaluator(specs[0])
    state = {"state": {"axes": [0, 0, 0, 0, 0, 0.5], "buttons": []}}  # plain data reads as well as messages
    decision = evaluator.output(state, 0.0, 0.0)
    assert decision.commands[0].data == {"pin": 1, "analog": True, "value": 127}
    negative = replace(specs[0].inputs[0], shape=InputShape(invert=True))
    decision = Evaluator(replace(specs[0], inputs=(negative,))).output(state, 0.0, 0.0)
    assert decision.values == {"duty": 0.0}
    assert decision.clamped


# -- buttons and actions -----------------------------------------------------------------------------


def _events(detector: Detector, timeline: Sequence[tuple[float | None, float]]) -> list[tuple[str, float, bool]]:
    return [(e.trigger, e.time_s, e.state) for value, t in timeline for e in detector.feed(value, t)]


def test_press_release_hold_double_and_toggle() -> None:
    timeline: list[tuple[float | None, float]] = [
        (0, 0.0),
        (1, 0.1),
        (1, 0.5),
        (0, 1.0),
        (1, 1.2),
        (None, 2.5),
        (0, 2.6),
    ]
    assert _events(Detector("press"), timeline) == [("press", 0.1, True), ("press", 1.2, True)]
    assert _events(Detector("release"), timeline) == [("release", 1.0, True), ("release", 2.6, True)]
    assert _events(Detector("hold", hold_s=0.8), timeline) == [("hold", 2.5, True)]  # the first press was too short
    assert _events(Detector("toggle"), timeline) == [("toggle", 0.1, True), ("toggle", 1.2, False)]
    assert _events(Detector("double", double_s=0.4), timeline) == []  # 1.1 s apart
    quick = [(1.0, 0.0), (0.0, 0.1), (1.0, 0.3), (0.0, 0.4), (1.0, 0.6)]
    assert _events(Detector("double", double_s=0.4), quick) == [("double", 0.3, True)]  # the third press starts anew


def test_a_hold_fires_on_a_poll_with_no_new_sample() -> None:
    detector = Detector("hold", hold_s=0.5)
    assert detector.feed(1.0, 0.0) == []
    assert detector.poll(0.4) == []
    assert [e.trigger for e in detector.poll(0.5)] == ["hold"]
    assert detector.poll(0.9) == []  # once per press


@PROPERTIES
@given(st.floats(0.2, 0.9), st.floats(0.01, 0.2), st.lists(st.floats(0.0, 1.0), max_size=30))
def test_an_axis_threshold_with_hysteresis_does_not_chatter(
    threshold: float, hysteresis: float, wobble: list[float]
) -> None:
    above = Detector("above", threshold=threshold, hysteresis=hysteresis)
    below = Detector("below", threshold=threshold, hysteresis=hysteresis)
    assert [e.trigger for e in above.feed(threshold, 0.0)] == ["above"]
    assert [e.trigger for e in below.feed(threshold - hysteresis - 0.01, 0.0)] == ["below"]
    # Values inside the band never fire again: the input must leave it first.
    for index, fraction in enumerate(wobble, start=1):
        assert above.feed(threshold - hysteresis + fraction * hysteresis, float(index)) == []
        assert below.feed(threshold + fraction * hysteresis, float(index)) == []


def test_actions_fire_commands_and_set_switches_only_on_fresh_samples() -> None:
    actions = [
        {"input": "state.buttons.cross", "on": "press", "command": "led", "args": {"rgb": [0, 1, 0]}},
        {"input": "state.buttons.circle", "on": "toggle", "command": "led", "args": {"rgb": [1, 0, 0]}, "off_args": {}},
        {"input": "state.axes.right_trigger", "on": "above", "threshold": 0.7, "switch_set": "fast"},
    ]
    specs, problems = parse_bindings({"drive": _drive_table(actions=actions, set="fast")})
    assert problems == []
    evaluator = Evaluator(specs[0])
    pressed = {"state": ControllerState(axes=(0, 0, 0, 0, 0, 0.8), buttons=(1, 1))}
    assert evaluator.actions(pressed, 0.5, 0.0) == ()  # older than the 0.3 s timeout: nothing fed
    fired = evaluator.actions(pressed, 0.0, 0.1)
    assert [(f.command.type, dict(f.command.data)) if f.command else f.switch_set for f in fired] == [
        ("led", {"rgb": [0, 1, 0]}),
        ("led", {"rgb": [1, 0, 0]}),
        "fast",
    ]
    evaluator.actions({"state": ControllerState(buttons=(0, 0))}, 0.0, 0.2)
    toggled_off = evaluator.actions(pressed, 0.0, 0.3)[1]
    assert toggled_off.state is False
    assert toggled_off.command is not None
    assert toggled_off.command.data == {}


# -- input paths ------------------------------------------------------------------------------------


def test_input_paths_read_messages_and_plain_data_and_a_missing_value_reads_none() -> None:
    path = parse_input_path("state.buttons.l1")
    assert path.steps == ("buttons", 4)
    assert path.named == "buttons.l1"
    assert path.read({"state": ControllerState(buttons=(0, 0, 0, 0, 2))}) == 2.0
    assert path.read({"state": ControllerState(buttons=(0,))}) is None
    assert path.read({}) is None
    nested = parse_input_path("node/1/state.acceleration.x")
    assert nested.stream == "node/1/state"
    assert nested.read({"node/1/state": {"acceleration": {"x": 9.8}}}) == 9.8
    assert parse_input_path("pins.values[3]").read({"pins": {"values": [0, 0, 0, True]}}) == 1.0
    for bad in ("axes", "state.", "state.axes.left_q", "state.axes[x]", "bad stream.x"):
        with pytest.raises(ValueError, match=r"\S"):
            parse_input_path(bad)


def test_a_radial_deadzone_keeps_a_diagonal_and_the_arcade_mix_follows_it() -> None:
    radial = {"deadzone": 0.2, "deadzone_shape": "radial"}
    inputs = {
        "throttle": {"path": "state.axes.left_y", "pair": "steer", **radial},
        "steer": {"path": "state.axes.left_x", "pair": "throttle", **radial},
    }
    evaluator = Evaluator(_binding(inputs=inputs, slew={}, deadman="none"))
    # A diagonal of length 0.15 is inside the round deadzone: it reads (0, 0).
    assert evaluator.output(_pad(0.106, 0.106), 0.0, 0.0).values == {"left": 0.0, "right": 0.0}
    # Along one axis only, 0.6 is half the travel past the deadzone: both wheels at 250 of 500.
    assert evaluator.output(_pad(0.0, 0.6), 0.0, 0.1).values == pytest.approx({"left": 250.0, "right": 250.0})
    # A diagonal keeps its direction: equal throttle and steer, so the right wheel stands still.
    values = evaluator.output(_pad(0.6, 0.6), 0.0, 0.2).values
    assert values["right"] == pytest.approx(0.0, abs=1e-9)
    assert values["left"] > 0


JUNK = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=8) | st.dictionaries(st.sampled_from(["axes", "buttons", "x"]), inner),
    max_leaves=30,
)


@PROPERTIES
@given(bindings(), st.dictionaries(st.sampled_from(["state", "other"]), JUNK, max_size=2), st.floats(0.0, 1.0))
def test_any_sample_content_gives_outputs_within_range_never_an_error(
    spec: BindingSpec, latest: dict[str, Any], age: float
) -> None:
    evaluator = Evaluator(spec)
    for now in (0.0, 0.01, 0.02):
        decision = evaluator.output(latest, age, now)
        _check_commands_are_valid(decision)
        assert all(o.minimum <= decision.values[o.name] <= o.maximum for o in spec.outputs)
