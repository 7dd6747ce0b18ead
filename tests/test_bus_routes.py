"""The bus's routes change entry by entry: always equal to a fresh start, and cheap for everyone else.

A subscribe, unsubscribe, detach or regroup changes only the routes of the topics it concerns
(issue 42: the whole route table was thrown away on each, and every topic's next publication asked
every subscriber again). The property test drives random sequences of those changes and checks,
after each, that what every subscriber receives is what a bus built afresh with the same
subscriptions would send it; the cost tests count the pattern matches a change makes.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gateway.bus import Bus, Outgoing, Sample, Subscriber
from gateway.commands import CommandRouter
from gateway.core.client import Client, Hub
from gateway.core.config import ServerConfig, SupervisorConfig
from gateway.messages.generic import Led
from gateway.supervisor import Supervisor
from gateway.topics import Pattern

TOPICS = ("a/x", "a/y", "b/x", "b/y/z", "c/x")
PATTERNS = ("a/*", "**", "*/x", "b/**", "c/x", "a/y", "**/z")
RATES = (None, 10.0)


@dataclass(eq=False)
class RecordingGroup:
    """A fan-out group that records what the bus hands it."""

    received: list[str] = field(default_factory=list)

    def add(self, item: Outgoing) -> None:
        assert isinstance(item, Sample)
        self.received.append(item.topic)


#: Mailbox times (s), 10 s apart: a rate-limited topic held back by the last take is due again.
_times = itertools.count(10**12, 10)


def later() -> float:
    return float(next(_times))


def led() -> Led:
    return Led(index=0, rgb=(0.5, 0.0, 0.0))


def deliveries(bus: Bus, subscribers: list[Subscriber], groups: list[RecordingGroup], topic: str) -> list[object]:
    """Publish once on `topic` and return who received it: per subscriber its mailbox, per group its adds."""
    for group in groups:
        group.received.clear()
    for subscriber in subscribers:
        subscriber.take_due(later())
    bus.publish(topic, led())
    mailboxes = [sorted(item.key for item in subscriber.take_due(later())[0]) for subscriber in subscribers]
    return [mailboxes, [list(group.received) for group in groups]]


Step = tuple[str, int, int]
steps = st.lists(
    st.tuples(
        st.sampled_from(["subscribe", "unsubscribe", "detach", "group", "ungroup", "publish"]),
        st.integers(0, 3),  # which subscriber
        st.integers(0, len(PATTERNS) * len(TOPICS)),  # which pattern / topic / subscription
    ),
    max_size=40,
)


def apply(
    bus: Bus, subscribers: list[Subscriber], groups: list[RecordingGroup], held: list[list[int]], step: Step
) -> None:
    action, who, what = step
    subscriber = subscribers[who]
    if action == "subscribe":
        # Every other pattern index with a rate limit: a `**` at 10 Hz beside an unlimited narrower
        # subscription receives no topic at one interval, so it is routed per topic.
        rate = RATES[(what // len(PATTERNS)) % len(RATES)]
        held[who].append(bus.subscribe(subscriber, [PATTERNS[what % len(PATTERNS)]], rate, newest=False))
    elif action == "unsubscribe" and held[who]:
        bus.unsubscribe(subscriber, held[who].pop(what % len(held[who])))
    elif action == "detach":
        bus.detach(subscriber)
    elif action == "group":
        subscriber.set_group(groups[what % len(groups)])
    elif action == "ungroup":
        subscriber.set_group(None)
    elif action == "publish":
        bus.publish(TOPICS[what % len(TOPICS)], led())


def fresh_copy(subscribers: list[Subscriber], held: list[list[int]]) -> tuple[Bus, list[Subscriber]]:
    """A new bus with the same attached subscribers, subscriptions and groups, its routes built afresh.

    A detached subscriber keeps its subscriptions (a later subscribe attaches it again with all of
    them) but receives nothing meanwhile, so its copy holds none.
    """
    bus = Bus()
    copies = []
    for index, original in enumerate(subscribers):
        copy = Subscriber(original.name, "json")
        copy.set_group(original.group)
        if original.bus is None:
            copies.append(copy)
            continue
        for subscription_id in held[index]:
            subscription = original.subscriptions[subscription_id]
            rate = 1.0 / subscription.min_interval if subscription.min_interval else None
            bus.subscribe(copy, subscription.patterns, rate, newest=False)
        copies.append(copy)
    return bus, copies


@settings(max_examples=150, deadline=None)
@given(steps)
# A subscriber routed per topic takes `**` (it then receives every topic through one route), leaves
# it again, and a `**` at 10 Hz beside an unlimited `a/*` (per topic: two intervals).
@example([("publish", 0, 0), ("subscribe", 0, 0), ("subscribe", 0, 1), ("publish", 0, 1), ("unsubscribe", 0, 1)])
@example([("publish", 0, 0), ("subscribe", 0, 8), ("subscribe", 0, 0), ("unsubscribe", 0, 1), ("detach", 0, 0)])
@example([("subscribe", 1, 1), ("group", 1, 0), ("publish", 0, 3), ("subscribe", 1, 7), ("ungroup", 1, 0)])
def test_routes_after_any_changes_are_those_of_a_fresh_bus(sequence: list[Step]) -> None:
    bus = Bus()
    subscribers = [Subscriber(f"s{i}", "json") for i in range(4)]
    groups = [RecordingGroup(), RecordingGroup()]
    held: list[list[int]] = [[] for _ in subscribers]
    for step in sequence:
        apply(bus, subscribers, groups, held, step)
        for subscriber in subscribers:
            subscriber.take_due(later())
        # Against the subscriptions themselves: each published topic is routed to each attached
        # subscriber once (its topic's route or the route of every topic), at the interval its
        # subscriptions ask (the least of those matching), and only when one matches.
        for topic in bus.topics():
            for subscriber in subscribers:
                entries = [
                    route.members[subscriber][0]
                    for route in (bus._routes[topic], bus._everything)
                    if subscriber in route.members
                ]
                wanted = subscriber.interval_for(topic) if subscriber.bus is bus else None
                assert entries == ([] if wanted is None else [wanted]), (step, topic, subscriber.name)
        fresh, copies = fresh_copy(subscribers, held)
        for topic in TOPICS:
            assert deliveries(bus, subscribers, groups, topic) == deliveries(fresh, copies, groups, topic), (
                step,
                topic,
            )


@settings(max_examples=150, deadline=None)
@given(steps)
def test_equal_fanout_signatures_route_the_same_topics_and_every_change_is_told(sequence: list[Step]) -> None:
    """A face groups subscribers by `fanout_signature`: equal ones must route the same topics, always.

    Subscriptions that match no published topic are left out of the signature; the bus must call
    `changed` whenever the signature moves (here also when a topic's first publication makes an
    idle subscription match), so that a face can regroup before the first sample.
    """
    bus = Bus()
    subscribers = [Subscriber(f"s{i}", "json") for i in range(4)]
    told: list[frozenset[str] | None] = [None] * len(subscribers)
    for index, subscriber in enumerate(subscribers):
        subscriber.on_change = lambda index=index: told.__setitem__(index, subscribers[index].fanout_signature())
    held: list[list[int]] = [[] for _ in subscribers]
    for step in sequence:
        action, who, what = step
        if action in ("group", "ungroup"):
            continue  # the face's own doing, not a change of what is received
        if action == "subscribe" and what % 3 == 0:  # a pattern that matches no topic, ever
            held[who].append(bus.subscribe(subscribers[who], ["never/*"], None, newest=False))
            continue
        apply(bus, subscribers, [], held, step)
        signatures = [subscriber.fanout_signature() for subscriber in subscribers]
        assert signatures == told, step
        for one, other in itertools.combinations(range(len(subscribers)), 2):
            if signatures[one] is not None and signatures[one] == signatures[other]:
                assert set(subscribers[one].routed) == set(subscribers[other].routed), (step, one, other)


def count_matches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count every pattern match the bus makes from now on."""
    calls = [0]
    original = Pattern.matches_parts

    def counted(self: Pattern, parts: list[str]) -> bool:
        calls[0] += 1
        return original(self, parts)

    monkeypatch.setattr(Pattern, "matches_parts", counted)
    return calls


def test_a_subscribe_and_unsubscribe_match_only_their_own_patterns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Churn by one client costs its own patterns times the topics, not everyone's patterns again."""
    bus = Bus()
    topics = [f"dev{d}/stream{s}" for d in range(10) for s in range(10)]
    others = [Subscriber(f"other{i}", "json") for i in range(20)]
    for index, other in enumerate(others):
        bus.subscribe(other, [f"dev{index % 10}/*", "**/stream3", f"dev{index % 7}/stream{index % 10}"], None)
    for topic in topics:
        bus.publish(topic, led())
    churner = Subscriber("churner", "json")
    calls = count_matches(monkeypatch)
    for _ in range(5):
        subscription = bus.subscribe(churner, ["dev1/*", "dev2/stream5"], None, newest=False)
        for topic in topics:
            bus.publish(topic, led())
        bus.unsubscribe(churner, subscription)
        for topic in topics:
            bus.publish(topic, led())
    # Per cycle, about 250: the subscribe matches its 2 patterns against the 100 topics, then the
    # interval of the 11 it matched is asked (2 patterns each); the unsubscribe matches the 11 routed
    # topics and drops what the churner had unsent. Publishing asks no one. When every change threw the
    # routes away, each of the 100 next publications asked all 21 subscribers: about 12,000 a cycle.
    assert calls[0] <= 5 * 300
    for topic in topics:
        assert churner not in bus._routes[topic].members


def test_connecting_clients_one_after_another_cost_each_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """A connection storm is linear: the 100th client's subscribe costs what the first one's did."""
    bus = Bus()
    topics = [f"dev{d}/stream{s}" for d in range(10) for s in range(10)]
    for topic in topics:
        bus.publish(topic, led())
    calls = count_matches(monkeypatch)

    def join_costs(pattern: str) -> list[int]:
        """The pattern matches each of 100 clients subscribing to `pattern` makes, one after another."""
        costs = []
        for index in range(100):
            before = calls[0]
            bus.subscribe(Subscriber(f"{pattern}-{index}", "json"), [pattern], None)
            for topic in topics:
                bus.publish(topic, led())
            costs.append(calls[0] - before)
        return costs

    # `**` takes every topic at one interval: the route of every topic, no pattern asked at all.
    assert set(join_costs("**")) == {0}
    # A narrower pattern is routed per topic, and costs each client the same too.
    assert set(join_costs("*/stream3")) == {10}
    # A pattern without a wildcard names its one topic: it is looked up, not matched.
    assert set(join_costs("dev4/stream3")) == {0}


def test_a_client_subscribe_answers_the_matched_topics_from_the_routes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A face's subscribe lists the topics it matches without asking every topic every pattern again."""
    bus = Bus()
    supervisor = Supervisor(bus, SupervisorConfig(), ())
    hub = Hub(bus, supervisor, CommandRouter(supervisor, lambda *_: None), ServerConfig(), ())
    topics = [f"dev{d}/stream{s}" for d in range(10) for s in range(10)]
    for topic in topics:
        bus.publish(topic, led())
    client = Client(hub, "127.0.0.1", "json")
    patterns = ["dev1/*", "**/stream3", "dev2/stream5", *(f"none{k}/*" for k in range(61))]
    # What asking every topic every pattern gives, in the same (sorted) order.
    expected = sorted(t for t in topics if any(Pattern.parse(p).matches_parts(t.split("/")) for p in patterns))
    calls = count_matches(monkeypatch)
    subscription, matched = client.subscribe(patterns, None, newest=False)
    assert matched == expected
    assert len(matched) == 20
    # The bus's own routing only: `**/stream3` tries the 10 topics that end in `stream3`, `dev1/*` and
    # `dev2/stream5` their device's 10, the 61 others no topic. Asking every topic every pattern
    # again, as the face did, made up to 6,400 more.
    assert calls[0] <= 3 * 10
    _, again = client.subscribe(["dev9/stream9"], None, newest=False)
    assert again == ["dev9/stream9"]
    assert subscription in client.subscriber.subscriptions
