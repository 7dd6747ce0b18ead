"""The simulated pad's sample: sticks on a circle, triggers breathing, one button pressed at a time."""

from __future__ import annotations

import math

from devices.sim.controller import AXES, BUTTONS, controller_state
from gateway.messages.common import Time


def test_one_button_at_a_time_in_turn_each_second_and_the_sample_is_stamped() -> None:
    for t in (0.0, 1.25, 16.5, 17.0, 1_796_616_134.211424):
        state = controller_state(t)
        assert state.buttons == tuple(1 if index == int(t) % BUTTONS else 0 for index in range(BUTTONS))
        assert isinstance(state.buttons, tuple)
        assert state.timestamp == Time.from_seconds(t)


def test_the_sticks_circle_and_the_triggers_breathe_in_their_ranges() -> None:
    for t in (0.0, 0.5, 1.0, 2.0, 3.3):
        axes = controller_state(t).axes
        assert len(axes) == AXES
        assert math.isclose(math.hypot(axes[0], axes[1]), 1.0)
        assert all(-1.0 <= value <= 1.0 for value in axes[:4])
        assert all(0.0 <= value <= 1.0 for value in axes[4:])
        assert math.isclose(axes[4] + axes[5], 1.0)
