"""The bus: latest value per topic, pattern subscriptions, and per-subscriber coalescing mailboxes.

A producer calls `Bus.publish` and never waits. Subscribers that receive the same samples rendered
alike (equal subscriptions, the same face and encoding) form a fan-out `Group`: the bus hands a sample
to the group once, and the face writes the group's samples of one event-loop iteration to all its
members together. A sample goes straight to every other subscriber whose client keeps up
(`Subscriber.direct`). For a client that has fallen behind, or a rate-limited subscription, it goes
to the subscriber's mailbox with one slot per key (a topic, or a device's availability): a newer
value replaces an unsent older one, so a slow client skips stale samples, always receives the newest,
and its memory is bounded by the number of topics. Each sample is encoded at most once per encoding,
however many subscribers receive it.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from gateway.messages import to_plain, type_name
from gateway.topics import Pattern, check_topic, matches_parsed, parse_patterns

DeviceStatus = Literal["connecting", "connected", "disconnected", "stopped"]

#: How many sample frames were rendered, per face and encoding (shows that fan-out encodes once).
FRAMES_ENCODED: Counter[str] = Counter()


class Outgoing(Protocol):
    """Something a subscriber's mailbox can hold: keyed, and rendered by each face once per encoding.

    The bus knows no face's wire shape: a face renders an item into its own bytes and caches them
    on the item (`encoded`), so that every client of that face and encoding shares one render.
    """

    #: What each face rendered of this item so far, by the key it gave (`encoded`); read it first on a hot path.
    frames: dict[str, bytes]

    @property
    def key(self) -> str:
        """The mailbox slot: a newer item with the same key replaces an unsent older one."""

    def encoded(self, key: str, build: Callable[[], bytes]) -> bytes:
        """The bytes `build` makes for this item, built once per `key` however many clients send them.

        The key names the face and its encoding (the native face's keys are its encodings).
        """


class Group(Protocol):
    """Subscribers that receive the same samples rendered alike: the bus hands each sample to it once."""

    def add(self, item: Outgoing) -> None:
        """Take `item` for every member (the face writes it to them at the end of the iteration)."""


@dataclass(slots=True, eq=False)
class Sample:
    """One published message with its topic, per-topic `seq` and times (seconds since the epoch).

    `stamp` is the device's time of the sample, `recv_stamp` the gateway's time of receipt.
    """

    topic: str
    type: str
    seq: int
    stamp: float
    recv_stamp: float
    message: Any
    _plain: dict[str, Any] | None = None
    frames: dict[str, bytes] = field(default_factory=dict, repr=False)

    @property
    def key(self) -> str:
        """Samples are keyed by topic."""
        return self.topic

    def data(self) -> dict[str, Any]:
        """The message as plain data (converted once)."""
        if self._plain is None:
            self._plain = to_plain(self.message)
        return self._plain

    def encoded(self, key: str, build: Callable[[], bytes]) -> bytes:
        """The bytes `build` makes, built once per `key` (counted in `FRAMES_ENCODED`)."""
        cached = self.frames.get(key)
        if cached is None:
            cached = self.frames[key] = build()
            FRAMES_ENCODED[key] += 1
        return cached


@dataclass(slots=True, eq=False)
class DeviceEvent:
    """A change of a device's availability (`status`, with a human-readable `detail`) or of its lock."""

    device: str
    kind: str
    status: DeviceStatus
    detail: str
    stamp: float
    #: The session id of the client holding the device's exclusive control lock (None: unlocked).
    locked_by: str | None = None
    frames: dict[str, bytes] = field(default_factory=dict, repr=False)

    @property
    def key(self) -> str:
        """Availability is keyed per device ('$' never appears in a topic)."""
        return "$device/" + self.device

    def encoded(self, key: str, build: Callable[[], bytes]) -> bytes:
        """The bytes `build` makes, built once per `key`."""
        cached = self.frames.get(key)
        if cached is None:
            cached = self.frames[key] = build()
        return cached


@dataclass(frozen=True, slots=True)
class Subscription:
    """Patterns a subscriber asked for, and the minimum interval between sends (0: every sample)."""

    id: int
    patterns: tuple[str, ...]
    min_interval: float
    #: `patterns` parsed once (`Subscription.of` fills it).
    parsed: tuple[Pattern, ...]
    #: True when one of its patterns matches every topic (`**`).
    everything: bool = False

    @classmethod
    def of(cls, subscription_id: int, patterns: tuple[str, ...], min_interval: float) -> Subscription:
        """A subscription with its patterns checked and parsed; `InvalidArgument` names a bad one."""
        parsed = parse_patterns(patterns)
        # A list, not a generator: one frame, not one resumption per pattern.
        return cls(subscription_id, patterns, min_interval, parsed, not all([p.fixed for p in parsed]))

    def matches(self, topic: str) -> bool:
        """True when any pattern matches `topic`."""
        return matches_parsed(self.parsed, topic)


class Route:
    """Who receives one topic's samples: the fan-out groups, and the subscribers served one by one.

    A subscribe, unsubscribe, detach or regroup changes only the routes of the topics it concerns,
    one entry at a time, in time independent of how many others receive the topic: a group is
    counted (its `add` is walked once however many members it has), a subscriber served one by one
    is appended. `Bus.publish` walks `groups` and `singles` as they are; an entry leaving replaces
    the list it leaves rather than changing it, so a subscriber that goes away during a publication
    (its write failed) cannot upset the walk.
    """

    __slots__ = ("_group_members", "groups", "members", "singles")

    def __init__(self) -> None:
        #: Subscriber -> (its send interval for this topic (s; 0: every sample), the group it is
        #: served through, or None when it is served one by one).
        self.members: dict[Subscriber, tuple[float, Group | None]] = {}
        self.groups: tuple[Callable[[Outgoing], None], ...] = ()
        self.singles: list[tuple[Subscriber, float]] = []
        self._group_members: dict[Group, int] = {}

    def put(self, subscriber: Subscriber, interval: float) -> None:
        """Route the topic to `subscriber` at `interval` (s), through its group when it takes every sample."""
        group = subscriber.group if not interval else None
        if self.members.get(subscriber) == (interval, group):
            return
        self.remove(subscriber)
        self.members[subscriber] = (interval, group)
        if group is None:
            self.singles.append((subscriber, interval))
            return
        count = self._group_members.get(group, 0)
        self._group_members[group] = count + 1
        if not count:
            self.groups = (*self.groups, group.add)

    def remove(self, subscriber: Subscriber) -> None:
        """Stop routing the topic to `subscriber` (nothing when it is not routed)."""
        entry = self.members.pop(subscriber, None)
        if entry is None:
            return
        group = entry[1]
        if group is None:
            self.singles = [single for single in self.singles if single[0] is not subscriber]
            return
        count = self._group_members[group] - 1
        if count:
            self._group_members[group] = count
        else:
            del self._group_members[group]
            self.groups = tuple(other.add for other in self._group_members)


class Subscriber:
    """A client's view of the bus: its subscriptions and its coalescing mailbox."""

    def __init__(self, name: str, encoding: str, clock: Callable[[], float] = time.monotonic) -> None:
        """`clock` (s) is the time `take_due` is given: the outbox passes `time.monotonic()`; tests their own."""
        self.name = name
        self._clock = clock
        #: The encoding of the face serving this subscriber (informational: faces frame items themselves).
        self.encoding = encoding
        #: Writes an item to the client at once, or returns False when the client is backed up.
        self.direct: Callable[[Outgoing], bool] | None = None
        self.subscriptions: dict[int, Subscription] = {}
        self.wakeup = asyncio.Event()
        #: Called after what this subscriber receives changed (subscribe, unsubscribe, detach).
        self.on_change: Callable[[], None] | None = None
        #: Items its face wrote to the client that `_delivered` does not count yet: a fan-out group
        #: counts its rounds once for all its members, and a member's share here until it leaves.
        self.uncounted: Callable[[], int] | None = None
        self._delivered = 0
        self.coalesced = 0
        self.dropped = 0
        self._pending: OrderedDict[str, Outgoing] = OrderedDict()
        self._intervals: dict[str, float] = {}
        self._not_before: dict[str, float] = {}
        self._bus: Bus | None = None
        self._group: Group | None = None
        #: Topic -> the ids of this subscriber's subscriptions that match it, with their send
        #: interval (s): the topics whose routes hold this subscriber, and why. Empty while `wide`.
        self.routed: dict[str, dict[int, float]] = {}
        #: True while it receives every topic at one interval through the bus's route of all topics
        #: (a `**` subscription at its shortest interval): no topic's own route holds it.
        self.wide = False
        #: Ids of the subscriptions that match no published topic yet (they receive nothing, so they
        #: do not set the fan-out group: a client's short-lived or early subscription keeps it in its group).
        self.idle: set[int] = set()

    @property
    def delivered(self) -> int:
        """Items sent to the client so far (what its face's fan-out group wrote to it included)."""
        uncounted = self.uncounted
        return self._delivered + (uncounted() if uncounted is not None else 0)

    def count_delivered(self, items: int) -> None:
        """Count `items` sent to the client by its face (a fan-out group's rounds, when it leaves it)."""
        self._delivered += items

    @property
    def depth(self) -> int:
        """Items waiting to be sent."""
        return len(self._pending)

    @property
    def bus(self) -> Bus | None:
        """The bus this subscriber is attached to (None: detached)."""
        return self._bus

    @property
    def group(self) -> Group | None:
        """The fan-out group that takes this subscriber's samples (None: it takes them itself)."""
        return self._group

    def set_group(self, group: Group | None) -> None:
        """Have `group` take this subscriber's samples from the next publication on (None: one by one).

        The face that sets it guarantees that every member of a group has the same `fanout_signature`
        and renders items alike.
        """
        if group is not self._group:
            self._group = group
            if self._bus is not None:
                self._bus.regroup(self)

    def fanout_signature(self) -> frozenset[str] | None:
        """What this subscriber receives, as the patterns of its subscriptions that match a topic.

        Subscribers with equal signatures receive exactly the same samples. Subscriptions that match
        no published topic yet are left out while another one does (the bus calls `changed` when one
        first matches): a client's short-lived subscription keeps it in its group. When none matches
        a topic yet, all of them count. None when it is detached, subscribed to nothing, or holds a
        rate-limited subscription that counts (its own timing).
        """
        if self._bus is None or not self.subscriptions:
            return None
        counted = [sub for sub in self.subscriptions.values() if sub.id not in self.idle]
        patterns: set[str] = set()
        for subscription in counted or self.subscriptions.values():
            if subscription.min_interval:
                return None
            patterns.update(subscription.patterns)
        return frozenset(patterns)

    def changed(self) -> None:
        """Tell the face that what this subscriber receives changed."""
        if self.on_change is not None:
            self.on_change()

    def offer(self, item: Outgoing, min_interval: float = 0.0) -> None:
        """Send `item` now if the client keeps up, else put it in its slot (replacing an unsent older one)."""
        # The mailbox is only for a client that is behind: one that keeps up gets every sample.
        if not min_interval and not self._pending and self.direct is not None and self.direct(item):
            self._delivered += 1
            return
        self.enqueue(item, min_interval)

    def enqueue(self, item: Outgoing, min_interval: float = 0.0) -> None:
        """Put `item` in its mailbox slot (replacing an unsent older one) and wake the writer."""
        key = item.key
        was_pending = key in self._pending
        if was_pending:
            self.coalesced += 1
        self._pending[key] = item
        if min_interval:
            self._intervals[key] = min_interval
            # A slot already held back has its wake-up timer set; only a new one needs the writer.
            if was_pending and self._not_before.get(key, 0.0) > self._clock():
                return
        else:
            self._intervals.pop(key, None)
        self.wakeup.set()

    def take_due(self, now: float) -> tuple[list[Outgoing], float | None]:
        """Remove the items allowed to go now; also return when the next held-back item is due."""
        due: list[Outgoing] = []
        next_due: float | None = None
        for key in list(self._pending):
            not_before = self._not_before.get(key, 0.0)
            if not_before > now:
                next_due = not_before if next_due is None else min(next_due, not_before)
                continue
            due.append(self._pending.pop(key))
            interval = self._intervals.get(key)
            if interval:
                self._not_before[key] = now + interval
        self._delivered += len(due)
        return due, next_due

    def discard(self) -> None:
        """Drop everything unsent (the client is gone); counted as dropped."""
        self.dropped += len(self._pending)
        self._pending.clear()

    def forget_unmatched(self) -> None:
        """Drop unsent samples of topics that no subscription matches any more."""
        if self.wide:
            return
        for key in list(self._pending):
            if not key.startswith("$") and key not in self.routed:
                del self._pending[key]
                self._intervals.pop(key, None)
                self._not_before.pop(key, None)

    def interval_for(self, topic: str) -> float | None:
        """The send interval for `topic`, or None when no subscription matches it."""
        intervals = [sub.min_interval for sub in self.subscriptions.values() if sub.matches(topic)]
        return min(intervals) if intervals else None


class Bus:
    """Topics, their latest samples, and the subscribers that receive them."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        #: Per published topic, its last sample (whose `seq` counts the topic's samples).
        self._latest: dict[str, Sample] = {}
        self._subscribers: set[Subscriber] = set()
        #: Per published topic: who receives it (besides `_everything`'s subscribers).
        self._routes: dict[str, Route] = {}
        #: Who receives every topic at one interval (`Subscriber.wide`): a `**` subscriber joins or
        #: leaves this one route, not one per topic, so a connection storm costs each join the same.
        self._everything = Route()
        #: First segment (device id) -> its published topics: where a pattern naming a device can match.
        self._topics_by_first: defaultdict[str, list[str]] = defaultdict(list)
        #: Last segment (a stream's name) -> its published topics: where `*/state` can match.
        self._topics_by_last: defaultdict[str, list[str]] = defaultdict(list)
        self._ids = itertools.count(1)

    @property
    def published(self) -> dict[str, int]:
        """Samples published so far, per topic (a copy)."""
        return {topic: sample.seq for topic, sample in self._latest.items()}

    def publish(self, topic: str, message: Any, stamp: float | None = None) -> Sample:
        """Publish `message` on `topic`; `stamp` is the device's time (seconds since the epoch)."""
        # The topic's count is its last sample's seq, not an entry of its own: one dict lookup and one
        # store a publish, where a seq table and a counter took two more.
        now = self._clock()
        latest = self._latest
        previous = latest.get(topic)
        if previous is None:
            check_topic(topic)
            seq = 1
        else:
            seq = previous.seq + 1
        sample = latest[topic] = Sample(topic, type_name(message), seq, now if stamp is None else stamp, now, message)
        route = self._routes.get(topic)
        if route is None:
            route = self._route(topic)
        for each in (route, self._everything):
            for add in each.groups:
                add(sample)
            for subscriber, interval in each.singles:
                # `Subscriber.offer` inlined: this loop runs once per sample per client.
                if not interval and not subscriber._pending:
                    direct = subscriber.direct
                    if direct is not None and direct(sample):
                        subscriber._delivered += 1
                        continue
                subscriber.enqueue(sample, interval)
        return sample

    def device_event(self, event: DeviceEvent) -> None:
        """Tell every attached subscriber about a device's availability."""
        for subscriber in self._subscribers:
            subscriber.offer(event)

    def latest(self, topic: str) -> Sample | None:
        """The last sample published on `topic`."""
        return self._latest.get(topic)

    def topics(self, prefix: str = "") -> list[str]:
        """Known topics (those published at least once), optionally under `prefix`."""
        return sorted(topic for topic in self._latest if topic.startswith(prefix))

    def attach(self, subscriber: Subscriber) -> None:
        """Start delivering device events to `subscriber`."""
        self._add(subscriber)

    def detach(self, subscriber: Subscriber) -> None:
        """Stop delivering anything to `subscriber` and drop what it had pending."""
        self._subscribers.discard(subscriber)
        subscriber.discard()
        subscriber._bus = None
        self._unroute(subscriber)
        self._everything.remove(subscriber)
        subscriber.wide = False
        subscriber.changed()

    def regroup(self, subscriber: Subscriber) -> None:
        """Route `subscriber`'s topics through its new fan-out group (or one by one)."""
        if subscriber.wide:
            self._everything.put(subscriber, self._everything.members[subscriber][0])
        for topic, matched in subscriber.routed.items():
            self._routes[topic].put(subscriber, min(matched.values()))

    def matched_topics(self, subscriber: Subscriber, subscription_id: int) -> list[str]:
        """The published topics `subscriber`'s subscription `subscription_id` matches, from the routes."""
        if not subscriber.wide:
            return [topic for topic, ids in subscriber.routed.items() if subscription_id in ids]
        subscription = subscriber.subscriptions.get(subscription_id)
        if subscription is None:
            return []
        return list(self._routes) if subscription.everything else self._candidates(subscription)

    def subscribe(
        self, subscriber: Subscriber, patterns: Iterable[str], max_rate_hz: float | None, newest: bool = True
    ) -> int:
        """Subscribe to `patterns`; the latest sample of every matching topic is queued at once (if `newest`)."""
        subscription = Subscription.of(next(self._ids), tuple(patterns), 1.0 / max_rate_hz if max_rate_hz else 0.0)
        subscriber.subscriptions[subscription.id] = subscription
        if subscriber._bus is self:
            self._place(subscriber, subscription)
        else:
            self._add(subscriber)  # routes what it holds, this one included
        subscriber.changed()
        if not newest:
            return subscription.id
        # No await between registering and the snapshot, so no sample falls in between. Every
        # published topic has a route, so the routes already say which topics this one matches.
        if subscriber.wide:
            interval = self._everything.members[subscriber][0]
            for topic in self.matched_topics(subscriber, subscription.id):
                subscriber.offer(self._latest[topic], interval)
            return subscription.id
        for topic, matched in subscriber.routed.items():
            if subscription.id in matched:
                subscriber.offer(self._latest[topic], self._routes[topic].members[subscriber][0])
        return subscription.id

    def unsubscribe(self, subscriber: Subscriber, subscription_id: int) -> bool:
        """Remove one subscription and what it left unsent; False when the subscriber has no such id."""
        subscription = subscriber.subscriptions.pop(subscription_id, None)
        if subscription is None:
            return False
        subscriber.idle.discard(subscription_id)
        for topic, matched in list(subscriber.routed.items()):
            interval = matched.pop(subscription_id, None)
            if interval is None:
                continue
            route = self._routes[topic]
            if not matched:
                del subscriber.routed[topic]
                route.remove(subscriber)
            elif interval == route.members[subscriber][0] and interval not in matched.values():
                # It held the topic's (least) interval alone: the next least is the topic's now.
                route.put(subscriber, min(matched.values()))
        if subscriber._bus is self:
            self._place(subscriber, None)
        subscriber.forget_unmatched()
        subscriber.changed()
        return True

    @property
    def subscribers(self) -> frozenset[Subscriber]:
        """The attached subscribers."""
        return frozenset(self._subscribers)

    def _add(self, subscriber: Subscriber) -> None:
        if subscriber._bus is not self:
            self._subscribers.add(subscriber)
            subscriber._bus = self
            # Attached again after a detach: what it still holds is routed again.
            self._place(subscriber, None, every=True)

    @staticmethod
    def _wide_interval(subscriber: Subscriber) -> float | None:
        """The interval (s) at which `subscriber` receives every topic, when one does; else None.

        It does when it holds a subscription matching every topic (`**`) whose interval is its
        shortest: every topic's interval (the least of its matching subscriptions') is then that one.
        """
        everything: float | None = None
        shortest = float("inf")
        for subscription in subscriber.subscriptions.values():
            shortest = min(shortest, subscription.min_interval)
            if subscription.everything and (everything is None or subscription.min_interval < everything):
                everything = subscription.min_interval
        return everything if everything is not None and everything <= shortest else None

    def _place(self, subscriber: Subscriber, added: Subscription | None, every: bool = False) -> None:
        """Route `subscriber` after its subscriptions changed: `added` was just added (None: one left).

        A subscriber that receives every topic at one interval is routed once, through `_everything`;
        any other through each matched topic's route, `added` alone (or `every` subscription) routed
        anew. Moving between the two routes all it holds again: that happens when its `**`
        subscription comes or goes, not on a dashboard's churn of narrower ones.
        """
        interval = self._wide_interval(subscriber)
        if interval is None and subscriber.wide:
            self._everything.remove(subscriber)
            subscriber.wide = False
            every = True
        elif interval is not None and not subscriber.wide:
            self._unroute(subscriber)
            subscriber.wide = True
        fresh = list(subscriber.subscriptions.values()) if every else [added] if added is not None else []
        if interval is None:
            for subscription in fresh:
                self._route_subscription(subscriber, subscription)
            return
        self._everything.put(subscriber, interval)
        for subscription in fresh:
            matches = bool(self._routes) if subscription.everything else bool(self._candidates(subscription))
            if matches:
                subscriber.idle.discard(subscription.id)
            else:
                subscriber.idle.add(subscription.id)

    def _unroute(self, subscriber: Subscriber) -> None:
        """Take `subscriber` out of every topic's own route."""
        for topic in subscriber.routed:
            self._routes[topic].remove(subscriber)
        subscriber.routed.clear()

    def _route(self, topic: str) -> Route:
        """Make the route of a topic published for the first time: every subscription is asked once."""
        route = self._routes[topic] = Route()
        parts = topic.split("/")
        self._topics_by_first[parts[0]].append(topic)
        self._topics_by_last[parts[-1]].append(topic)
        woken: list[Subscriber] = []
        for subscriber in self._subscribers:
            if subscriber.wide:
                # Routed through `_everything` already: only a subscription that matched nothing
                # yet may wake.
                if subscriber.idle:
                    ids = {i for i in subscriber.idle if subscriber.subscriptions[i].matches(topic)}
                    if ids:
                        subscriber.idle.difference_update(ids)
                        woken.append(subscriber)
                continue
            matched = {
                subscription.id: subscription.min_interval
                for subscription in subscriber.subscriptions.values()
                if any(pattern.matches_parts(parts) for pattern in subscription.parsed)
            }
            if matched:
                subscriber.routed[topic] = matched
                route.put(subscriber, min(matched.values()))
                if not subscriber.idle.isdisjoint(matched):
                    subscriber.idle.difference_update(matched)
                    woken.append(subscriber)
        # A subscription that matched nothing now does: the subscriber's fan-out signature changed,
        # and its face moves it to its new group (this route included) before the first sample.
        for subscriber in woken:
            subscriber.changed()
        return route

    def _route_subscription(self, subscriber: Subscriber, subscription: Subscription) -> None:
        """Add `subscription` to the routes of the published topics it matches.

        Its cost is its own patterns times the topics they may match (a pattern whose first or last
        segment is literal is tried only on the topics that have it), whatever the other subscribers
        hold.
        """
        topics = self._candidates(subscription)
        if not topics:
            subscriber.idle.add(subscription.id)
            return
        subscriber.idle.discard(subscription.id)
        interval = subscription.min_interval
        for topic in topics:
            route = self._routes[topic]
            matched = subscriber.routed.get(topic)
            if matched is None:
                subscriber.routed[topic] = {subscription.id: interval}
                route.put(subscriber, interval)
                continue
            matched[subscription.id] = interval
            # The topic's interval is the least of its subscriptions': only a shorter one changes it.
            if interval < route.members[subscriber][0]:
                route.put(subscriber, interval)

    def _candidates(self, subscription: Subscription) -> list[str]:
        """The published topics `subscription` matches, trying each pattern only where it can match."""
        found: dict[str, None] = {}
        for pattern in subscription.parsed:
            topics: Iterable[str]
            if pattern.literal:
                # `parse_pattern` keeps a literal pattern's text as it is: it names its one topic.
                if pattern.text in self._routes:
                    found[pattern.text] = None
                continue
            if pattern.first is not None:
                topics = self._topics_by_first.get(pattern.first, ())
            elif pattern.last is not None:
                topics = self._topics_by_last.get(pattern.last, ())
            else:
                topics = self._routes
            for topic in topics:
                if topic not in found and pattern.matches_parts(topic.split("/")):
                    found[topic] = None
        return list(found)
