"""The core's lease rule (`gateway.core.lease.Leases`) on a fake clock whose timers the test fires."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gateway.core.lease import Lease, LeaseEnd, Leases


class FakeTime:
    """A clock that moves only when told, and the timers scheduled on it."""

    def __init__(self) -> None:
        self.now = 100.0
        self.timers: list[FakeTimer] = []

    def clock(self) -> float:
        return self.now

    def schedule(self, delay_s: float, callback: Callable[[], None]) -> FakeTimer:
        timer = FakeTimer(self.now + delay_s, callback)
        self.timers.append(timer)
        return timer

    def advance(self, seconds: float) -> None:
        """Move time on and fire the timers now due, as an event loop would."""
        self.now += seconds
        for timer in [t for t in self.timers if not t.cancelled and t.due <= self.now]:
            self.timers.remove(timer)
            timer.callback()

    def armed(self) -> list[float]:
        return sorted(t.due for t in self.timers if not t.cancelled)


class FakeTimer:
    def __init__(self, due: float, callback: Callable[[], None]) -> None:
        self.due, self.callback, self.cancelled = due, callback, False

    def cancel(self) -> None:
        self.cancelled = True


Applied = list[tuple[str, Lease[int], LeaseEnd]]


@pytest.fixture
def fake() -> FakeTime:
    return FakeTime()


def leases(fake: FakeTime, applied: Applied, term_s: float | None = 1.0) -> Leases[str, int]:
    return Leases(
        "dev",
        lambda key, lease, why: applied.append((key, lease, why)),
        term_s=term_s,
        clock=fake.clock,
        schedule=fake.schedule,
    )


def test_a_lease_holds_holder_value_and_deadline_and_a_new_command_renews_it(fake: FakeTime) -> None:
    applied: Applied = []
    table = leases(fake, applied)
    assert table.take("left", "alice", 200) == Lease("alice", 200, 101.0)
    fake.advance(0.8)
    table.take("left", "alice", 150)  # renewed: the deadline moves on
    fake.advance(0.8)
    assert applied == []
    assert table.get("left") == Lease("alice", 150, 101.8)
    fake.advance(0.2)
    assert applied == [("left", Lease("alice", 150, 101.8), LeaseEnd.EXPIRED)]
    assert "left" not in table
    assert fake.armed() == []


def test_the_last_commanding_client_holds_the_output(fake: FakeTime) -> None:
    applied: Applied = []
    table = leases(fake, applied, term_s=None)
    table.take("A", "alice", 30)
    table.take("A", "bob", 40)
    assert table.release("alice") == []
    assert table.release("bob") == ["A"]
    assert applied == [("A", Lease("bob", 40), LeaseEnd.CLIENT_GONE)]


def test_commanding_the_safe_value_ends_the_lease_with_nothing_to_write(fake: FakeTime) -> None:
    applied: Applied = []
    table = leases(fake, applied)
    table.take("A", "alice", 30)
    assert table.take("A", "alice", 0) is None
    assert len(table) == 0
    assert fake.armed() == []
    fake.advance(5)
    assert applied == []


def test_client_gone_ends_only_its_own_leases(fake: FakeTime) -> None:
    applied: Applied = []
    table = leases(fake, applied, term_s=None)
    table.take("A", "alice", 1)
    table.take("B", "bob", 2)
    table.take("C", "alice", 3)
    assert sorted(table.release("alice")) == ["A", "C"]
    assert table.holders() == {"B": "bob"}
    assert {(key, why) for key, _, why in applied} == {("A", LeaseEnd.CLIENT_GONE), ("C", LeaseEnd.CLIENT_GONE)}


@pytest.mark.parametrize("why", [LeaseEnd.ESTOP, LeaseEnd.SHUTDOWN, LeaseEnd.DEVICE_LOST])
def test_estop_shutdown_and_device_lost_end_every_lease_before_returning(fake: FakeTime, why: LeaseEnd) -> None:
    applied: Applied = []
    table = leases(fake, applied)
    table.take("A", "alice", 1)
    table.take("B", "bob", 2, term_s=5.0)
    assert sorted(table.end_all(why)) == ["A", "B"]
    assert sorted((key, reason) for key, _, reason in applied) == [("A", why), ("B", why)]
    assert len(table) == 0
    assert fake.armed() == []  # no timer left behind to fire later


def test_one_timer_for_the_earliest_deadline_and_per_lease_terms(fake: FakeTime) -> None:
    applied: Applied = []
    table = leases(fake, applied)
    table.take("A", "alice", 1, term_s=3.0)
    table.take("B", "bob", 1, term_s=0.5)
    assert fake.armed() == [100.5]
    fake.advance(0.5)
    assert [key for key, _, _ in applied] == ["B"]
    assert fake.armed() == [103.0]
    fake.advance(2.5)
    assert [key for key, _, _ in applied] == ["B", "A"]


def test_expire_can_be_fired_directly_and_untimed_leases_never_expire(fake: FakeTime) -> None:
    applied: Applied = []
    table = leases(fake, applied, term_s=None)
    table.take("A", "alice", 1)
    table.take("B", "alice", 1, term_s=1.0)
    assert table.expire(now=1e9) == ["B"]
    assert "A" in table


def test_drop_forgets_a_vanished_output_without_writing(fake: FakeTime) -> None:
    applied: Applied = []
    table = leases(fake, applied)
    table.take("A", "alice", 1)
    assert table.drop("A") == Lease("alice", 1, 101.0)
    assert table.end("A", LeaseEnd.ESTOP) is False
    fake.advance(2)
    assert applied == []


def test_an_output_that_cannot_be_made_safe_does_not_keep_the_others_from_it(fake: FakeTime) -> None:
    done: list[str] = []

    def apply_safe(key: str, lease: Lease[int], why: LeaseEnd) -> None:
        if key == "A":
            raise OSError("link gone")
        done.append(key)

    table: Leases[str, int] = Leases("dev", apply_safe, clock=fake.clock, schedule=fake.schedule)
    table.take("A", "alice", 1)
    table.take("B", "alice", 1)
    table.end_all(LeaseEnd.ESTOP)
    assert done == ["B"]
    assert len(table) == 0


def test_a_custom_safe_value(fake: FakeTime) -> None:
    applied: list[str] = []
    table: Leases[str, str] = Leases(
        "dev", lambda key, lease, why: applied.append(key), is_safe=lambda value: value == "off", clock=fake.clock
    )
    assert table.take("rumble", "alice", "off") is None
    assert table.take("rumble", "alice", "") is not None  # "" is not this device's safe value
    table.release("alice")
    assert applied == ["rumble"]


def test_outputs_leased_when_the_device_was_lost_get_their_safe_value_again_when_it_returns(fake: FakeTime) -> None:
    applied: Applied = []
    table = leases(fake, applied, term_s=None)
    table.take("A", "alice", 1)
    table.take("B", "bob", 2)
    table.end_all(LeaseEnd.DEVICE_LOST)
    table.take("B", "bob", 3)  # commanded again after the device came back: held, not reset
    applied.clear()
    assert sorted(table.restore_safe()) == ["A", "B"]
    assert applied == [("A", Lease("alice", 1), LeaseEnd.DEVICE_LOST)]
    assert table.restore_safe() == []  # once
    table.end_all(LeaseEnd.SHUTDOWN)
    assert table.restore_safe() == []  # only a lost device's leases are restored


def test_one_output_lost_alone_is_restored_alone(fake: FakeTime) -> None:
    applied: Applied = []
    table = leases(fake, applied, term_s=None)
    table.take("node1/left", "alice", 1)
    table.take("node2/left", "alice", 1)
    assert table.end("node1/left", LeaseEnd.DEVICE_LOST)  # one node of a link went away
    assert table.holders() == {"node2/left": "alice"}
    applied.clear()
    assert table.restore_safe(lambda key: key.startswith("node2/")) == []
    assert table.restore_safe(lambda key: key.startswith("node1/")) == ["node1/left"]
    assert [key for key, _, _ in applied] == ["node1/left"]
