"""bench/fanout.py's repeat-by-repeat ratios to the bare-batched floors, and its typed floor's command."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pytest

from bench.fanout import SCENARIOS, SIDES, RunResult, ServerKind, _sides, paired_line, server_argv


def run(server: ServerKind, repeat: int, us_per_msg: float, transport: str = "ws") -> RunResult:
    return RunResult(
        scenario="multi-topic",
        server=server,
        transport=transport,  # type: ignore[arg-type]
        repeat=repeat,
        clients=50,
        rate=250.0,
        topics=4,
        window_s=5.0,
        received=250_000,
        skipped=0,
        delivered_per_s=50_000.0,
        expected_per_s=50_000.0,
        published_per_s=1_000.0,
        skipped_fraction=0.0,
        p50_ms=1.0,
        p99_ms=2.0,
        max_ms=3.0,
        server_cpu_pct=us_per_msg * 5.0,
        server_us_per_msg=us_per_msg,
        server_rss_peak_mb=70.0,
        client_cpu_pct=40.0,
        other_cpu_pct=math.nan,
        clients_alive=50,
    )


def test_each_repeat_is_compared_with_the_floor_of_the_same_repeat_and_a_redone_run_counts() -> None:
    # The host slows down in repeat 1: the ratio of medians would mix minutes, the paired one does not.
    results = [
        run("gateway", 0, 2.0),
        run("floor", 0, 2.5),
        run("multi", 0, 1.9),
        run("gateway", 1, 4.4),
        run("floor", 1, 4.0),
        run("gateway", 2, 3.0),
        run("floor", 2, 3.0),
        run("floor", 2, 2.0),  # redone after noise: this one counts
        run("gateway", 0, 9.9, transport="msgpack"),  # another group
        run("gateway", 3, math.nan),  # a run that delivered nothing has no ratio
        run("floor", 3, 2.0),
        run("multi", 4, 2.0),
        run("floor", 4, 0.0),
    ]
    line = paired_line(("multi-topic", "ws"), results)
    assert line == (
        "multi-topic ws: cpu/msg over bare-batched, repeat by repeat: "
        "gateway 1.10x (0.80-1.50) | gateway+multi 0.76x (0.76-0.76)"
    )


def test_no_floor_no_line() -> None:
    assert paired_line(("multi-topic", "ws"), [run("gateway", 0, 2.0)]) is None


def test_six_repeats_or_more_give_the_interval_of_the_median() -> None:
    ratios = [1.30, 0.91, 1.05, 1.12, 0.98, 1.08, 1.20]  # gateway over floor in repeats 0..6
    results = [run("floor", repeat, 2.0) for repeat in range(len(ratios))]
    results += [run("gateway", repeat, 2.0 * value) for repeat, value in enumerate(ratios)]
    line = paired_line(("multi-topic", "ws"), results)
    # 7 values: the true median lies between the smallest and the largest at 98.4 % (>= 95 %).
    assert line == (
        "multi-topic ws: cpu/msg over bare-batched, repeat by repeat: "
        "gateway 1.08x (0.91-1.30; median 0.91-1.30 at 95 %)"
    )


def test_the_typed_floor_is_paired_with_the_plain_floor_and_the_gateway_with_both() -> None:
    results = [run("floor", 0, 2.0), run("typed", 0, 2.2), run("gateway", 0, 2.31)]
    results += [run("floor", 1, 3.0), run("typed", 1, 3.3), run("gateway", 1, 3.3)]
    assert paired_line(("multi-topic", "ws"), results) == (
        "multi-topic ws: cpu/msg over bare-batched, repeat by repeat: "
        "gateway 1.13x (1.10-1.16) | bare-batched+typed 1.10x (1.10-1.10)"
    )
    assert paired_line(("multi-topic", "ws"), results, "typed") == (
        "multi-topic ws: cpu/msg over bare-batched+typed, repeat by repeat: gateway 1.02x (1.00-1.05)"
    )
    assert paired_line(("multi-topic", "ws"), results[:1] + results[2:3], "typed") is None


def test_the_typed_floor_runs_the_batched_bare_server_with_the_sims_sample(tmp_path: Path) -> None:
    argv = server_argv("typed", "msgpack", SCENARIOS["multi-topic"], tmp_path)
    assert argv[1].endswith("baseline_server.py")
    assert "--batch" in argv
    assert "--typed-sample" in argv
    assert "--typed-sample" not in server_argv("floor", "msgpack", SCENARIOS["multi-topic"], tmp_path)
    assert "typed" not in SIDES  # asked for by name only
    assert _sides("gateway,floor,typed") == ["gateway", "floor", "typed"]
    with pytest.raises(argparse.ArgumentTypeError, match="typed"):
        _sides("gateway,typo")
