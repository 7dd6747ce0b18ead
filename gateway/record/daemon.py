"""`[record]`: the daemon records its own bus, as a face with no socket: a subscriber, a command watcher.

On the event loop it only hands references to the writer thread (`McapSink.put`: one append, no
encoding); the thread encodes, compresses, rotates and prunes. Every sample of the configured
patterns, every availability change and, with `commands`, every command of every face and its
answer (through `CommandRouter.watchers`) go into the files. Its counters show on /healthz
(`record`) and /metrics (`hwgw_record_*`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gateway import __version__
from gateway.bus import Bus, DeviceEvent, Outgoing, Subscriber
from gateway.commands import CommandAnswered, CommandRouter, CommandSeen
from gateway.core.config import Config, RecordConfig
from gateway.core.config_digest import config_digest
from gateway.messages import REGISTRY, schema_of
from gateway.record.bag import namer_of
from gateway.record.channels import COMMAND_TOPIC, COMMAND_TYPE, OWN_SCHEMAS, RESULT_TOPIC, RESULT_TYPE
from gateway.record.sink import McapSink, Rotation
from gateway.ros.names import DeviceNaming
from gateway.supervisor import Supervisor

log = logging.getLogger(__name__)


def _schemas() -> dict[str, dict[str, Any]]:
    schemas = {name: schema_of(info.cls) for name, info in REGISTRY.items()}
    schemas.update(OWN_SCHEMAS)
    return schemas


def _plain(value: object) -> bytes:
    return orjson.dumps(value, default=str)


class _Command:
    """A command (or its answer) on its channel; encoded on the writer thread."""

    __slots__ = ("event",)

    def __init__(self, event: CommandSeen | CommandAnswered) -> None:
        self.event = event

    def record(self) -> tuple[str, str, int, int, int, bytes]:
        """The command's or the answer's message."""
        event = self.event
        stamp = round(event.stamp * 1e9)
        if isinstance(event, CommandSeen):
            data = {"command": event.number, "client": event.client_id, "device": event.device,
                    "type": event.type, "data": event.data, "stamp": event.stamp}  # fmt: skip
            return (COMMAND_TOPIC, COMMAND_TYPE, stamp, stamp, event.number, _plain(data))
        error = {"code": event.error_code, "message": event.error_message} if event.error_code else None
        answer = {"command": event.number, "client": event.client_id, "device": event.device, "type": event.type,
                  "ok": error is None, "data": event.result, "error": error, "latency_s": event.latency_s,
                  "stamp": event.stamp}  # fmt: skip
        return (RESULT_TOPIC, RESULT_TYPE, stamp, stamp, event.number, _plain(answer))


class BusRecorder:
    """The daemon's recorder (`[record]`); `start` once the bus exists, `stop` after the devices stopped."""

    def __init__(self, config: Config, bus: Bus, supervisor: Supervisor, router: CommandRouter) -> None:
        self.settings: RecordConfig = config.record
        self.digest = config_digest(config)
        self._bus = bus
        self._supervisor = supervisor
        self._router = router
        self._subscriber = Subscriber("recorder", "json")
        self._subscriber.direct = self._take
        self.sink: McapSink | None = None
        self.error = ""
        self.last_file = ""
        self._known = set(supervisor.devices)

    def start(self) -> None:
        """Open the first file and start taking samples; a failure is logged and shown on /healthz."""
        settings = self.settings
        rotation = Rotation(Path(settings.folder), settings.prefix, settings.max_file_bytes, settings.max_file_s,
                            settings.max_total_bytes)  # fmt: skip
        namer = namer_of(self._namings()) if settings.format == "ros2" else None
        try:
            self.sink = McapSink(rotation, _schemas(), settings.compression, settings.chunk_bytes, settings.queue,
                                 self._file_closed, namer)  # fmt: skip
        except OSError as error:
            self.error = f"cannot record to {settings.folder}: {error.strerror or error}"
            log.error("%s", self.error)
            return
        self.sink.metadata("hwgateway", self._metadata())
        self._bus.subscribe(self._subscriber, settings.topics, None)  # also attaches: availability comes too
        if settings.commands:
            self._router.watchers.append(self._command)
        log.info("recording the bus to %s", self.sink.path)

    def _namings(self) -> list[DeviceNaming]:
        """The devices as the ROS naming rule sees them (a ros2 recording's topics; later ones get its default)."""
        return [
            DeviceNaming(h.id, h.kind, h.config.ros_namespace, tuple(h.adapter.accepts))
            for h in self._supervisor.devices.values()
        ]

    def _file_closed(self, path: Path) -> None:
        self.last_file = str(path)  # runs on the writer thread: one reference assignment

    def _metadata(self) -> dict[str, str]:
        devices = [
            {"id": h.id, "kind": h.kind, "publishes": list(h.adapter.publishes), "accepts": list(h.adapter.accepts)}
            for h in self._supervisor.devices.values()
        ]
        return {
            "gateway_version": __version__,
            "config_digest": self.digest,
            "devices": orjson.dumps(devices).decode(),
            "patterns": orjson.dumps(list(self.settings.topics)).decode(),
            "commands": "recorded: every face's commands on _gateway/command, answers on _gateway/command_result"
            if self.settings.commands
            else "not recorded ([record] commands = false)",
        }

    def _take(self, item: Outgoing) -> bool:
        """The subscriber's direct path: every sample and event goes to the writer thread (or is dropped, counted)."""
        sink = self.sink
        if sink is not None:
            if type(item) is DeviceEvent and item.device not in self._known:
                self._known.add(item.device)  # a device added at run time (MQTT import): new metadata
                sink.metadata("hwgateway", self._metadata())
            sink.put(item)
        return True

    def _command(self, event: CommandSeen | CommandAnswered) -> None:
        if self.sink is not None:
            self.sink.put(_Command(event))

    async def stop(self) -> None:
        """Stop taking samples, write what is queued and close the file cleanly (off the loop)."""
        if self._command in self._router.watchers:
            self._router.watchers.remove(self._command)
        self._bus.detach(self._subscriber)
        sink = self.sink
        if sink is None:
            return
        try:
            await asyncio.to_thread(sink.close)
        except Exception as error:
            self.error = f"{type(error).__name__}: {error}"
        log.info("recording stopped: %d messages, %d dropped, last file %s", sink.written, sink.dropped, sink.path)

    def health(self) -> dict[str, Any]:
        """The recorder's state for /healthz."""
        sink = self.sink
        if sink is None:
            return {"recording": False, "folder": self.settings.folder, "error": self.error}
        return {
            "recording": not sink.error and not self.error,
            "folder": self.settings.folder,
            "format": self.settings.format,
            "file": str(sink.path),
            "written": sink.written,
            "dropped": sink.dropped,
            "queued": sink.queued,
            "bytes": sink.bytes_written,
            "files_closed": sink.files_closed,
            "files_removed": sink.files_removed,
            "error": sink.error or self.error,
        }

    def collector(self) -> Collector:
        """Prometheus metrics of the recorder."""
        return _RecordCollector(self.health)


class _RecordCollector(Collector):
    def __init__(self, health: Callable[[], dict[str, Any]]) -> None:
        self._health = health

    def collect(self) -> Iterator[Metric]:
        state = self._health()
        yield GaugeMetricFamily("hwgw_record_recording", "1 while the daemon records", value=float(state["recording"]))
        for name, key, text in (
            ("hwgw_record_written", "written", "Messages written to the recording"),
            ("hwgw_record_dropped", "dropped", "Messages dropped because the writer queue was full"),
            ("hwgw_record_files_closed", "files_closed", "Recording files completed (rotation, stop)"),
            ("hwgw_record_files_removed", "files_removed", "Old recording files removed (max_total_bytes)"),
        ):
            yield CounterMetricFamily(name, text, value=state.get(key, 0))
        yield GaugeMetricFamily(
            "hwgw_record_queued", "Messages waiting for the writer thread", value=state.get("queued", 0)
        )
        yield GaugeMetricFamily("hwgw_record_bytes", "Bytes written to recordings", value=state.get("bytes", 0))
