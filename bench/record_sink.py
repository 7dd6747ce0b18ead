"""The recorder's own cost per message, without sockets: the loop-side hand-over and the writer thread.

Publishes `--messages` `wiimote/State` samples on a real `Bus` to the daemon recorder's subscriber
path (`McapSink.put` of each `Sample`), and, as the bare baseline in the same run, writes the same
messages, pre-encoded, with the PyPI mcap `Writer` on one thread. Reports the loop-side time per
`put` (µs), the process CPU per message of the whole recording (loop + writer thread, µs) and the
baseline's, and the file size. The `hwgateway record` client path (`StateText`: the push's text,
parsed on the thread) is measured the same way.

Run:  .venv/bin/python bench/record_sink.py [--messages 100000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import orjson
from mcap.writer import CompressionType, Writer

from gateway.bus import Bus, Sample
from gateway.faces.native.messages import state_message
from gateway.messages import REGISTRY, schema_of, to_plain
from gateway.messages.wiimote import State
from gateway.record.sink import McapSink, StateText


def _samples(count: int) -> list[Sample]:
    bus = Bus()
    base = State()
    return [bus.publish("wii/state", base, 1_800_000_000.0 + n / 1000) for n in range(count)]


def _cpu() -> float:
    return time.process_time()


def _sink(path: Path, items: list[object]) -> tuple[float, float]:
    """(loop-side µs per put, process CPU µs per message) for one recording of `items`."""
    schemas = {name: schema_of(info.cls) for name, info in REGISTRY.items()}
    cpu0 = _cpu()
    sink = McapSink(path, schemas, queue_size=len(items) + 1)
    started = time.perf_counter()
    for item in items:
        sink.put(item)
    put_s = time.perf_counter() - started
    sink.close()
    assert sink.written == len(items)
    assert sink.dropped == 0
    return put_s / len(items) * 1e6, (_cpu() - cpu0) / len(items) * 1e6


def _bare(path: Path, data: list[bytes]) -> float:
    """Process CPU µs per message of the PyPI writer alone, pre-encoded messages, one thread."""
    cpu0 = _cpu()
    with path.open("wb") as file:
        writer = Writer(file, compression=CompressionType.ZSTD)
        writer.start(profile="", library="bench")
        schema = writer.register_schema("wiimote/State", "jsonschema", orjson.dumps(schema_of(State)))
        channel = writer.register_channel("wii/state", "json", schema)
        for n, payload in enumerate(data):
            writer.add_message(channel, log_time=n, data=payload, publish_time=n, sequence=n)
        writer.finish()  # type: ignore[no-untyped-call]
    return (_cpu() - cpu0) / len(data) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="hwgw-bench-sink-"))
    samples = _samples(args.messages)
    texts: list[object] = [StateText(orjson.dumps(state_message(s))) for s in samples]
    bare = _bare(folder / "bare.mcap", [orjson.dumps(to_plain(s.message)) for s in samples])
    daemon_put, daemon_cpu = _sink(folder / "daemon.mcap", list(samples))
    client_put, client_cpu = _sink(folder / "client.mcap", texts)
    size = (folder / "daemon.mcap").stat().st_size
    print(f"{args.messages} wiimote/State messages, zstd, 1 MiB chunks")
    print(f"bare mcap Writer, pre-encoded JSON, one thread: {bare:.2f} µs CPU per message")
    print(
        f"daemon [record] (Sample): {daemon_put:.2f} µs per put on the loop, {daemon_cpu:.2f} µs CPU per message in all"
    )
    print(f"hwgateway record (push text): {client_put:.2f} µs per put, {client_cpu:.2f} µs CPU per message")
    print(
        f"file: {size / args.messages:.1f} B per message, "
        f"{size * 60_000 / args.messages / 1e6:.2f} MB per minute at 1,000 msg/s"
    )


if __name__ == "__main__":
    main()
