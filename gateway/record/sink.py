"""The MCAP writer on its own thread, fed by a bounded inbox so the caller's loop never waits.

The PyPI `mcap` writer compresses each chunk on the calling thread (about 9 ms per MiB with zstd),
so it runs here instead. The caller only appends to a deque (no lock, no thread wake-up per
message); the thread drains it in batches every `_POLL_S`. When the inbox holds `queue_size` items a
new one is dropped and counted, never waited for. Encoding to JSON happens on the thread too.

With a `Rotation`, files go to a folder and the thread starts the next file once the current one
reaches `max_file_bytes` (at a chunk boundary) or is `max_file_s` old; each file is closed cleanly
(summary and footer) and carries the metadata and the last availability of every device, so any file
reads alone. The oldest files are removed while the folder's recordings exceed `max_total_bytes`.

Schemas and messages are written in the viewer form (`gateway.messages.shapes`): Foxglove and
Lichtblick refuse a schema with an array of arrays, so each inner array of the few types that hold
one is stored as `{"values": [...]}` (those messages are re-encoded on this thread; every other
message is written as it comes). The replay reads both forms.

With a `namer` (the ROS naming rule of the recorded devices) the sink writes a ros2 bag instead
(`gateway.record.bag`): the target (or, rotated, `<folder>/<prefix>_<UTC time>/`) is the bag
directory, its files split at the same limits, and the pruning removes older bags whole, then the
oldest files of the bag being written.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson
from mcap.well_known import MessageEncoding, SchemaEncoding
from mcap.writer import CompressionType, Writer

from gateway.bus import DeviceEvent, Sample
from gateway.messages.shapes import Reshape, outward, viewer_schema
from gateway.record import DEFAULT_CHUNK_BYTES, DEFAULT_QUEUE
from gateway.record.bag import Bag, BagFile, Namer, bag_name, prune_bags
from gateway.record.channels import DEVICE_TOPIC, DEVICE_TYPE

log = logging.getLogger(__name__)

COMPRESSIONS = {"zstd": CompressionType.ZSTD, "lz4": CompressionType.LZ4, "none": CompressionType.NONE}
#: Seconds the writer thread sleeps when its inbox is empty (batches the loop's messages).
_POLL_S = 0.02

#: (topic, type, log time ns, publish time ns, sequence, JSON bytes)
Record = tuple[str, str, int, int, int, bytes]


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


@dataclass(frozen=True, slots=True)
class Encoded:
    """A message already encoded as JSON (`data`), with its channel's topic and type and its times in ns."""

    topic: str
    type: str
    log_time_ns: int
    publish_time_ns: int
    sequence: int
    data: bytes

    def record(self) -> Record:
        """The message as the writer takes it."""
        return (self.topic, self.type, self.log_time_ns, self.publish_time_ns, self.sequence, self.data)


@dataclass(frozen=True, slots=True)
class StateText:
    """A `state` push as a client received it (JSON text); parsed and re-encoded on the writer thread."""

    text: str | bytes

    def record(self) -> Record:
        """The push's data on its topic: log time = `recv_stamp`, publish time = `stamp`, sequence = `seq`."""
        state = orjson.loads(self.text)
        return (state["topic"], state["type"], _ns(state["recv_stamp"]), _ns(state["stamp"]), state["seq"],
                orjson.dumps(state["data"]))  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Metadata:
    name: str
    values: dict[str, str]


@dataclass(frozen=True, slots=True)
class Rotation:
    """Recording into `folder` as `<prefix>-<UTC time>-<n>.mcap`, rotated and pruned.

    `max_file_bytes` (0: no limit) starts the next file at the first chunk boundary past it;
    `max_file_s` (0: no limit) starts it when the file is that many seconds old; `max_total_bytes`
    (0: keep all) removes the oldest of the folder's recordings (this prefix) while they exceed it.
    """

    folder: Path
    prefix: str = "hwgateway"
    max_file_bytes: int = 0
    max_file_s: float = 0.0
    max_total_bytes: int = 0

    def recordings(self) -> list[Path]:
        """The recordings of this prefix in the folder, oldest first (names sort by time)."""
        return sorted(self.folder.glob(f"{self.prefix}-*.mcap"))

    def next_path(self, number: int) -> Path:
        """The name of the next file."""
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        return self.folder / f"{self.prefix}-{stamp}-{number:04d}.mcap"

    def prune(self, keep: Path | None) -> list[Path]:
        """Remove the oldest recordings (never `keep`) while the total exceeds `max_total_bytes`."""
        if not self.max_total_bytes:
            return []
        files = [(path, _size(path)) for path in self.recordings()]
        total = sum(size for _, size in files)
        removed = []
        for path, size in files:
            if total <= self.max_total_bytes:
                break
            if path == keep:
                continue
            try:
                path.unlink()
            except OSError as error:
                log.warning("cannot remove old recording %s: %s", path, error)
                continue
            total -= size
            removed.append(path)
        return removed


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


class _File:
    """One open MCAP file: its writer, registered schemas and channels."""

    def __init__(
        self,
        path: Path,
        schemas: dict[str, dict[str, Any]],
        reshapes: dict[str, Reshape],
        compression: str,
        chunk_bytes: int,
    ) -> None:
        self.path = path
        self.opened = time.monotonic()
        self._schemas = schemas
        self._reshapes = reshapes
        self.file: BinaryIO = open(path, "wb")  # noqa: SIM115 - closed by close()
        self.writer = Writer(self.file, chunk_size=chunk_bytes, compression=COMPRESSIONS[compression])
        self.writer.start(profile="", library="hwgateway")
        self._schema_ids: dict[str, int] = {}
        self._channels: dict[str, int] = {}

    @property
    def channels(self) -> int:
        """Channels registered in this file."""
        return len(self._channels)

    def write(self, record: Record) -> None:
        """Add one message, registering its channel (and schema) on first use."""
        topic, type_, log_ns, publish_ns, sequence, data = record
        reshape = self._reshapes.get(type_)
        if reshape is not None:
            data = orjson.dumps(reshape(orjson.loads(data)))
        channel = self._channels.get(topic)
        if channel is None:
            channel = self._channels[topic] = self.writer.register_channel(
                topic, MessageEncoding.JSON, self._schema_id(type_), {"type": type_}
            )
        self.writer.add_message(channel, log_time=log_ns, data=data, publish_time=publish_ns,
                                sequence=sequence & 0xFFFFFFFF)  # fmt: skip

    def write_sample(self, sample: Sample) -> None:
        """Add one bus sample."""
        self.write(_sample_record(sample))

    def _schema_id(self, type_: str) -> int:
        schema_id = self._schema_ids.get(type_)
        if schema_id is None:
            schema = self._schemas.get(type_)
            if schema is None:
                return 0  # no schema known: Foxglove shows schemaless JSON
            data = orjson.dumps({"title": type_, **schema})
            schema_id = self._schema_ids[type_] = self.writer.register_schema(type_, SchemaEncoding.JSONSchema, data)
        return schema_id

    def close(self) -> None:
        """Write the summary and footer and close the file."""
        try:
            self.writer.finish()  # type: ignore[no-untyped-call]
        finally:
            self.file.close()


def _device_record(event: DeviceEvent) -> Record:
    """A device event as the recording keeps it: its fields (docs: the `_gateway/device` topic)."""
    stamp = _ns(event.stamp)
    availability = {
        "device": event.device,
        "kind": event.kind,
        "status": event.status,
        "detail": event.detail,
        "stamp": event.stamp,
        "locked_by": event.locked_by,
    }
    return (DEVICE_TOPIC, DEVICE_TYPE, stamp, stamp, 0, orjson.dumps(availability))


def _sample_record(sample: Sample) -> Record:
    return (sample.topic, sample.type, _ns(sample.recv_stamp), _ns(sample.stamp), sample.seq,
            orjson.dumps(sample.data()))  # fmt: skip


class McapSink:
    """Writes messages to an MCAP file (or a rotated folder of them) from a thread; `put` never blocks.

    `target` is one file's path or a `Rotation`. `schemas` maps a message type to its JSON Schema in
    our form (stored in the viewer form; a channel of an unknown type gets none); `compression` is
    "zstd", "lz4" or "none"; `chunk_bytes` is the uncompressed chunk size; `queue_size` the inbox's
    capacity in messages.
    Items: a bus `Sample` or `DeviceEvent`, or anything with `record() -> Record` (`Encoded`,
    `StateText`). `on_file_closed(path)` runs on the writer thread after each file is complete.
    `namer` (a bus topic's ROS name, None when it has none): write a ros2 bag (see the module).
    """

    def __init__(
        self,
        target: str | Path | Rotation,
        schemas: dict[str, dict[str, Any]],
        compression: str = "zstd",
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        queue_size: int = DEFAULT_QUEUE,
        on_file_closed: Callable[[Path], None] | None = None,
        namer: Namer | None = None,
    ) -> None:
        self.rotation = target if isinstance(target, Rotation) else None
        self._single = None if isinstance(target, Rotation) else Path(target)
        self.dropped = 0
        self.written = 0
        self.files_closed = 0
        self.files_removed = 0
        self.error: str = ""
        self._capacity = queue_size
        self._inbox: collections.deque[object] = collections.deque()
        self._stop = threading.Event()
        self._schemas = {name: viewer_schema(schema) for name, schema in schemas.items()}
        self._reshapes = {name: reshape for name, schema in schemas.items() if (reshape := outward(schema)) is not None}
        self._compression = compression
        self._chunk_bytes = chunk_bytes
        self._metadata: dict[str, dict[str, str]] = {}
        self._devices: dict[str, Record] = {}
        self._number = 0
        self._on_file_closed = on_file_closed
        self._closed_bytes = 0
        self._bag: Bag | None = None
        if self.rotation is not None:
            self.rotation.folder.mkdir(parents=True, exist_ok=True)
            if namer is None:
                self.files_removed += len(self.rotation.prune(None))
        if namer is not None:
            rotation = self.rotation
            self._bag = Bag(rotation.folder / bag_name(rotation.prefix) if rotation else Path(str(target)), namer)
        self._file: _File | BagFile = self._open()
        if self._bag is not None and self.rotation is not None:
            rotation = self.rotation
            pruned = prune_bags(rotation.folder, rotation.prefix, rotation.max_total_bytes, self._bag, self._file.path)
            self.files_removed += len(pruned)
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"mcap-{self._file.path.name}", daemon=True)
        self._thread.start()

    @property
    def path(self) -> Path:
        """The file being written."""
        return self._file.path

    @property
    def bytes_written(self) -> int:
        """Bytes in the files written so far (compressed chunks land at each chunk's end)."""
        return self._closed_bytes + _size(self._file.path)

    @property
    def channels(self) -> int:
        """Channels registered in the current file."""
        return self._file.channels

    @property
    def queued(self) -> int:
        """Messages waiting for the writer thread."""
        return len(self._inbox)

    def put(self, item: object) -> bool:
        """Queue one item (see the class); False when the inbox was full and it was dropped."""
        if len(self._inbox) >= self._capacity:
            self.dropped += 1
            return False
        self._inbox.append(item)  # deque.append is atomic: no lock on the caller's side
        return True

    def message(self, topic: str, type_: str, log_time_ns: int, publish_time_ns: int, seq: int, data: bytes) -> bool:
        """Queue one JSON-encoded message; False when the inbox was full and it was dropped."""
        return self.put(Encoded(topic, type_, log_time_ns, publish_time_ns, seq, data))

    def metadata(self, name: str, values: dict[str, str]) -> None:
        """Write a metadata record now and at the start of every later file (the newest `values` per name)."""
        self._inbox.append(_Metadata(name, dict(values)))  # never dropped: metadata is rare and must not be lost

    def close(self) -> None:
        """Write what is queued, the summary and the footer, and close the file; re-raise a writer error."""
        self._stop.set()
        self._thread.join()
        if self._failure is not None:
            raise self._failure

    @property
    def skipped(self) -> int:
        """Messages a ros2 bag left out (no ROS 2 type, no ROS name, values CDR cannot hold) in the current file."""
        return self._file.skipped if isinstance(self._file, BagFile) else 0

    @property
    def bag(self) -> Bag | None:
        """The ros2 bag being written (None: JSON MCAP)."""
        return self._bag

    def _open(self) -> _File | BagFile:
        if self._bag is not None:
            return BagFile(self._bag, COMPRESSIONS[self._compression], self._chunk_bytes)
        if self._single is not None:
            return _File(self._single, self._schemas, self._reshapes, self._compression, self._chunk_bytes)
        assert self.rotation is not None
        self._number += 1
        path = self.rotation.next_path(self._number)
        return _File(path, self._schemas, self._reshapes, self._compression, self._chunk_bytes)

    def _run(self) -> None:
        try:
            while True:
                stopping = self._stop.is_set()
                self._drain()
                if stopping:
                    break
                self._file.file.flush()  # the inbox ran dry: a kill now loses little
                self._maybe_rotate()
                self._stop.wait(_POLL_S)
            self._file.close()
            self._closed()
        except BaseException as error:  # reported by close() and `error`; the file stays readable to its last chunk
            self._failure = error
            self.error = f"{type(error).__name__}: {error}"
            log.error("recording to %s failed: %s", self._file.path, self.error)
            self._file.file.close()

    def _drain(self) -> None:
        inbox = self._inbox
        file = self._file
        while inbox:
            item = inbox.popleft()
            kind = type(item)
            if kind is Sample:
                file.write_sample(item)  # type: ignore[arg-type]
            elif kind is DeviceEvent:
                record = _device_record(item)  # type: ignore[arg-type]
                self._devices[item.device] = record  # type: ignore[attr-defined]
                file.write(record)
            elif kind is _Metadata:
                self._metadata[item.name] = item.values  # type: ignore[attr-defined]
                file.writer.add_metadata(item.name, item.values)  # type: ignore[attr-defined]
                if self._bag is not None:
                    self._bag.set_custom(item.name, item.values)  # type: ignore[attr-defined]
                continue
            else:
                record = item.record()  # type: ignore[attr-defined]
                if record[0] == DEVICE_TOPIC:
                    self._devices[record_device(record)] = record
                file.write(record)
            self.written += 1
            if self.rotation is not None and (self.written & 63) == 0:
                self._maybe_rotate()
                file = self._file

    def _maybe_rotate(self) -> None:
        rotation = self.rotation
        if rotation is None:
            return
        current = self._file
        too_big = rotation.max_file_bytes and current.file.tell() >= rotation.max_file_bytes
        too_old = rotation.max_file_s and time.monotonic() - current.opened >= rotation.max_file_s
        if not (too_big or too_old):
            return
        current.close()
        self._closed()
        self._file = self._open()
        for name, values in self._metadata.items():
            self._file.writer.add_metadata(name, values)
        for record in self._devices.values():  # each file says every device's availability
            self._file.write(record)
        if self._bag is not None:
            removed = prune_bags(rotation.folder, rotation.prefix, rotation.max_total_bytes, self._bag, self._file.path)
            self.files_removed += len(removed)
        else:
            self.files_removed += len(rotation.prune(self._file.path))

    def _closed(self) -> None:
        path = self._file.path
        self.files_closed += 1
        if self.rotation is not None:
            self._closed_bytes += _size(path)
        if self._on_file_closed is not None:
            self._on_file_closed(path)


def record_device(record: Record) -> str:
    """The device id of an availability record."""
    device: str = orjson.loads(record[5]).get("device", "")
    return device
