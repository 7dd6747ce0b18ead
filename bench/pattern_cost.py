"""What the worst legal subscription patterns cost the event loop, against plain patterns, in one run.

Method: one process, no daemon. Two measurements, each as the median of `--repeats` runs, in this
thread's CPU time (`time.thread_time`, so other programs on the machine do not count):

- **match**: `gateway.topics.matches` of each of the three worst patterns the limits allow (84
  merged `**`, four `**` between literals, 31 `*` and a `**`) against a five-segment topic that none
  of them matches, µs per match; the baseline is a literal five-segment pattern against the same topic.
- **subscribe**: a bus holding 64 five-segment topics; one subscriber subscribes to the worst
  patterns (63 of them, as `tests/test_abuse.py` sends), lists the topics they match, and each
  topic is published once (each publish routes through the patterns); the baseline is the same
  with one literal pattern. ms per round.

The budgets these used to be tests of: a worst match under 10 ms, a worst subscribe under 10 ms of
loop time (issue 34 moved them here, and the tests kept what the patterns match).

Run:  .venv/bin/python bench/pattern_cost.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from gateway.bus import Bus, Subscriber  # noqa: E402 - after the path fix above
from gateway.messages.generic import Led  # noqa: E402
from gateway.topics import matches  # noqa: E402

#: The costliest patterns the limits allow (`tests/test_topics.py` checks what they match).
WORST = ["/".join(["**"] * 84 + ["zz"]), "**/a/**/b/**/c/**/zz", "/".join(["*"] * 31 + ["**"])]
TOPIC = "/".join(["a"] * 4 + ["b" * 200])
LITERAL = "/".join(["a"] * 4 + ["c"])
TOPICS = [f"dev-{d}/group-{g}/part/leaf/value" for d in range(8) for g in range(8)]
MATCHES_PER_RUN = 1000


def thread_cpu(work: Callable[[], None]) -> float:
    """This thread's CPU time (s) that `work` takes."""
    started = time.thread_time()
    work()
    return time.thread_time() - started


def match_us(pattern: str) -> float:
    """µs of CPU per `matches(pattern, TOPIC)`, over `MATCHES_PER_RUN` calls."""

    def run() -> None:
        for _ in range(MATCHES_PER_RUN):
            matches(pattern, TOPIC)

    return thread_cpu(run) / MATCHES_PER_RUN * 1e6


def subscribe_ms(patterns: list[str], attempt: int) -> float:
    """ms of CPU to subscribe `patterns` on a bus of 64 topics, list its matches and publish each topic once."""
    bus = Bus()
    for topic in TOPICS:
        bus.publish(topic, Led(index=0, rgb=(0.1, 0.0, 0.0)))
    subscriber = Subscriber(f"bench-{attempt}", "json")
    bus.attach(subscriber)
    matched: list[str] = []

    def run() -> None:
        subscription = bus.subscribe(subscriber, patterns, None)
        matched.extend(t for t in bus.topics() if subscriber.subscriptions[subscription].matches(t))
        for topic in TOPICS:
            bus.publish(topic, Led(index=0, rgb=(0.2, 0.0, 0.0)))

    cost = thread_cpu(run) * 1000
    bus.detach(subscriber)
    return cost


def measure(repeats: int) -> dict[str, Any]:
    """Medians of `repeats` runs of every measurement, and the worst/baseline ratios."""
    match_runs: dict[str, list[float]] = {name: [] for name in ("literal", "worst-0", "worst-1", "worst-2")}
    subscribe_runs: dict[str, list[float]] = {"literal": [], "worst": []}
    for repeat in range(repeats):
        match_runs["literal"].append(match_us(LITERAL))
        for index, pattern in enumerate(WORST):
            match_runs[f"worst-{index}"].append(match_us(pattern))
        subscribe_runs["literal"].append(subscribe_ms([LITERAL], repeat))
        subscribe_runs["worst"].append(subscribe_ms(WORST * 21, repeat))
    match = {name: statistics.median(runs) for name, runs in match_runs.items()}
    subscribe = {name: statistics.median(runs) for name, runs in subscribe_runs.items()}
    return {
        "repeats": repeats,
        "match_us_median": match,
        "match_ratio_to_literal": {name: match[name] / match["literal"] for name in match if name != "literal"},
        "subscribe_ms_median": subscribe,
        "subscribe_ratio_to_literal": subscribe["worst"] / subscribe["literal"],
        "budget_ms": {"worst match": max(match.values()) / 1000, "worst subscribe": subscribe["worst"]},
    }


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, measure, print the report as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=15, help="runs of each measurement (the median is reported)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be positive")
    print(json.dumps(measure(args.repeats), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
