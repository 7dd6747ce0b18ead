"""Client commands of `hwgateway`: devices, sub, cmd, describe, estop (in the spirit of mosquitto_sub/_pub).

Each connects with `hwgateway.client` to `--url` (or `HWGW_URL`, default the local WebSocket) with
`--token` (or `HWGW_TOKEN`), and exits with a status that names the gateway's error code (`EXIT_CODES`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TextIO

from gateway.errors import ErrorCode

if TYPE_CHECKING:
    from hwgateway.client import Gateway, Sample

DEFAULT_URL = "ws://127.0.0.1:8470/ws"
#: Exit status of a command that failed with a result error, by `error.code`.
EXIT_CODES: dict[ErrorCode, int] = {
    ErrorCode.BAD_REQUEST: 10,
    ErrorCode.UNKNOWN_OP: 11,
    ErrorCode.UNKNOWN_DEVICE: 12,
    ErrorCode.UNKNOWN_COMMAND: 13,
    ErrorCode.INVALID_ARGUMENT: 14,
    ErrorCode.UNAUTHORIZED: 15,
    ErrorCode.TIMEOUT: 16,
    ErrorCode.DEVICE_ERROR: 17,
    ErrorCode.UNAVAILABLE: 18,
    ErrorCode.RATE_LIMITED: 19,
    ErrorCode.TOO_LARGE: 20,
    ErrorCode.INTERNAL_ERROR: 21,
    ErrorCode.GOING_AWAY: 22,
    ErrorCode.LOCKED: 23,
}
#: The gateway cannot be reached, or the connection was lost.
EXIT_CONNECTION = 3
#: Bad command-line arguments (as argparse's own).
EXIT_USAGE = 2
#: `estop` reached the gateway but some device did not confirm its stop.
EXIT_ESTOP_INCOMPLETE = 4
#: `sub`: no topic matches the patterns (as `hwgateway record`).
EXIT_NO_TOPICS = 5
#: Seconds `sub` waits for a first matching topic while some device is still connecting.
NO_TOPIC_GRACE_S = 5.0

COMMANDS = ("devices", "sub", "cmd", "describe", "estop", "reload")
_TABLE_REFRESH_S = 0.2


def add_commands(commands: Any) -> None:
    """Add the client commands to the `hwgateway` argparse sub-parsers."""

    def common(sub: argparse.ArgumentParser) -> argparse.ArgumentParser:
        sub.add_argument(
            "--url",
            default=os.environ.get("HWGW_URL", DEFAULT_URL),
            help="ws://host:port/ws, tcp://host:port or unix:/path (default $HWGW_URL or %(default)s)",
        )
        sub.add_argument("--token", default=os.environ.get("HWGW_TOKEN"), help="auth token (default $HWGW_TOKEN)")
        sub.add_argument("--json", action="store_true", help="print JSON (one object per line for sub)")
        return sub

    common(commands.add_parser("devices", help="list the gateway's devices"))
    sub = common(commands.add_parser("sub", help="print samples of topics matching patterns"))
    sub.add_argument("patterns", nargs="+", metavar="PATTERN", help="topic pattern (* one segment, ** any)")
    sub.add_argument("--rate", type=float, metavar="HZ", help="at most HZ samples per second per topic")
    sub.add_argument("--count", type=int, metavar="N", help="exit after N samples")
    sub.add_argument(
        "--wait",
        action="store_true",
        help=f"when no topic matches yet, wait for one (default: say so and exit {EXIT_NO_TOPICS})",
    )
    cmd = common(commands.add_parser("cmd", help="send a command to a device and print its result"))
    cmd.add_argument("device")
    cmd.add_argument("type", help="message type or generic command (led, sound, rumble)")
    cmd.add_argument("data", nargs="?", default="{}", help="the command's data as a JSON object (default {})")
    cmd.add_argument("--timeout", type=float, metavar="S", help="deadline in seconds (default the gateway's)")
    cmd.add_argument(
        "--hold",
        nargs="?",
        type=_hold_seconds,
        const=math.inf,
        metavar="SECONDS",
        help="stay connected, keeping what the command turned on, for SECONDS (without a value: until Ctrl-C); "
        "released on exit. Without --hold a leased output (rumble, motors, pins, wrist outputs) ends when the "
        "command exits, with its connection",
    )
    describe = common(commands.add_parser("describe", help="print a type's schema, or every type"))
    describe.add_argument("type", nargs="?")
    common(commands.add_parser("estop", help="stop every device's actuators"))
    common(
        commands.add_parser(
            "reload",
            help="have the running gateway apply its configuration file again (admin token)",
            description="The gateway reads its configuration file again, with the check of check-config: an "
            "invalid file changes nothing and every error is printed. Otherwise only the devices that changed "
            "stop through their safe state and start again; listener and auth changes need a restart.",
        )
    )


def run(args: argparse.Namespace) -> int:
    """Run one client command; return the exit status."""
    # Ctrl-C (SIGINT) ends a `sub` cleanly even when the shell started us with SIGINT ignored, as it
    # does for a background job (`hwgateway sub ... &`, nohup): without this, SIGINT would do nothing.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return asyncio.run(_run(args))
    except KeyboardInterrupt:
        return 0


async def _run(args: argparse.Namespace) -> int:
    # Here, not at the top: `hwgateway --help` and the daemon's commands need no client library.
    from hwgateway.client import ConnectionLost, GatewayError, connect

    actions: dict[str, Callable[[Gateway, argparse.Namespace], Awaitable[int]]] = {
        "devices": _devices,
        "sub": _sub,
        "cmd": _cmd,
        "describe": _describe,
        "estop": _estop,
        "reload": _reload,
    }
    if args.command == "cmd":
        try:
            args.data = json.loads(args.data)
        except ValueError as error:
            return _fail(f"DATA is not JSON: {error}", EXIT_USAGE)
        if not isinstance(args.data, dict):
            return _fail("DATA must be a JSON object, e.g. '{\"rgb\": [1, 0, 0]}'", EXIT_USAGE)
    try:
        # A command-line tool reports a lost connection instead of waiting for the gateway to come back.
        async with connect(args.url, token=args.token, reconnect=args.command == "sub") as gw:
            return await actions[args.command](gw, args)
    except ValueError as error:
        return _fail(str(error), EXIT_USAGE)
    except ConnectionLost as error:
        return _fail(str(error), EXIT_CONNECTION)
    except GatewayError as error:
        return _fail(f"{error.code.value}: {error.message}", EXIT_CODES.get(error.code, 1))


def _fail(message: str, status: int) -> int:
    print(f"hwgateway: {message}", file=sys.stderr)
    return status


def _print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False), flush=True)


def _table(rows: list[list[str]], out: TextIO) -> None:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() + "\n")


async def _devices(gw: Gateway, args: argparse.Namespace) -> int:
    devices = await gw.devices()
    if args.json:
        _print_json([dict(device.raw) for device in devices])
        return 0
    rows = [["ID", "KIND", "STATUS", "DETAIL"]]  # what each accepts and publishes: --json, or `describe`
    rows += [[d.id, d.kind, d.status, d.detail] for d in devices]
    _table(rows, sys.stdout)
    return 0


def _hold_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:  # most likely DATA written after a bare --hold
        raise argparse.ArgumentTypeError(f"--hold takes seconds, not {text!r} (give DATA before --hold)") from None
    if not seconds > 0 or math.isnan(seconds):
        raise argparse.ArgumentTypeError(f"--hold needs a positive number of seconds, not {text}")
    return seconds


#: The note `cmd` prints when it does not hold: a lease ends with the connection that took it.
NOT_HELD = (
    "hwgateway: the command's outputs that hold a lease (rumble, motors, pins, wrist outputs) ended when it "
    "exited; --hold [SECONDS] keeps them on"
)


async def _cmd(gw: Gateway, args: argparse.Namespace) -> int:
    result = await gw.command(args.device, args.type, args.data, timeout_s=args.timeout)
    _print_json(result)
    if args.hold is None:
        print(NOT_HELD, file=sys.stderr, flush=True)
        return 0
    await _hold(gw, args)
    return 0


async def _hold(gw: Gateway, args: argparse.Namespace) -> None:
    """Keep the connection, and the leases of the command, for `args.hold` seconds (inf: until Ctrl-C).

    A device whose leases also run out in time names the commands to repeat, and how often, in its
    `lease_renewal_ms` capability (a Thymio's motors: `motor_lease_ms`): those are sent again at half
    that period. Any other command is never repeated (a repeated relative move would move again).
    """
    device = next((d for d in await gw.devices() if d.id == args.device), None)
    renewal_ms = device.capabilities.get("lease_renewal_ms", {}) if device is not None else {}
    every_ms = renewal_ms.get(args.type) if isinstance(renewal_ms, dict) else None
    period = every_ms / 2000 if isinstance(every_ms, int | float) and every_ms > 0 else None
    until = "until Ctrl-C" if math.isinf(args.hold) else f"for {args.hold:g} s"
    renewing = f", repeated every {period:g} s to renew its lease" if period else ""
    print(f"hwgateway: holding the command's outputs {until}{renewing}; released on exit", file=sys.stderr, flush=True)
    deadline = time.monotonic() + args.hold
    while (remaining := deadline - time.monotonic()) > 0:
        await asyncio.sleep(remaining if period is None else min(period, remaining))
        if period is not None and time.monotonic() < deadline:
            await gw.command(args.device, args.type, args.data, timeout_s=args.timeout)
    print("hwgateway: released", file=sys.stderr, flush=True)


async def _describe(gw: Gateway, args: argparse.Namespace) -> int:
    data = await gw.describe(args.type)
    if args.json or args.type is not None:
        print(json.dumps(data, indent=None if args.json else 2, ensure_ascii=False))
        return 0
    _table([["TYPE", "KIND"], *([entry["type"], entry["kind"]] for entry in data.get("types", ()))], sys.stdout)
    return 0


async def _estop(gw: Gateway, args: argparse.Namespace) -> int:
    outcomes = await gw.estop()
    if args.json:
        _print_json([{"device": o.device, "ok": o.ok, "error": o.error} for o in outcomes])
    else:
        _table([["DEVICE", "STOPPED"], *([o.device, "ok" if o.ok else o.error] for o in outcomes)], sys.stdout)
    return 0 if all(outcome.ok for outcome in outcomes) else EXIT_ESTOP_INCOMPLETE


async def _reload(gw: Gateway, args: argparse.Namespace) -> int:
    from hwgateway.client import InvalidArgument

    try:
        report = await gw.reload()
    except InvalidArgument as error:  # the file is invalid: one problem per line
        problems = error.message.splitlines()
        print(f"hwgateway: reload refused, nothing changed ({len(problems)} problem(s)):", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        return EXIT_CODES[ErrorCode.INVALID_ARGUMENT]
    if args.json:
        _print_json(report)
        return 0
    changes = (
        ("started", "added", ""),
        ("stopped", "removed", ""),
        ("restarted", "restarted", ""),
        ("started", "bindings_added", "binding "),
        ("ended", "bindings_removed", "binding "),
        ("restarted", "bindings_restarted", "binding "),
    )
    for label, key, what in changes:
        for name in report.get(key, ()):
            safe = report.get("safe_states", {}).get(name)
            print(f"{label:<10} {what}{name}" + (f" (safe state: {safe})" if safe else ""))
    for key in report.get("applied", ()):
        print(f"applied    {key}")
    for key in report.get("restart_needed", ()):
        print(f"restart    {key}: needs a restart of the gateway (kept as running)")
    if (
        not any(report.get(key) for _, key, _ in changes)
        and not report.get("applied")
        and not report.get("restart_needed")
    ):
        print("nothing changed")
    for warning in report.get("warnings", ()):
        print(f"hwgateway: warning: {warning}", file=sys.stderr)
    return 0


def _sample_line(sample: Sample, as_json: bool) -> str:
    if as_json:
        plain = {"topic": sample.topic, "type": sample.type, "seq": sample.seq, "stamp": sample.stamp}
        return json.dumps({**plain, "recv_stamp": sample.recv_stamp, "data": sample.data}, ensure_ascii=False)
    return f"{sample.topic} {sample.type} seq={sample.seq} {json.dumps(sample.data, separators=(',', ':'))}"


async def _sub(gw: Gateway, args: argparse.Namespace) -> int:
    if args.count is not None and args.count < 1:
        raise ValueError("--count must be at least 1")
    live_table = sys.stdout.isatty() and not args.json
    latest: dict[str, Sample] = {}
    received = 0
    drawn = 0.0
    async with gw.subscribe(*args.patterns, max_rate_hz=args.rate) as subscription:
        samples: AsyncIterator[Sample] = subscription
        if not subscription.topics and not args.wait:
            first = await _first_sample(gw, subscription)
            if first is None:
                return _fail(
                    f"no topic matches {' '.join(args.patterns)} (every topic: hwgateway sub '**'; "
                    "--wait waits for one)",
                    EXIT_NO_TOPICS,
                )
            samples = _chain(first, subscription)
        with contextlib.suppress(StopAsyncIteration):
            async for sample in samples:
                received += 1
                if live_table:
                    latest[sample.topic] = sample
                    if time.monotonic() - drawn >= _TABLE_REFRESH_S:
                        drawn = time.monotonic()
                        _draw(latest, received)
                else:
                    print(_sample_line(sample, args.json), flush=True)
                if args.count is not None and received >= args.count:
                    break
    if live_table:
        _draw(latest, received)
    return 0


async def _first_sample(gw: Gateway, subscription: AsyncIterator[Sample]) -> Sample | None:
    """The first sample of a subscription that matched no topic, or None when none comes.

    A topic exists once its device published: when every device is connected, none is coming
    (None at once); while one still connects, its topics may, within `NO_TOPIC_GRACE_S`.
    """
    settled = all(device.status == "connected" for device in await gw.devices())
    try:
        async with asyncio.timeout(0.0 if settled else NO_TOPIC_GRACE_S):
            return await anext(subscription)
    except (TimeoutError, StopAsyncIteration):
        return None


async def _chain(first: Sample, rest: AsyncIterator[Sample]) -> AsyncIterator[Sample]:
    yield first
    async for sample in rest:
        yield sample


def _draw(latest: dict[str, Sample], received: int) -> None:
    """Redraw the table of every topic's latest sample (a TTY)."""
    now = time.time()
    width = os.get_terminal_size().columns if sys.stdout.isatty() else 120
    rows = [["TOPIC", "TYPE", "SEQ", "AGE", "DATA"]]
    for topic in sorted(latest):
        sample = latest[topic]
        data = json.dumps(sample.data, separators=(",", ":"))
        rows.append([topic, sample.type, str(sample.seq), f"{now - sample.recv_stamp:.1f}s", data])
    sys.stdout.write("\x1b[H\x1b[2J")
    sys.stdout.write(f"{received} samples, {len(latest)} topics (Ctrl-C to stop)\n")
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    for row in rows:
        line = "  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths, strict=True)) + "  " + row[4]
        sys.stdout.write(line[:width] + "\n")
    sys.stdout.flush()
