"""Prometheus metrics, read from the live objects at scrape time so the hot path only bumps ints."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gateway.bus import FRAMES_ENCODED
from gateway.core.client import Hub
from gateway.errors import ErrorCode

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class _GatewayCollector(Collector):
    def __init__(self, hub: Hub, loop_lag: Callable[[], float]) -> None:
        self._hub = hub
        self._loop_lag = loop_lag

    def collect(self) -> Iterator[Metric]:
        hub = self._hub
        published = CounterMetricFamily(
            "hwgw_bus_published", "Samples published per topic (rate() gives the topic's rate)", labels=["topic"]
        )
        for topic, count in sorted(hub.bus.published.items()):
            published.add_metric([topic], count)
        yield published

        encoded = CounterMetricFamily("hwgw_frames_encoded", "State frames encoded, per encoding", labels=["encoding"])
        for encoding, count in sorted(FRAMES_ENCODED.items()):
            encoded.add_metric([encoding], count)
        yield encoded

        depth = GaugeMetricFamily(
            "hwgw_client_queue_depth", "Messages waiting in a client's mailbox", labels=["client"]
        )
        delivered = CounterMetricFamily("hwgw_client_delivered", "Messages sent to a client", labels=["client"])
        coalesced = CounterMetricFamily(
            "hwgw_client_coalesced", "Unsent samples replaced by a newer one of their topic", labels=["client"]
        )
        dropped = CounterMetricFamily("hwgw_client_dropped", "Unsent messages dropped at disconnect", labels=["client"])
        for client in sorted((session.client for session in hub.sessions), key=lambda c: c.id):
            subscriber = client.subscriber
            depth.add_metric([client.id], subscriber.depth)
            delivered.add_metric([client.id], subscriber.delivered)
            coalesced.add_metric([client.id], subscriber.coalesced)
            dropped.add_metric([client.id], subscriber.dropped)
        yield from (depth, delivered, coalesced, dropped)
        yield GaugeMetricFamily("hwgw_clients", "Connected clients", value=len(hub.sessions))

        up = GaugeMetricFamily("hwgw_device_connected", "1 while the device is connected", labels=["device", "kind"])
        reconnects = CounterMetricFamily(
            "hwgw_device_reconnects", "Restarts after a connected device failed", labels=["device"]
        )
        for handle in hub.supervisor.devices.values():
            up.add_metric([handle.id, handle.kind], 1.0 if handle.status == "connected" else 0.0)
            reconnects.add_metric([handle.id], handle.reconnects)
        yield from (up, reconnects)
        yield GaugeMetricFamily("hwgw_event_loop_lag_seconds", "Last measured event-loop lag", value=self._loop_lag())


#: The device label of commands for a device id that is not configured (the id is client input).
UNKNOWN_DEVICE_LABEL = "unknown"


class Metrics:
    """The gateway's own Prometheus registry; every label set is bounded by the configuration.

    Command latency is labelled by configured device id (anything else is `unknown`) and by outcome,
    an `ErrorCode` value or `ok`; client series exist only while the client is connected.
    """

    def __init__(self, hub: Hub, loop_lag: Callable[[], float]) -> None:
        self._devices = hub.supervisor.devices
        self._outcomes = frozenset({"ok", *(code.value for code in ErrorCode)})
        self.registry = CollectorRegistry(auto_describe=True)
        self.registry.register(_GatewayCollector(hub, loop_lag))
        self.command_latency = Histogram(
            "hwgw_command_latency_seconds",
            "Time from command receipt to its result, by device and outcome",
            ["device", "outcome"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.started = time.time()

    def observe_command(self, device: str, outcome: str, seconds: float) -> None:
        """Record one command's latency (s); unconfigured device ids count under `unknown`."""
        device_label = device if device in self._devices else UNKNOWN_DEVICE_LABEL
        outcome_label = outcome if outcome in self._outcomes else ErrorCode.INTERNAL_ERROR.value
        self.command_latency.labels(device_label, outcome_label).observe(seconds)

    def render(self) -> bytes:
        """The text exposition format."""
        return generate_latest(self.registry)
