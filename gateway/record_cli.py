"""The `record` and `replay` subcommands: their arguments and what they run."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.record import (
    COMPRESSION_NAMES,
    DEFAULT_CHUNK_BYTES,
    DEFAULT_QUEUE,
    DEFAULT_URL,
    EXIT_BAD_FILE,
    EXIT_NO_TOPICS,
    EXIT_OK,
    EXIT_USAGE,
)

if TYPE_CHECKING:
    from gateway.app import Gateway
    from gateway.core.config import Config


def add_record_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `hwgateway record`."""
    parser.add_argument("-o", "--output", help="the MCAP file (--format ros2: the bag directory) to write")
    parser.add_argument(
        "--format",
        choices=("json", "ros2"),
        default="json",
        help="json: MCAP of JSON messages (default); ros2: a rosbag2 directory of CDR messages ROS 2 tools open",
    )
    parser.add_argument(
        "--url",
        default=os.environ.get("HWGW_URL", DEFAULT_URL),
        help=f"ws://host:port/ws, tcp://host:port or unix:/path (default $HWGW_URL or {DEFAULT_URL})",
    )
    parser.add_argument("--topics", nargs="+", default=["**"], metavar="PATTERN", help="topic patterns (default **)")
    parser.add_argument("--duration", type=float, metavar="S", help="stop after S seconds (default: at Ctrl-C)")
    parser.add_argument("--token", help="auth token (default: $HWGW_TOKEN)")
    parser.add_argument("--compression", choices=COMPRESSION_NAMES, default="zstd", help="chunk compression")
    parser.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK_BYTES, metavar="BYTES", help="chunk size")
    parser.add_argument("--queue", type=int, default=DEFAULT_QUEUE, help="writer queue length (full: samples dropped)")
    parser.add_argument(
        "--recover", metavar="FILE", help="report what FILE holds (a killed recording); with -o, repair it"
    )


def run_record(args: argparse.Namespace) -> int:
    """`hwgateway record`."""
    if args.recover:
        from gateway.record import recover

        return recover.run(args.recover, args.output)
    if not args.output:
        print("hwgateway record: -o FILE.mcap is required", file=sys.stderr)
        return EXIT_USAGE
    if (args.duration is not None and args.duration <= 0) or args.chunk_size < 1024 or args.queue < 1:
        print("hwgateway record: --duration, --chunk-size (>= 1024) and --queue must be positive", file=sys.stderr)
        return EXIT_USAGE
    from hwgateway.recorder import RecordOptions, run

    options = RecordOptions(
        output=args.output, url=args.url, patterns=tuple(args.topics), duration_s=args.duration, token=args.token,
        compression=args.compression, chunk_bytes=args.chunk_size, queue_size=args.queue,
        progress=sys.stderr.isatty(), format=args.format,
    )  # fmt: skip
    return run(options)


def add_replay_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `hwgateway replay`."""
    parser.add_argument("file", help="an MCAP file written by `hwgateway record`")
    parser.add_argument("--speed", type=float, default=1.0, help="playback rate (default 1.0)")
    parser.add_argument("--loop", action="store_true", help="start again at the end")
    parser.add_argument("--topics", nargs="+", default=["**"], metavar="PATTERN", help="recorded topics to play")
    parser.add_argument(
        "--prefix", default="", help='put in front of every topic and recorded device id (e.g. "replay-")'
    )
    parser.add_argument("--delay", type=float, default=0.0, metavar="S", help="wait S seconds before playing")
    parser.add_argument("--device-id", default="replay", help="the replay device's id (default replay)")
    parser.add_argument("--http-port", type=int, default=8470, help="HTTP/WebSocket port (default 8470)")
    parser.add_argument("--msgpack-port", type=int, default=8471, help="msgpack TCP port (default 8471, -1: off)")
    parser.add_argument("--unix-socket", help="msgpack Unix socket path (default: a per-user temporary path)")


def _replay_config_text(args: argparse.Namespace) -> str:
    unix = args.unix_socket or str(Path(tempfile.gettempdir()) / f"hwgateway-replay-{os.getuid()}.sock")
    # JSON strings are valid TOML basic strings, which keeps odd paths and patterns intact
    return (
        f'[server]\nhost = "127.0.0.1"\nhttp_port = {args.http_port}\nmsgpack_port = {args.msgpack_port}\n'
        f"unix_socket = {json.dumps(unix)}\n\n"
        f'[devices.{json.dumps(args.device_id)}]\nkind = "replay"\n'
        f"file = {json.dumps(str(Path(args.file).resolve()))}\n"
        f"speed = {args.speed!r}\nloop = {'true' if args.loop else 'false'}\n"
        f"topics = {json.dumps(args.topics)}\nprefix = {json.dumps(args.prefix)}\n"
        f"delay_s = {args.delay!r}\n"
    )


def run_replay(args: argparse.Namespace) -> int:
    """`hwgateway replay`: a gateway whose one device plays the file."""
    from gateway import logs
    from gateway.config import loads
    from gateway.errors import ConfigError
    from gateway.record.recover import BadRecording

    try:
        count = _count_replayable(args)
    except BadRecording as error:
        print(f"hwgateway replay: {error}", file=sys.stderr)
        return EXIT_BAD_FILE
    except _Stopped:
        return EXIT_OK  # SIGTERM or SIGINT while reading the file: nothing was started
    if not count:
        print(f"hwgateway replay: no recorded topic matches {' '.join(args.topics)}", file=sys.stderr)
        return EXIT_NO_TOPICS
    try:
        config = loads(_replay_config_text(args))
    except ConfigError as error:
        print(f"hwgateway replay: {error}", file=sys.stderr)
        return EXIT_USAGE
    logs.configure(args.log_level or config.logging.level, args.log_format or config.logging.format)
    print(f"hwgateway replay: {count} messages of {args.file} at {args.speed}x on ws://127.0.0.1:{args.http_port}/ws",
          flush=True)  # fmt: skip
    from gateway import waits
    from gateway.app import serve

    return waits.run(serve(config))


class _Stopped(BaseException):
    """A stop signal arrived while the file was being read."""


def _count_replayable(args: argparse.Namespace) -> int:
    """The messages the replay will play (the file read once before the gateway starts).

    SIGTERM and SIGINT end the reading at once (`_Stopped`): a large file must not hold off a stop.
    """
    from gateway.record.replay_source import playable
    from gateway.record.replay_stream import index_recording

    def stop(signum: int, frame: object) -> None:
        raise _Stopped

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGINT)}
    # Said once a stop is handled: a large file takes seconds to read, and a supervisor (or a test)
    # that waits for this line knows a SIGTERM from now on ends the reading cleanly (exit 0).
    print(f"hwgateway replay: reading {args.file}", file=sys.stderr, flush=True)
    try:
        indexed = index_recording(args.file, patterns=tuple(args.topics), prefix=args.prefix)
        if indexed is not None:  # played as it is read: no limit on its size
            return len(indexed) if indexed.chosen_topics() else 0
        return playable(args.file, tuple(args.topics), args.prefix)  # loaded whole: it must fit
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


async def serve_and_record(config: Config, output: str, on_listening: Callable[[Gateway], None]) -> int:
    """`hwgateway demo --record FILE`: run the gateway and record its whole bus until it stops."""
    from gateway.app import serve
    from hwgateway.recorder import RecordError, RecordOptions, record

    listening = asyncio.Event()

    def started(gateway: Gateway) -> None:
        on_listening(gateway)
        listening.set()

    gateway = asyncio.create_task(serve(config, started))
    await asyncio.wait({gateway, asyncio.ensure_future(listening.wait())}, return_when=asyncio.FIRST_COMPLETED)
    if gateway.done():
        return gateway.result()
    host, port = config.server.host, config.server.http_port
    stop = asyncio.Event()
    recording = asyncio.create_task(record(RecordOptions(output=output, url=f"ws://{host}:{port}/ws"), stop))
    code = await gateway
    stop.set()
    try:
        summary = await recording
    except RecordError as error:
        print(f"hwgateway demo: recording failed: {error}", file=sys.stderr)
        return code or error.exit_code
    print(f"{output}: {summary.messages} messages on {summary.topics} channels; {summary.dropped} dropped", flush=True)
    return code
