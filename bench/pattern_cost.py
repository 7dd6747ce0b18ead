"""What the worst legal subscription patterns cost the event loop, against plain patterns, in one run.

Method: one process, no daemon. Two measurements, each as the median of `--repeats` runs, in this
thread's CPU time (`time.thread_time`, so other programs on the machine do not count):

- **match**: `gateway.topics.matches` of each of the three worst patterns the limits allow (84
  merged `**`, four `**` between literals, 31 `*` and a `**`), µs per match, against two topics:
  `short`, five segments that none of them matches (the old test's), and `deep`, 121 segments
  ending in `zz` with no `c`, which passes every quick rejection and makes `**/a/**/b/**/c/**/zz`
  backtrack. The baseline is a plain pattern against the same topic: for `short` a literal one of
  five segments differing in the last, for `deep` `a/**/zz` (a literal cannot have 121 segments),
  which walks the topic once.
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
TOPICS_TO_MATCH = {"short": "/".join(["a"] * 4 + ["b" * 200]), "deep": "/".join(["a", "b"] * 60 + ["zz"])}
#: The plain pattern each topic is also matched against, for scale.
LITERALS = {"short": "/".join(["a"] * 4 + ["c"]), "deep": "a/**/zz"}
LITERAL = LITERALS["short"]
TOPICS = [f"dev-{d}/group-{g}/part/leaf/value" for d in range(8) for g in range(8)]
MATCHES_PER_RUN = 1000


def thread_cpu(work: Callable[[], None]) -> float:
    """This thread's CPU time (s) that `work` takes."""
    started = time.thread_time()
    work()
    return time.thread_time() - started


def match_us(pattern: str, topic: str) -> float:
    """µs of CPU per `matches(pattern, topic)`, over `MATCHES_PER_RUN` calls."""

    def run() -> None:
        for _ in range(MATCHES_PER_RUN):
            matches(pattern, topic)

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
    patterns = {"literal": "", **{f"worst-{index}": pattern for index, pattern in enumerate(WORST)}}
    match_runs: dict[str, list[float]] = {f"{t} {p}": [] for t in TOPICS_TO_MATCH for p in patterns}
    subscribe_runs: dict[str, list[float]] = {"literal": [], "worst": []}
    for repeat in range(repeats):
        for topic_name, topic in TOPICS_TO_MATCH.items():
            for name, pattern in patterns.items():
                match_runs[f"{topic_name} {name}"].append(match_us(pattern or LITERALS[topic_name], topic))
        subscribe_runs["literal"].append(subscribe_ms([LITERAL], repeat))
        subscribe_runs["worst"].append(subscribe_ms(WORST * 21, repeat))
    match = {name: statistics.median(runs) for name, runs in match_runs.items()}
    subscribe = {name: statistics.median(runs) for name, runs in subscribe_runs.items()}
    return {
        "repeats": repeats,
        "match_us_median": match,
        "match_ratio_to_literal": {
            name: match[name] / match[f"{name.split()[0]} literal"] for name in match if "literal" not in name
        },
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
