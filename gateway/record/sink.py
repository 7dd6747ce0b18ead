"""The MCAP writer on its own thread, fed by a bounded queue so the caller's loop never waits.

The PyPI `mcap` writer compresses each chunk on the calling thread (about 9 ms per MiB with zstd),
so it runs here instead; when the queue is full a sample is dropped and counted, never waited for.
"""

from __future__ import annotations

import json
import queue
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from mcap.well_known import MessageEncoding, SchemaEncoding
from mcap.writer import CompressionType, Writer

DEFAULT_QUEUE = 10_000
DEFAULT_CHUNK_BYTES = 1024 * 1024
COMPRESSIONS = {"zstd": CompressionType.ZSTD, "lz4": CompressionType.LZ4, "none": CompressionType.NONE}


@dataclass(frozen=True, slots=True)
class _Message:
    topic: str
    type: str
    log_time_ns: int
    publish_time_ns: int
    sequence: int
    data: bytes


@dataclass(frozen=True, slots=True)
class _Metadata:
    name: str
    values: dict[str, str]


_STOP = object()


class McapSink:
    """Writes messages to one MCAP file from a thread; `message` never blocks.

    `schemas` maps a message type to its JSON Schema (a channel of an unknown type gets none);
    `compression` is "zstd", "lz4" or "none"; `chunk_bytes` is the uncompressed chunk size.
    """

    def __init__(
        self,
        path: str | Path,
        schemas: dict[str, dict[str, Any]],
        compression: str = "zstd",
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        queue_size: int = DEFAULT_QUEUE,
    ) -> None:
        self.path = Path(path)
        self.dropped = 0
        self.written = 0
        self._schemas = dict(schemas)
        self._queue: queue.Queue[object] = queue.Queue(maxsize=queue_size)
        self._file: BinaryIO = open(self.path, "wb")  # noqa: SIM115 - closed by the thread
        self._writer = Writer(self._file, chunk_size=chunk_bytes, compression=COMPRESSIONS[compression])
        self._writer.start(profile="", library="hwgateway")
        self._schema_ids: dict[str, int] = {}
        self._channels: dict[str, int] = {}
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"mcap-{self.path.name}", daemon=True)
        self._thread.start()

    @property
    def bytes_written(self) -> int:
        """Bytes in the file so far (compressed chunks land at each chunk's end)."""
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    @property
    def channels(self) -> int:
        """Channels registered so far."""
        return len(self._channels)

    def message(self, topic: str, type_: str, log_time_ns: int, publish_time_ns: int, seq: int, data: bytes) -> bool:
        """Queue one message (data: its JSON); False when the queue was full and it was dropped."""
        try:
            self._queue.put_nowait(_Message(topic, type_, log_time_ns, publish_time_ns, seq & 0xFFFFFFFF, data))
        except queue.Full:
            self.dropped += 1
            return False
        return True

    def metadata(self, name: str, values: dict[str, str]) -> None:
        """Queue a metadata record (waits for room: metadata is rare and must not be lost)."""
        self._queue.put(_Metadata(name, values))

    def close(self) -> None:
        """Write what is queued, the summary and the footer, and close the file; re-raise a writer error."""
        self._queue.put(_STOP)
        self._thread.join()
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        try:
            while (item := self._next()) is not _STOP:
                if isinstance(item, _Message):
                    self._write(item)
                elif isinstance(item, _Metadata):
                    self._writer.add_metadata(item.name, item.values)
            self._writer.finish()  # type: ignore[no-untyped-call]
        except BaseException as error:  # reported by close(); the file stays readable up to the last chunk
            self._error = error
        finally:
            self._file.close()

    def _next(self) -> object:
        """The next queued item; when the queue runs dry, the file is flushed first (a kill loses little)."""
        try:
            return self._queue.get_nowait()
        except queue.Empty:
            self._file.flush()
            return self._queue.get()

    def _write(self, item: _Message) -> None:
        channel = self._channels.get(item.topic)
        if channel is None:
            channel = self._channels[item.topic] = self._writer.register_channel(
                item.topic, MessageEncoding.JSON, self._schema_id(item.type), {"type": item.type}
            )
        self._writer.add_message(
            channel,
            log_time=item.log_time_ns,
            data=item.data,
            publish_time=item.publish_time_ns,
            sequence=item.sequence,
        )
        self.written += 1

    def _schema_id(self, type_: str) -> int:
        schema_id = self._schema_ids.get(type_)
        if schema_id is None:
            schema = self._schemas.get(type_)
            if schema is None:
                return 0  # no schema known: Foxglove shows schemaless JSON
            data = json.dumps({"title": type_, **schema}).encode()
            schema_id = self._schema_ids[type_] = self._writer.register_schema(type_, SchemaEncoding.JSONSchema, data)
        return schema_id
