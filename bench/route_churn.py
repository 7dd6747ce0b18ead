"""What subscription churn and connection storms cost the bus's routing, against the same work without them.

Method: one process, no daemon, the bus on its own (`gateway.bus.Bus`), so the figures are the
routing's alone; each figure is the median of `--repeats` runs in this thread's CPU time
(`time.thread_time`, so other programs on the machine do not count).

- **churn** (issue 42, item 1): 100 topics (`dev-D/stream-S`, 10 x 10) published round-robin at
  10 kHz of simulated time for `--seconds`; 10 clients subscribed to everything (`**`) that keep
  up; one more client holds 64 subscriptions of 64 distinct patterns each and makes 5
  subscribe/unsubscribe pairs a second (simulated time). Reported: µs of CPU per delivered sample
  with churn, and the same run without the churning pairs (the ratio is the goal: within 1.1x),
  and delivered (every client receives every sample: 1.00).
- **storm**: 500 clients connect one after another, each subscribing to `**` over the 100 topics,
  one publication of every topic after each connection. Reported: the routing CPU of the whole
  storm (each join's round less the same publications with nothing changed) against 500 x one
  join's (the goal: no more); the joins' own CPU (the subscribe calls) against 500 x the same join
  on a bus with no other client, timed right after it, a steadier figure where the publications
  after a join cost nothing more (the difference of two publications to hundreds of clients is
  mostly noise); and the same in work: the Python and C function calls a join's round
  makes beyond the same publications (counted by cProfile, so exact and free of the machine's
  noise and caches). Beside them, a control: the CPU of making each joining client object, which
  runs no bus code, over the storm against 500 x the first ten's. The CPU figures of a hot loop
  grow with the working set (every publication walks every client), the control's alike; the
  work count says whether the bus's own work grows.
- Both are also run as "old": after every change the whole route table is thrown away and every
  subscriber is routed per topic, as the bus did before issue 42 (every topic's next publication
  asks every subscriber again; a `**` subscriber is in every topic's route, not in the one route of
  every topic), so the figures stand beside what they replaced, in the same run.

Run:  .venv/bin/python bench/route_churn.py [--seconds 2] [--repeats 3]
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from gateway.bus import Bus, Outgoing, Subscriber  # noqa: E402 - after the path fix above
from gateway.messages.generic import Led  # noqa: E402

TOPICS = [f"dev-{d}/stream-{s}" for d in range(10) for s in range(10)]
PUBLISH_HZ = 10_000
CHANGES_PER_S = 5
SUBSCRIPTIONS = 64
PATTERNS_PER_SUBSCRIPTION = 64
STORM_CLIENTS = 500
#: Clients of the old routing's work count: its calls grow with the square of the clients, so 500
#: would take minutes; the growth shows at 100.
OLD_WORK_CLIENTS = 100
MESSAGE = Led(index=0, rgb=(0.5, 0.0, 0.0))


class KeepingUp(Subscriber):
    """A client that always keeps up: every sample is written at once, and counted."""

    def __init__(self, name: str) -> None:
        super().__init__(name, "json")
        self.received = 0
        self.direct = self._write

    def _write(self, item: Outgoing) -> bool:
        self.received += 1
        return True


def old_bus() -> Bus:
    """A bus that routes every subscriber per topic, as before issue 42 (no route of every topic)."""
    bus = Bus(clock=lambda: 0.0)
    bus._wide_interval = lambda subscriber: None  # type: ignore[method-assign]
    return bus


def forget_routes(bus: Bus) -> None:
    """The routing before issue 42: every change threw the whole route table away."""
    bus._routes.clear()
    bus._topics_by_first.clear()
    bus._topics_by_last.clear()
    for subscriber in bus.subscribers:
        subscriber.routed.clear()


def primed_bus(old_routing: bool) -> Bus:
    """A bus (the old routing's or today's) on which every topic has been published once."""
    bus = old_bus() if old_routing else Bus(clock=lambda: 0.0)
    publish_every_topic(bus)
    return bus


def publish_every_topic(bus: Bus) -> None:
    """One publication of every topic."""
    for topic in TOPICS:
        bus.publish(topic, MESSAGE)


def join(bus: Bus, client: KeepingUp, old_routing: bool) -> None:
    """`client` subscribes to `**` (with the old routing, every route is then thrown away, as it was)."""
    bus.subscribe(client, ["**"], None)
    if old_routing:
        forget_routes(bus)


def churner_patterns(index: int) -> list[str]:
    """64 distinct patterns that match some of the topics and not others (as a dashboard's picks do)."""
    return [f"dev-{(index + p) % 10}/stream-{p % 10}" if p % 3 else f"*/stream-{p % 10}" for p in range(64)][
        :PATTERNS_PER_SUBSCRIPTION
    ]


def churn_run(seconds: float, churn: bool, old_routing: bool) -> tuple[float, float]:
    """(µs of CPU per delivered sample, delivered ratio) of one churn run."""
    bus = old_bus() if old_routing else Bus(clock=lambda: 0.0)
    readers = [KeepingUp(f"reader-{i}") for i in range(10)]
    for reader in readers:
        bus.subscribe(reader, ["**"], None)
    churner = KeepingUp("churner")
    held = [bus.subscribe(churner, churner_patterns(i), None) for i in range(SUBSCRIPTIONS)]
    for reader in readers:
        reader.received = 0
    publications = int(seconds * PUBLISH_HZ)
    change_every = PUBLISH_HZ // (2 * CHANGES_PER_S)  # a subscribe or an unsubscribe, 10 a second
    started = time.thread_time()
    for n in range(publications):
        if churn and n % change_every == 0:
            if (n // change_every) % 2 == 0:
                bus.unsubscribe(churner, held.pop(0))
            else:
                held.append(bus.subscribe(churner, churner_patterns(n), None))
            if old_routing:
                forget_routes(bus)
        bus.publish(TOPICS[n % len(TOPICS)], MESSAGE)
    cpu = time.thread_time() - started
    delivered = sum(reader.received for reader in readers) + churner.received
    ratio = min(reader.received for reader in readers) / publications
    return cpu / delivered * 1e6, ratio


def storm_run(old_routing: bool, clients: int = STORM_CLIENTS) -> tuple[float, float, float, float, float, float]:
    """Routing CPU of the whole storm and of one connection, the joins' own, then the control's (s): see `main`.

    A connection's routing CPU is its round (its subscribe, then one publication of every topic)
    less the same publications again right after, when nothing changed: what remains is what the
    join cost the bus, wherever the bus does it (the old routing did it in the next publications),
    whatever delivering to more and more clients costs. The storm's is the sum over every join
    (unclipped, so the noise of the differences averages out); one connection's is the median of the
    first ten joins'. Past a hundred clients a publication of every topic costs more than a join
    does today, and that difference is mostly the noise of two publications, so the joins' own CPU
    (the subscribe call, with the latest value of every topic it sends) is given too: it is all the
    routing a join costs when the publications after it cost nothing more, as the work count shows.
    Its "one connection" is the same join on a bus with no other client, made after each storm join's
    publications (so in the same state of the CPU caches, which a publication to hundreds of clients
    empties), averaged. The control is the CPU of making each joining client, no bus code, summed and
    as the median of the first ten.
    """
    bus = primed_bus(old_routing)
    alone = primed_bus(old_routing)
    overheads = []
    joins = []
    joins_alone = []
    controls = []
    for index in range(clients):
        made = time.thread_time()
        client = KeepingUp(f"c{index}")
        started = time.thread_time()
        join(bus, client, old_routing)
        subscribed = time.thread_time()
        publish_every_topic(bus)
        joined = time.thread_time()
        publish_every_topic(bus)
        overheads.append((joined - started) - (time.thread_time() - joined))
        joins.append(subscribed - started)
        controls.append(started - made)
        # One connection: the same join on a bus with no other client, right after the same
        # publications, so with the CPU caches as the storm's join found them.
        lone = KeepingUp(f"alone-{index}")
        started = time.thread_time()
        join(alone, lone, old_routing)
        joins_alone.append(time.thread_time() - started)
        alone.detach(lone)
        publish_every_topic(bus)
    return (
        sum(overheads),
        statistics.median(overheads[:10]),
        sum(joins),
        sum(joins_alone) / clients,
        sum(controls),
        statistics.median(controls[:10]),
    )


def calls_in(action: Callable[[], object]) -> int:
    """The function calls (Python and C) `action` makes, counted by cProfile."""
    profile = cProfile.Profile()
    profile.runcall(action)
    return sum(entry.callcount for entry in profile.getstats())


def storm_work(old_routing: bool, clients: int) -> list[int]:
    """Per join of a storm of `clients`: the calls of its round less those of the same publications again."""
    # Patterns are parsed once per process (cached): a join on a bus of its own first, so the first
    # counted join does not count that parse.
    join(primed_bus(old_routing), KeepingUp("warm-up"), old_routing)
    bus = primed_bus(old_routing)

    def round_of(client: KeepingUp) -> None:
        join(bus, client, old_routing)
        publish_every_topic(bus)

    work = []
    for index in range(clients):
        client = KeepingUp(f"c{index}")
        work.append(
            calls_in(functools.partial(round_of, client)) - calls_in(functools.partial(publish_every_topic, bus))
        )
    return work


Run = Callable[[], tuple[float, ...]]


def median_of(repeats: int, run: Run) -> tuple[float, ...]:
    """The median of each figure over `repeats` runs."""
    results = [run() for _ in range(repeats)]
    return tuple(statistics.median(figures) for figures in zip(*results, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="simulated seconds of publishing per run")
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure (the median is shown)")
    args = parser.parse_args()
    print(f"{len(TOPICS)} topics at {PUBLISH_HZ} publications/s, 10 readers of '**', one client with")
    print(f"{SUBSCRIPTIONS} x {PATTERNS_PER_SUBSCRIPTION} patterns; medians of {args.repeats} runs, thread CPU\n")
    print(f"{'routing':<8} {'µs/msg steady':>14} {'µs/msg churn':>13} {'churn/steady':>13} {'delivered':>10}")
    for old in (False, True):
        steady_run: Run = functools.partial(churn_run, args.seconds, False, old)
        churn_run_: Run = functools.partial(churn_run, args.seconds, True, old)
        steady, _ = median_of(args.repeats, steady_run)
        churned, delivered = median_of(args.repeats, churn_run_)
        name = "old" if old else "new"
        print(f"{name:<8} {steady:>14.3f} {churned:>13.3f} {churned / steady:>12.2f}x {delivered:>10.2f}")
    print(f"\nstorm: {STORM_CLIENTS} clients join one after another, all {len(TOPICS)} topics published between joins")
    print(f"{'routing':<8} {'routing CPU s':>14} {'500 x one s':>12} {'ratio':>6}", end="   ")
    print(f"{'joins s':>8} {'500 x one s':>12} {'ratio':>6}   {'control s':>10} {'500 x one s':>12} {'ratio':>6}")
    for old in (False, True):
        figures = median_of(args.repeats, functools.partial(storm_run, old))
        name = "old" if old else "new"
        print(f"{name:<8}", end="")
        for (total, first), width, digits in zip(
            (figures[0:2], figures[2:4], figures[4:6]), (15, 9, 11), (3, 4, 4), strict=True
        ):
            one = STORM_CLIENTS * first
            print(f"{total:>{width}.{digits}f} {one:>12.{digits}f} {total / one:>5.2f}x", end="")
        print()
    print("\nstorm in work: function calls of each join beyond its publications (exact, one run)")
    print(f"{'routing':<8} {'clients':>8} {'first join':>11} {'last join':>10} {'storm':>12} {'ratio':>7}")
    for old, clients in ((False, STORM_CLIENTS), (True, OLD_WORK_CLIENTS)):
        work = storm_work(old, clients)
        name = "old" if old else "new"
        print(
            f"{name:<8} {clients:>8} {work[0]:>11} {work[-1]:>10} {sum(work):>12}"
            f" {sum(work) / (clients * statistics.median(work[:10])):>6.2f}x"
        )


if __name__ == "__main__":
    main()
