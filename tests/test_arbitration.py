"""The arbiter's one rule (`gateway.core.arbitration`), injected clock: priorities, claims, safe outputs, STOP ALL."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.core.arbitration import CLIENT_HOLD_S, DEFAULT_CLIENT_PRIORITY, Arbiter
from gateway.errors import DeviceUnavailable, Locked

MOTORS = "hwgateway/ThymioMotors"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def arbiter_with(clock: Clock, **bindings: int) -> Arbiter:
    arbiter = Arbiter(clock)
    for name, priority in bindings.items():
        arbiter.register(name, priority, hold_s=0.3)
    return arbiter


def test_a_binding_of_higher_priority_takes_over_and_a_client_waits_until_it_lapses() -> None:
    clock = Clock()
    arbiter = arbiter_with(clock, drive=100)
    arbiter.admit("thymio", MOTORS, "c1")
    arbiter.admit("thymio", MOTORS, "drive")  # 100 > 50: takes over at once
    with pytest.raises(Locked, match="driven by drive at priority 100"):
        arbiter.admit("thymio", MOTORS, "c1")
    arbiter.admit("thymio", "thymio_msgs/Led", "c1")  # another channel of the same device is free
    clock.now += 0.31  # the binding stopped renewing its claim
    arbiter.admit("thymio", MOTORS, "c1")
    claim = arbiter.holder_of("thymio", MOTORS)
    assert claim is not None
    assert (claim.holder, claim.priority) == ("c1", DEFAULT_CLIENT_PRIORITY)


def test_a_client_of_higher_priority_preempts_a_binding_until_its_claim_lapses() -> None:
    clock = Clock()
    arbiter = arbiter_with(clock, drive=10)
    arbiter.admit("thymio", MOTORS, "drive")
    arbiter.admit("thymio", MOTORS, "c1")  # 50 > 10
    with pytest.raises(Locked):
        arbiter.admit("thymio", MOTORS, "drive")
    clock.now += CLIENT_HOLD_S + 0.01
    arbiter.admit("thymio", MOTORS, "drive")


def test_equal_priority_clients_take_over_as_before_but_never_from_a_binding() -> None:
    clock = Clock()
    arbiter = arbiter_with(clock, first=50, second=50)
    arbiter.admit("thymio", MOTORS, "c1")
    arbiter.admit("thymio", MOTORS, "c2")  # the last client's command wins, as without arbitration
    arbiter.admit("thymio", MOTORS, "c1")
    arbiter.release("c1")
    arbiter.admit("thymio", MOTORS, "first")
    for other in ("second", "c2"):
        with pytest.raises(Locked):
            arbiter.admit("thymio", MOTORS, other)


def test_a_safe_output_never_clobbers_another_holder() -> None:
    clock = Clock()
    arbiter = arbiter_with(clock, drive=100)
    arbiter.admit("thymio", MOTORS, "drive")
    arbiter.admit("thymio", MOTORS, "drive", safe=True)  # its own output: it goes, and the claim ends
    assert arbiter.holder_of("thymio", MOTORS) is None
    arbiter.admit("thymio", MOTORS, "c1")
    with pytest.raises(Locked, match="safe output yields"):
        arbiter.admit("thymio", MOTORS, "drive", safe=True)  # although 100 > 50
    clock.now += CLIENT_HOLD_S + 0.01
    arbiter.admit("thymio", MOTORS, "drive", safe=True)


def test_per_target_priority() -> None:
    clock = Clock()
    arbiter = Arbiter(clock)
    arbiter.register("drive", 100, 0.3, {"lego": 10})
    assert (arbiter.priority_of("drive", "thymio"), arbiter.priority_of("drive", "lego")) == (100, 10)
    arbiter.admit("lego", MOTORS, "drive")
    arbiter.admit("lego", MOTORS, "c1")


def test_stop_all_halts_bindings_until_each_resumes_and_leaves_clients_alone() -> None:
    clock = Clock()
    arbiter = arbiter_with(clock, drive=100, other=100)
    stopped: list[str] = []
    arbiter.on_stop_all.append(lambda: stopped.append("stopped"))
    arbiter.admit("thymio", MOTORS, "drive")
    arbiter.stop_all()
    assert stopped == ["stopped"]
    assert arbiter.holder_of("thymio", MOTORS) is None  # the binding's claim went with the stop
    for holder in ("drive", "other"):
        with pytest.raises(DeviceUnavailable, match="STOP ALL"):
            arbiter.admit("thymio", MOTORS, holder)
    with pytest.raises(DeviceUnavailable):
        arbiter.admit("thymio", MOTORS, "drive", safe=True)
    arbiter.admit("thymio", MOTORS, "c1")
    arbiter.resume("drive")
    clock.now += CLIENT_HOLD_S + 0.01
    arbiter.admit("thymio", MOTORS, "drive")
    with pytest.raises(DeviceUnavailable):
        arbiter.admit("thymio", MOTORS, "other")


@given(
    st.lists(
        st.tuples(st.sampled_from(["c1", "c2", "b1", "b2", "b3"]), st.booleans(), st.floats(0.0, 0.4)),
        max_size=40,
    ),
    st.dictionaries(st.sampled_from(["b1", "b2", "b3"]), st.integers(0, 255), min_size=3),
)
def test_priorities_are_respected(commands: list[tuple[str, bool, float]], priorities: dict[str, int]) -> None:
    """Whoever gets through, a live claim of a strictly higher priority never lost its channel to it."""
    clock = Clock()
    arbiter = Arbiter(clock)
    for name, priority in priorities.items():
        arbiter.register(name, priority, hold_s=0.3)
    for holder, safe, wait in commands:
        clock.now += wait
        before = arbiter.holder_of("d", "t")
        try:
            arbiter.admit("d", "t", holder, safe=safe)
        except Locked:
            assert before is not None
            assert before.holder != holder
            continue
        if before is not None and before.holder != holder:
            assert not safe, "a safe output went over a live claim of another holder"
            assert arbiter.priority_of(holder, "d") >= before.priority
