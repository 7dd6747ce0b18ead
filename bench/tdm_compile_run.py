"""TDM face benchmark: a tdmclient compile-and-run round trip through the gateway, against the bare compiler.

Method: the real daemon (`python -m gateway run`) with a simulated Thymio (`simulate = true`) and
its TDM face on loopback; one unchanged tdmclient 0.1.21 client (TCP, or WebSocket with `--ws`)
locks the node, registers the events, then `--rounds` times: compile-and-load a program whose
init emits `ready [k]` (`k` changes each round, so every round compiles new text), `run`, and wait
for that event. A round is timed from sending CompileAndLoadCodeOnVM to receiving EventsEmitted.
Baseline in the same run: `protocols.aseba.compiler.compile_script` alone on the same program and
the simulated Thymio's description (what the gateway adds is the protocol, the bus, the Aseba link
and the VM). tdmclient polls its input every 0.1 s (`ClientAsync.DEFAULT_SLEEP`), which dominates its
figure, so the same rounds also run from a raw TCP client (tdmclient's encoder and decoder, no
polling). Figures: p50 / p90 in ms and the ratio raw round trip / bare compile.

Run:  scripts/loopback-only.sh .venv/bin/python bench/tdm_compile_run.py [--rounds 50] [--ws]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tdmclient import FlatBuffer
from tdmclient.thymio import ThymioFB

from devices.sim.thymio import SimulatedThymio
from gateway.faces.tdm.nodes import node_id
from protocols.aseba.compiler import EventSpec, compile_script
from tests import tdm_programs
from tests.harness import free_port, gateway_config, start_gateway

PROGRAM = """var n = {k}
leds.top = [0, 32, 0]
emit ready [n]
onevent go
    n = n + event.args[0]
    emit pong [n, 0]
"""


def rounds(port: int, ws: bool, count: int) -> list[float]:
    """Seconds per compile + load + run + first event, for `count` rounds."""
    times: list[float] = []
    with tdm_programs.client(port, ws) as c:
        got: list[list[int]] = []

        async def main() -> None:
            node = await c.wait_for_node()
            await node.lock()
            await node.register_events([("ready", 1), ("pong", 2), ("go", 1)])
            await node.watch(events=True)
            node.add_event_received_listener(lambda _n, name, data: got.append(list(data)) if name == "ready" else None)
            for k in range(count):
                started = time.perf_counter()
                assert await node.compile(PROGRAM.format(k=k + 100)) is None
                assert await node.run() is None
                await tdm_programs.until(c, lambda k=k: [k + 100] in got)
                times.append(time.perf_counter() - started)
            await node.unlock()

        try:
            c.run_async_program(main)
        finally:
            tdm_programs.leave(c)
    return times


async def raw_rounds(port: int, count: int) -> list[float]:
    """The same rounds from a raw TCP client (tdmclient's encoder, no polling): the gateway's own latency."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    node = node_id("thymio")

    def send(*fields: object) -> None:
        packet = ThymioFB.create_message(fields, ThymioFB.SCHEMA)
        writer.write(struct.pack("<I", len(packet)) + packet)

    async def until(kind: int, check: Callable[[list[Any]], bool] = lambda _: True) -> list[Any]:
        while True:
            (length,) = struct.unpack("<I", await reader.readexactly(4))
            fb = FlatBuffer()
            fb.parse(await reader.readexactly(length), ThymioFB.SCHEMA)
            if fb.root.union_type == kind and check(fb.root.union_data[0].fields):
                return list(fb.root.union_data[0].fields)

    send(ThymioFB.MESSAGE_TYPE_CONNECTION_HANDSHAKE, ())
    await until(ThymioFB.MESSAGE_TYPE_NODES_CHANGED)
    send(ThymioFB.MESSAGE_TYPE_LOCK_NODE, (1, (node,)))
    await until(ThymioFB.MESSAGE_TYPE_REQUEST_COMPLETED)
    send(ThymioFB.MESSAGE_TYPE_REGISTER_EVENTS, (2, (node,), [("ready", 1, 0), ("pong", 2, 1), ("go", 1, 2)]))
    await until(ThymioFB.MESSAGE_TYPE_REQUEST_COMPLETED)
    send(ThymioFB.MESSAGE_TYPE_WATCH_NODE, (3, (node,), 2))
    await until(ThymioFB.MESSAGE_TYPE_REQUEST_COMPLETED)
    times = []
    for k in range(count):
        started = time.perf_counter()
        program = PROGRAM.format(k=k + 500)
        send(ThymioFB.MESSAGE_TYPE_COMPILE_AND_LOAD_CODE_ON_VM, (10 + 2 * k, (node,), 1, program, 2))
        await until(ThymioFB.MESSAGE_TYPE_COMPILATION_RESULT_SUCCESS)
        send(ThymioFB.MESSAGE_TYPE_SET_VM_EXECUTION_STATE, (11 + 2 * k, (node,), 1))
        expected = [k + 500]

        def is_ready(fields: list[Any], expected: list[int] = expected) -> bool:
            return bool(fields[1][0][0].fields[1][0] == expected)

        await until(ThymioFB.MESSAGE_TYPE_EVENTS_EMITTED, is_ready)
        times.append(time.perf_counter() - started)
    writer.close()
    await writer.wait_closed()
    return times


def bare_compile(count: int) -> list[float]:
    """Seconds per `compile_script` of the same programs on the simulated Thymio's description."""
    description = SimulatedThymio().description
    events = [EventSpec("ready", 1), EventSpec("pong", 2), EventSpec("go", 1)]
    times = []
    for k in range(count):
        started = time.perf_counter()
        compile_script(PROGRAM.format(k=k + 100), description, events)
        times.append(time.perf_counter() - started)
    return times


def _ms(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered) * 1000, ordered[int(len(ordered) * 0.9)] * 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--ws", action="store_true", help="tdmclient over WebSocket (default TCP)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        tmp_path = Path(folder)
        tcp, ws = free_port(), free_port()
        devices = '[devices.thymio]\nkind = "aseba"\nsimulate = true\n'
        tdm = f"[tdm]\nenabled = true\ntcp_port = {tcp}\nws_port = {ws}\n"
        gateway = await start_gateway(tmp_path, gateway_config(tmp_path, devices, extra=tdm))
        try:
            await asyncio.sleep(1.5)  # the simulated Thymio is discovered and described
            trips = await asyncio.to_thread(rounds, ws if args.ws else tcp, args.ws, args.rounds)
            raw = await raw_rounds(tcp, args.rounds)
        finally:
            await gateway.stop()
    bare = bare_compile(args.rounds)
    (trip50, trip90), (bare50, bare90), (raw50, raw90) = _ms(trips), _ms(bare), _ms(raw)
    transport = "WebSocket" if args.ws else "TCP"
    print(f"tdmclient over {transport}, {args.rounds} rounds")
    print(f"compile+load+run+first event through the gateway: p50 {trip50:.1f} ms, p90 {trip90:.1f} ms")
    print(f"the same from a raw TCP client (no polling):      p50 {raw50:.1f} ms, p90 {raw90:.1f} ms")
    print(f"bare compile_script (same programs):              p50 {bare50:.2f} ms, p90 {bare90:.2f} ms")
    print(f"ratio raw round trip / bare compile (p50): {raw50 / bare50:.1f}")


if __name__ == "__main__":
    asyncio.run(main())
