"""The `hwgateway` command: run, demo, check-config, hash-token, aseba compile, and the client commands."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import getpass
import json
import logging
import os
import secrets
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from gateway import __version__
from gateway.credentials import MIN_TOKEN_CHARS, hash_token
from gateway.errors import ConfigError

if TYPE_CHECKING:
    from gateway.app import Gateway
    from gateway.core.config import Config

log = logging.getLogger(__name__)

DEFAULT_CONFIG = "/etc/hwgateway/config.toml"
EXIT_CONFIG_ERROR = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hwgateway", description="Robot and controller hardware on one bus, over WebSocket and msgpack."
    )
    parser.add_argument("--version", action="version", version=f"hwgateway {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def logging_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--log-level", choices=["debug", "info", "warning", "error"], help="override [logging] level")
        sub.add_argument("--log-format", choices=["auto", "json", "console"], help="override [logging] format")

    def config_file(sub: argparse.ArgumentParser) -> None:
        # Both `run FILE` and `run --config FILE` (and the same for check-config) read the same file.
        sub.add_argument("file", nargs="?", metavar="FILE", help=f"TOML file (default {DEFAULT_CONFIG})")
        sub.add_argument("--config", dest="config_option", metavar="FILE", help="the same, as an option")

    run = commands.add_parser("run", help="run the gateway with a configuration file")
    config_file(run)
    run.add_argument(
        "--sighup",
        choices=["stop", "reload"],
        default="stop",
        help="what SIGHUP does: stop in order, as for a closed terminal (default), or reload the configuration "
        "file, as the systemd unit's ExecReload asks",
    )
    logging_options(run)

    demo = commands.add_parser(
        "demo",
        help="run the gateway with simulated devices on the default ports",
        description="Run the gateway with simulated devices. Every listener can be moved (PORT; 0: any free "
        "port) or turned off (off), e.g. --tdm-port off beside Thymio Suite, which needs 8596 and 8597.",
    )
    demo.add_argument("--http-port", type=_port, metavar="PORT", help="HTTP/WebSocket/dashboard port (default 8470)")
    demo.add_argument("--msgpack-port", type=_port_or_off, metavar="PORT|off", help="msgpack TCP port (default 8471)")
    demo.add_argument(
        "--unix-socket", metavar="PATH|off", help="msgpack Unix socket path (default: a per-user temporary path)"
    )
    demo.add_argument(
        "--rosbridge-port", type=_port_or_off, metavar="PORT|off", help="rosbridge v2 WebSocket port (default 9090)"
    )
    demo.add_argument(
        "--foxglove-port", type=_port_or_off, metavar="PORT|off", help="Foxglove WebSocket port (default 8765)"
    )
    demo.add_argument(
        "--tdm-port", type=_port_or_off, metavar="PORT|off",
        help="Thymio Device Manager TCP port (default 8596, the real TDM's); off: no TDM face",
    )  # fmt: skip
    demo.add_argument(
        "--tdm-ws-port", type=_port_or_off, metavar="PORT|off",
        help="Thymio Device Manager WebSocket port (default 8597, the real TDM's); off: no TDM face",
    )  # fmt: skip
    demo.add_argument("--record", metavar="FILE", help="also record the whole bus to this MCAP file")
    demo.add_argument(
        "--mqtt", metavar="URL",
        help="also bridge to this MQTT broker (mqtt://127.0.0.1:1883) with Home Assistant discovery on",
    )  # fmt: skip
    logging_options(demo)

    check = commands.add_parser("check-config", help="validate a configuration file, report every error, exit")
    config_file(check)

    scan = commands.add_parser(
        "scan",
        help="find attached devices and print their config (--write FILE merges it in)",
        description="Find Thymio robots and dongles on serial ports, gamepads (SDL), micro:bits and LEGO hubs "
        "(Bluetooth LE), Wii Remotes (BlueZ) and Kinova arms at given addresses; print ready-to-paste "
        "[devices.<id>] tables. Nothing is written unless --write is given. Stop the gateway first, or use "
        "its admin `scan` op: a port it holds cannot be asked twice.",
    )
    scan.add_argument("--serial", action="append", default=[], metavar="PATH", help="also ask this serial port")
    scan.add_argument(
        "--kortex", action="append", default=[], metavar="HOST[:PORT]", help="ask for a Kinova arm at this address"
    )
    scan.add_argument("--kortex-user", default="admin", metavar="NAME", help="the arm's user (default admin)")
    scan.add_argument("--kortex-password", default="admin", metavar="PASSWORD", help="its password (default admin)")
    scan.add_argument(
        "--only", metavar="FAMILY[,...]", help="only these of serial, gamepad, ble, wiimote (kortex: with --kortex)"
    )
    scan.add_argument("--timeout", type=float, default=4.0, metavar="S", help="seconds each search takes (default 4)")
    scan.add_argument("--write", metavar="FILE", help="merge the new devices into FILE, keeping its comments and ids")
    scan.add_argument("--json", action="store_true", help="print the findings as JSON")

    pair = commands.add_parser(
        "pair",
        help="pair a Wii Remote (its red sync button) or a Bluetooth LE device through BlueZ",
        description="Open a pairing window: a Wii Remote pairs by its red sync button (pressed while the window "
        "is open) with the PIN BlueZ's wiimote plugin answers, is trusted and connected, and then reconnects "
        "by itself when a button is pressed; --ble pairs a Bluetooth LE device by its address. Exit 0 paired, "
        "1 refused or timed out, 2 bad arguments, 3 BlueZ cannot be used here (the message says why).",
    )
    pair.add_argument("address", nargs="?", default="", help="AA:BB:CC:DD:EE:FF (a Wii Remote: default the first seen)")
    pair.add_argument("--ble", action="store_true", help="a Bluetooth LE device (micro:bit, LEGO hub), by address")
    pair.add_argument("--timeout", type=float, default=30.0, metavar="S", help="the pairing window (default 30 s)")
    pair.add_argument("--passkey", type=int, metavar="N", help="the passkey a BLE device shows and asks to be typed")
    pair.add_argument("--json", action="store_true", help="print the outcome as JSON")

    hash_token = commands.add_parser(
        "hash-token", help="print the [auth.tokens.<name>] hash of a token read from standard input"
    )
    hash_token.add_argument("--generate", action="store_true", help="make a new random token and print it too")

    from gateway import record_cli

    record_cli.add_record_arguments(
        commands.add_parser("record", help="record a running gateway's bus to an MCAP file")
    )
    replay = commands.add_parser("replay", help="run a gateway that replays an MCAP recording")
    record_cli.add_replay_arguments(replay)
    logging_options(replay)

    aseba = commands.add_parser("aseba", help="Aseba tools")
    aseba_commands = aseba.add_subparsers(dest="aseba_command", required=True, metavar="TOOL")
    from devices.aseba import compile_command as aseba_compile

    aseba_compile.add_arguments(
        aseba_commands.add_parser("compile", help="compile an .aesl file for a node description; print a listing")
    )
    from hwgateway import cli as client_commands

    client_commands.add_commands(commands)
    return parser


#: `--...-port off`: that listener is not opened.
OFF = -1


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (0-65535; 0: any free port)")
    return port


def _port_or_off(text: str) -> int:
    return OFF if text.strip().lower() == "off" else _port(text)


def _demo_config(args: argparse.Namespace) -> Config:
    from gateway.config import loads

    text = resources.files("gateway").joinpath("demo.toml").read_text(encoding="utf-8")
    if args.mqtt:  # checked as the file's own [mqtt] table is (a JSON string is a TOML basic string)
        text += f"\n[mqtt]\nurl = {json.dumps(args.mqtt)}\nha_discovery = true\n"
    config = loads(text)
    unix = args.unix_socket or str(Path(tempfile.gettempdir()) / f"hwgateway-demo-{os.getuid()}.sock")
    server = dataclasses.replace(
        config.server,
        unix_socket="" if unix.strip().lower() == "off" else unix,
        http_port=config.server.http_port if args.http_port is None else args.http_port,
        msgpack_port=config.server.msgpack_port if args.msgpack_port is None else args.msgpack_port,
    )
    rosbridge = config.rosbridge
    if args.rosbridge_port is not None:
        rosbridge = dataclasses.replace(rosbridge, enabled=args.rosbridge_port != OFF, port=max(args.rosbridge_port, 0))
    foxglove = config.foxglove
    if args.foxglove_port is not None:
        foxglove = dataclasses.replace(foxglove, enabled=args.foxglove_port != OFF, port=max(args.foxglove_port, 0))
    tdm = config.tdm
    if args.tdm_port is not None:
        tdm = dataclasses.replace(tdm, tcp_port=max(args.tdm_port, 0))
    if args.tdm_ws_port is not None:
        tdm = dataclasses.replace(tdm, ws_port=max(args.tdm_ws_port, 0))
    if OFF in (args.tdm_port, args.tdm_ws_port):  # one face with both listeners
        tdm = dataclasses.replace(tdm, enabled=False)
    return dataclasses.replace(config, server=server, rosbridge=rosbridge, foxglove=foxglove, tdm=tdm)


#: Seconds a demo on a terminal waits for its devices to connect before it prints its URLs anyway.
BANNER_SETTLE_S = 15.0
#: Seconds of quiet after the last device connected, for the lines that follow a connect to be logged.
_BANNER_QUIET_S = 0.3
_banner_tasks: set[asyncio.Task[None]] = set()


def _print_demo_banner(gateway: Gateway) -> None:
    """The demo's URLs, once every listener accepts connections (with the ports actually bound).

    On a terminal they come last, after the start-up's log lines (every device connected, or
    `BANNER_SETTLE_S`), where a person sees them instead of above a screenful of logs. Piped (a
    script, a test), at once.
    """
    if not sys.stdout.isatty():
        _banner(gateway)
        return
    task = asyncio.get_running_loop().create_task(_banner_when_settled(gateway), name="demo-banner")
    _banner_tasks.add(task)
    task.add_done_callback(_banner_tasks.discard)


async def _banner_when_settled(gateway: Gateway) -> None:
    devices = gateway.supervisor.devices.values()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(BANNER_SETTLE_S):
            while any(handle.status != "connected" for handle in devices):  # noqa: ASYNC110 (no event per device)
                await asyncio.sleep(0.1)
    await asyncio.sleep(_BANNER_QUIET_S)
    _banner(gateway)


def _banner(gateway: Gateway) -> None:
    server = gateway.config.server
    base = f"{server.host}:{gateway.http_port}"
    msgpack = f"tcp://{server.host}:{gateway.msgpack_port}" if gateway.msgpack_port else "off"
    unix = f" and unix:{server.unix_socket}" if server.unix_socket else ""
    print(
        "hwgateway demo: simulated devices " + ", ".join(d.id for d in gateway.config.devices) + "\n"
        f"  dashboard   http://{base}/\n"
        f"  WebSocket   ws://{base}/ws\n"
        f"  health      http://{base}/healthz\n"
        f"  metrics     http://{base}/metrics\n"
        f"  msgpack     {msgpack}{unix}\n"
        + "".join(f"  {name:<11} {url}\n" for name, url in gateway.face_urls().items())
        + "Press Ctrl-C to stop.",
        flush=True,
    )


def _hash_token(generate: bool) -> int:
    """Print a token's config hash (and, with `generate`, a new random token first)."""
    if generate:
        token = secrets.token_urlsafe(32)
        print(f"token: {token}")
    elif sys.stdin.isatty():
        token = getpass.getpass("token: ")
    else:
        token = sys.stdin.readline().strip()
    if len(token) < MIN_TOKEN_CHARS:  # the config's floor too
        print(f"hwgateway: a token must be at least {MIN_TOKEN_CHARS} characters", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    print(f'hash = "{hash_token(token)}"')
    return 0


def _scan(args: argparse.Namespace) -> int:
    """`hwgateway scan`: print what was found (and merge it into --write FILE); 0 even when nothing was."""
    import json

    from gateway import scan
    from gateway.config import loads

    families = scan.FAMILIES
    if args.only:
        families = tuple(name.strip() for name in args.only.split(",") if name.strip())
        unknown = sorted(set(families) - set(scan.FAMILIES))
        if unknown:
            print(
                f"hwgateway: --only: unknown {', '.join(unknown)} (known: {', '.join(scan.FAMILIES)})", file=sys.stderr
            )
            return EXIT_USAGE
    if not scan.MIN_TIMEOUT_S <= args.timeout <= scan.MAX_TIMEOUT_S:
        print(f"hwgateway: --timeout must be in [{scan.MIN_TIMEOUT_S:g}, {scan.MAX_TIMEOUT_S:g}] s", file=sys.stderr)
        return EXIT_USAGE
    request = scan.ScanRequest(
        families=families,
        ports=tuple(args.serial),
        arms=tuple(args.kortex),
        kortex_username=args.kortex_user,
        kortex_password=args.kortex_password,
        timeout_s=args.timeout,
    )
    print(f"hwgateway: scanning for {args.timeout:g} s ({', '.join(families)}) ...", file=sys.stderr, flush=True)
    report = asyncio.run(scan.scan(request))
    for skipped in report.skipped:
        print(f"hwgateway: {skipped.family}: not scanned: {skipped.reason}", file=sys.stderr)
    if args.json:
        print(json.dumps(report.as_dict(), ensure_ascii=False, indent=2))
    elif report.findings:
        print(scan.render(report.findings), end="")
    else:
        print("hwgateway: nothing found", file=sys.stderr)
    if args.write:
        try:
            merged = scan.merge_into(Path(args.write), report.findings, loads)
        except ConfigError as error:
            print(f"hwgateway: {args.write} not written:", file=sys.stderr)
            _print_config_error(error)
            return EXIT_CONFIG_ERROR
        for found, configured in merged.already.items():
            print(f"hwgateway: {found}: already in {args.write} as devices.{configured}", file=sys.stderr)
        added = ", ".join(merged.added) or "nothing new"
        print(f"hwgateway: {args.write}: added {added}", file=sys.stderr)
    return 0


#: Bad command-line arguments (as argparse's own).
EXIT_USAGE = 2


#: `hwgateway pair`: refused or timed out; BlueZ cannot be used here (no bus, no BlueZ, no adapter, off, no permission).
EXIT_NOT_PAIRED = 1
EXIT_BLUEZ_UNAVAILABLE = 3


def _pair(args: argparse.Namespace) -> int:
    """`hwgateway pair`: one pairing window, each step printed as it happens; the exit code says the outcome."""
    import json

    from devices.bluez.dbus import BluezUnavailable
    from devices.bluez.pairing import BLE, PAIRED, WIIMOTE, PairRequest, pair
    from gateway.pair import config_of

    request = PairRequest(BLE if args.ble else WIIMOTE, args.address, args.timeout, args.passkey)

    def progress(step: str) -> None:
        print(f"hwgateway: {step}", file=sys.stderr, flush=True)

    print(f"hwgateway: pairing window of {args.timeout:g} s", file=sys.stderr, flush=True)
    try:
        outcome = asyncio.run(pair(request, progress))
    except ValueError as error:
        print(f"hwgateway: {error}", file=sys.stderr)
        return EXIT_USAGE
    except BluezUnavailable as error:
        print(f"hwgateway: cannot pair: {error}", file=sys.stderr)
        return EXIT_BLUEZ_UNAVAILABLE
    if args.json:
        print(
            json.dumps({**outcome.as_dict(), "config": config_of(outcome, request.kind)}, ensure_ascii=False, indent=2)
        )
    if outcome.outcome != PAIRED:
        print(f"hwgateway: {outcome.outcome.replace('_', ' ')}: {outcome.message}", file=sys.stderr)
        return EXIT_NOT_PAIRED
    print(f"hwgateway: {outcome.message}", file=sys.stderr)
    if not args.json:
        print(config_of(outcome, request.kind), end="")
    return 0


def _config_path(args: argparse.Namespace) -> str:
    """The file of `run`/`check-config`, given as FILE or as --config FILE (not two different ones)."""
    if args.file and args.config_option and args.file != args.config_option:
        raise ConfigError("", f"two configuration files given: {args.file} and --config {args.config_option}")
    path: str = args.file or args.config_option or DEFAULT_CONFIG
    return path


def _print_config_error(error: ConfigError) -> None:
    if len(error.errors) == 1:
        print(f"hwgateway: configuration error: {error}", file=sys.stderr)
        return
    print(f"hwgateway: {len(error.errors)} configuration errors:", file=sys.stderr)
    for problem in error.errors:
        print(f"  {problem}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `hwgateway` console script."""
    args = _parser().parse_args(argv)
    from hwgateway import cli as client_commands

    if args.command in client_commands.COMMANDS:
        return client_commands.run(args)
    if args.command == "aseba":
        from devices.aseba import compile_command as aseba_compile

        status, text = aseba_compile.run(args)
        print(text, file=sys.stderr if status else sys.stdout)
        return status
    if args.command in ("record", "replay"):
        from gateway import record_cli

        return record_cli.run_record(args) if args.command == "record" else record_cli.run_replay(args)
    if args.command == "hash-token":
        return _hash_token(args.generate)
    if args.command == "scan":
        return _scan(args)
    if args.command == "pair":
        return _pair(args)
    # The daemon's modules are imported once a command needs them: a client command, or --help,
    # should not wait for them (about 1 s here, several on a Raspberry Pi).
    from gateway import logs, waits
    from gateway.config import load
    from gateway.core.config_checks import warnings as config_warnings

    try:
        if args.command == "check-config":
            path = _config_path(args)
            config = load(path)
            devices = ", ".join(f"{d.id} ({d.kind})" for d in config.devices) or "none"
            print(f"{path}: ok; devices: {devices}")
            for warning in config_warnings(config):
                print(f"hwgateway: warning: {warning}", file=sys.stderr)
            return 0
        config = load(_config_path(args)) if args.command == "run" else _demo_config(args)
    except ConfigError as error:
        _print_config_error(error)
        return EXIT_CONFIG_ERROR
    logs.configure(args.log_level or config.logging.level, args.log_format or config.logging.format)
    for warning in config_warnings(config):
        log.warning("config: %s", warning)
    if args.command == "demo" and args.record:
        from gateway import record_cli

        return waits.run(record_cli.serve_and_record(config, args.record, _print_demo_banner))
    from gateway.app import serve  # after logging is configured

    # waits.run, not asyncio.run: a task that ignores its cancellation cannot hold the exit.
    if args.command == "demo":
        return waits.run(serve(config, _print_demo_banner))
    return waits.run(serve(config, config_path=_config_path(args), reload_on_sighup=args.sighup == "reload"))


if __name__ == "__main__":
    sys.exit(main())
