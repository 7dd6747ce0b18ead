"""bench/tick_calls.py: calls per tick from a profile, and a brief real run of both sides."""

from __future__ import annotations

import argparse
import asyncio
import cProfile
from pathlib import Path

import pytest

from bench import tick_calls
from bench.fanout import Scenario, ServerKind

SOCKET_SEND = "~(<method 'send' of '_socket.socket' objects>)"


def _once_a_tick(values: list[int]) -> int:
    return sum(values)


def _twice_every_other_tick(tick: int) -> None:
    if tick % 2 == 0:
        _once_a_tick([tick])
        _once_a_tick([tick])


def test_calls_are_counted_per_tick_and_split_into_python_and_built_in(tmp_path: Path) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    for tick in range(100):
        _once_a_tick([tick])
        _twice_every_other_tick(tick)
    profiler.disable()
    path = tmp_path / "ticks.pstats"
    profiler.dump_stats(path)

    counted = tick_calls.tick_calls("gateway", path, ticks=100)

    here = "tests/test_bench_tick_calls.py"  # relative to the repository
    once = next(name for name in counted.per_tick if here in name and "(_once_a_tick)" in name)
    other = next(name for name in counted.per_tick if here in name and "(_twice_every_other_tick)" in name)
    assert counted.calls_of(once) == pytest.approx(2.0)  # 1 a tick, and 2 every other tick
    assert counted.calls_of(other) == pytest.approx(1.0)
    assert counted.calls_of("~(<built-in method builtins.sum>)") == pytest.approx(2.0)
    assert once in counted.each_tick()
    assert other in counted.each_tick()
    assert not any(name.startswith("~") for name in counted.each_tick())  # built-ins are not "code run"
    assert here in {name.rsplit(":", 1)[0] for name in counted.each_tick()}
    assert counted.python_calls >= 3.0
    assert counted.builtin_calls >= 2.0


def test_a_profile_with_no_tick_is_refused_with_its_reason(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="no message was delivered"):
        tick_calls.tick_calls("floor", tmp_path / "never-written.pstats", ticks=0)


def test_the_largest_differences_come_first() -> None:
    ours = tick_calls.TickCalls("gateway", 10, {"a:1(f)": 4.0, "a:2(g)": 1.0})
    theirs = tick_calls.TickCalls("floor", 10, {"a:1(f)": 1.0, "b:1(h)": 5.0})
    assert tick_calls.differences(ours, theirs, 2) == [("b:1(h)", 0.0, 5.0), ("a:1(f)", 4.0, 1.0)]


def test_brief_real_runs_show_one_send_per_client_a_tick_and_no_python_call_per_client_in_the_gateway(
    tmp_path: Path,
) -> None:
    # Both sides send once per client a tick, however many topics the tick has. Per client, the
    # gateway's members' loop makes no Python call (`write_each`), where the floor makes three
    # (`transport.write`, `is_closing`, the stream's `transport`): the floor is the positive control
    # that a call per client would show in the counts.
    args = argparse.Namespace(seconds=1.0, warmup=0.5)

    async def profiled(kind: ServerKind, clients: int) -> tick_calls.TickCalls:
        scenario = Scenario("custom", clients, 100.0, 4)
        return await tick_calls.profile_side(kind, "msgpack", scenario, args, tmp_path)

    async def runs() -> dict[tuple[ServerKind, int], tick_calls.TickCalls]:
        return {(kind, clients): await profiled(kind, clients) for kind in tick_calls.SIDES for clients in (2, 12)}

    counted = asyncio.run(runs())
    for (kind, clients), side in counted.items():
        assert side.ticks > 50, (kind, clients)  # about 100 in the window
        # (rel: a tick or two that a late loop sends with the next one in a window of about 100)
        assert side.calls_of(SOCKET_SEND) == pytest.approx(clients, rel=0.1), (kind, clients)
        assert len(side.each_tick()) > 5
    per_client = {
        kind: (counted[kind, 12].python_calls - counted[kind, 2].python_calls) / 10 for kind in tick_calls.SIDES
    }
    assert per_client["gateway"] == pytest.approx(0.0, abs=0.5), per_client  # run to run, a tick varies by about 1 call
    assert per_client["floor"] == pytest.approx(3.0, abs=0.5), per_client
    report = tick_calls.report(
        "msgpack", Scenario("custom", 12, 100.0, 4), [counted["gateway", 12], counted["floor", 12]], 5
    )
    assert "| gateway |" in report
    assert "| bare-batched |" in report
    assert report.count("\n  ") == 5


def test_bad_transports_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        tick_calls.parse_args(["--transports", "rosbridge"])
    assert "--transports: msgpack and/or ws" in capsys.readouterr().err


@pytest.mark.parametrize("bad", [["--seconds", "0"], ["--rate", "-250"], ["--rate", "nan"], ["--clients", "0"]])
def test_a_window_rate_or_count_that_is_not_positive_is_refused(
    bad: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        tick_calls.parse_args(bad)
    assert f"argument {bad[0]}: must be positive" in capsys.readouterr().err
