"""Kortex cyclic benchmark: the gateway's 1 kHz BaseCyclic loop against a bare asyncio UDP loop.

Method: a simulated arm (devices/sim/kortex_arm.py, Kortex 3) runs in its own process and timestamps
every BaseCyclic request it receives, per session. In turn, (1) the real daemon (`python -m gateway
run`) with one kortex device at `--rate` Hz, publishing every reply to the bus (`publish_rate_hz =
rate`), with `--subscribers` WebSocket clients subscribed to all of its topics, and (2) a bare
asyncio loop in its own process (this file with `--bare`) doing the same exchange: UDP
CreateSession, then RefreshFeedback on absolute deadlines (what the gateway sends while no client
commands the wrist: Refresh is for low-level servoing), each reply parsed, then CloseSession. The
pair's order alternates between repeats. Figures are measured at the arm: achieved rate, and the
send period's p50/p99 and jitter (|period - nominal|) p50/p99; medians over repeats; ratio
gateway/bare. The gateway's own drop counters come from its `cyclic` stream.

Run:  scripts/loopback-only.sh .venv/bin/python bench/kortex.py [--rate 1000] [--duration 10] [--repeats 1]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import aiohttp

THIS_FILE = Path(__file__).resolve()
REPO_ROOT = THIS_FILE.parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.common import read_json_line  # noqa: E402 - after the path fix above

DEVICE = "bench-arm"
START_TIMEOUT_S = 20.0


class Arm:
    """The simulated arm process, asked for its timing over stdin."""

    def __init__(self, proc: asyncio.subprocess.Process, tcp: int, udp: int) -> None:
        self.proc, self.tcp, self.udp = proc, tcp, udp

    @classmethod
    async def start(cls) -> Arm:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "devices.sim.kortex_arm", "--api", "kortex3",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=REPO_ROOT,
            limit=64 * 1024 * 1024,  # the stats line lists every period
        )  # fmt: skip
        assert proc.stdout is not None
        line = await read_json_line(proc.stdout, "listening")
        return cls(proc, line["tcp"], line["udp"])

    async def stats(self) -> dict[str, Any]:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(b"stats\n")
        await self.proc.stdin.drain()
        return await read_json_line(self.proc.stdout, "stats")

    async def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 5)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


def summarize(periods_ms: list[float], nominal_ms: float) -> dict[str, float]:
    cuts = statistics.quantiles(periods_ms, n=100, method="inclusive")
    jitter = statistics.quantiles([abs(p - nominal_ms) for p in periods_ms], n=100, method="inclusive")
    return {
        "rate_hz": 1000.0 * len(periods_ms) / sum(periods_ms),
        "period_p50_ms": cuts[49],
        "period_p99_ms": cuts[98],
        "jitter_p50_ms": jitter[49],
        "jitter_p99_ms": jitter[98],
    }


async def run_gateway(arm: Arm, rate: float, duration: float, subscribers: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as workdir:
        config = Path(workdir) / "gateway.toml"
        config.write_text(
            '[server]\nhost = "127.0.0.1"\nhttp_port = 0\nmsgpack_port = -1\nunix_socket = ""\n\n'
            f'[devices.{DEVICE}]\nkind = "kortex"\nhost = "127.0.0.1"\ntcp_port = {arm.tcp}\nudp_port = {arm.udp}\n'
            f'api = "kortex3"\ncyclic_rate_hz = {rate!r}\npublish_rate_hz = {rate!r}\n'
        )
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gateway", "run", "--config", str(config), "--log-format", "json",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, cwd=REPO_ROOT,
        )  # fmt: skip
        assert proc.stdout is not None
        listening = await read_json_line(proc.stdout, "listening")
        drain = asyncio.create_task(proc.stdout.read())
        port = int(listening["http"].rstrip("/").rsplit(":", 1)[1])
        received = [0] * subscribers
        last_stats: dict[str, Any] = {}
        async with aiohttp.ClientSession() as http:
            sockets = [await http.ws_connect(f"ws://127.0.0.1:{port}/ws") for _ in range(subscribers)]
            connected = asyncio.Event()

            async def consume(index: int, ws: aiohttp.ClientWebSocketResponse) -> None:
                await ws.send_json({"op": "subscribe", "id": 1, "topics": [f"{DEVICE}/**"]})
                async for message in ws:
                    data = json.loads(message.data)
                    if data["op"] == "device" and data["status"] == "connected":
                        connected.set()
                    elif data["op"] == "state":
                        received[index] += 1
                        if data["topic"] == f"{DEVICE}/cyclic":
                            last_stats.update(data["data"])

            tasks = [asyncio.create_task(consume(i, ws)) for i, ws in enumerate(sockets)]
            await asyncio.wait_for(connected.wait(), START_TIMEOUT_S)
            await asyncio.sleep(duration)
            delivered = sum(received)
            for ws in sockets:
                await ws.close()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        proc.terminate()
        await proc.wait()
        drain.cancel()
    stats = await arm.stats()
    [session] = stats["sessions"]
    return {"periods_ms": session["periods_ms"], "gateway_stats": last_stats, "delivered": delivered}


async def run_bare(arm: Arm, rate: float, duration: float) -> dict[str, Any]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(THIS_FILE), "--bare", "--udp-port", str(arm.udp),
        "--rate", repr(rate), "--duration", repr(duration), stdout=asyncio.subprocess.PIPE, cwd=REPO_ROOT,
    )  # fmt: skip
    out, _ = await proc.communicate()
    result = json.loads(out.decode().strip().splitlines()[-1])
    stats = await arm.stats()
    [session] = stats["sessions"]
    return {"periods_ms": session["periods_ms"], "bare": result}


async def bare_loop(udp_port: int, rate: float, duration: float) -> None:
    """The reference: the same UDP exchange with nothing else in the process."""
    from protocols.kortex.frame import parse_payload
    from protocols.kortex.generated import BaseCyclicKortex3_pb2, Session_pb2
    from protocols.kortex.router import Response, Router
    from protocols.kortex.services import Function

    loop = asyncio.get_running_loop()
    router = Router()
    replies: dict[int, bytes] = {}
    waiter: asyncio.Future[None] | None = None

    class Protocol(asyncio.DatagramProtocol):
        def datagram_received(self, data: bytes, addr: Any) -> None:
            event = router.receive(data)
            if isinstance(event, Response):
                replies[event.message_id] = event.frame.payload
                if waiter is not None and not waiter.done():
                    waiter.set_result(None)

    transport, _ = await loop.create_datagram_endpoint(Protocol, remote_addr=("127.0.0.1", udp_port))
    info = Session_pb2.CreateSessionInfo(username="admin", password="admin", session_inactivity_timeout=35000)
    waiter = loop.create_future()
    transport.sendto(router.request(Function.SESSION_CREATE_SESSION, info.SerializeToString())[1])
    await asyncio.wait_for(waiter, 2)
    period, sent, parsed = 1.0 / rate, 0, 0
    deadline = start = loop.time()
    while loop.time() - start < duration:
        now = loop.time()
        while deadline <= now:
            sent += 1
            transport.sendto(router.request(Function.BASE_CYCLIC_REFRESH_FEEDBACK)[1])
            deadline += period
        for payload in replies.values():
            parse_payload(BaseCyclicKortex3_pb2.Feedback, payload)
            parsed += 1
        replies.clear()
        await asyncio.sleep(deadline - loop.time())
    waiter = loop.create_future()
    transport.sendto(router.request(Function.SESSION_CLOSE_SESSION)[1])
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(waiter, 1)
    transport.close()
    print(json.dumps({"sent": sent, "replies": parsed}))


def fmt(row: dict[str, float]) -> str:
    return (
        f"{row['rate_hz']:8.1f} Hz  period p50 {row['period_p50_ms']:.3f} ms  p99 {row['period_p99_ms']:.3f} ms  "
        f"jitter p50 {row['jitter_p50_ms']:.3f} ms  p99 {row['jitter_p99_ms']:.3f} ms"
    )


async def main(args: argparse.Namespace) -> None:
    arm = await Arm.start()
    nominal = 1000.0 / args.rate
    results: dict[str, list[dict[str, float]]] = {"gateway": [], "bare": []}
    try:
        for repeat in range(args.repeats):
            order = ("gateway", "bare") if repeat % 2 == 0 else ("bare", "gateway")
            for kind in order:
                if kind == "gateway":
                    run = await run_gateway(arm, args.rate, args.duration, args.subscribers)
                    extra = f"  gateway counters {run['gateway_stats']}  states delivered {run['delivered']}"
                else:
                    run = await run_bare(arm, args.rate, args.duration)
                    extra = f"  bare {run['bare']}"
                row = summarize(run["periods_ms"], nominal)
                results[kind].append(row)
                print(f"repeat {repeat + 1} {kind:7s} {fmt(row)}\n{extra}", flush=True)
    finally:
        await arm.stop()
    medians = {
        kind: {key: statistics.median(row[key] for row in rows) for key in rows[0]} for kind, rows in results.items()
    }
    print(f"\n{args.rate:g} Hz for {args.duration:g} s x {args.repeats}, {args.subscribers} WebSocket subscribers")
    for kind in ("gateway", "bare"):
        print(f"{kind:7s} {fmt(medians[kind])}")
    gateway, bare = medians["gateway"], medians["bare"]
    print(
        f"ratio gateway/bare: rate {gateway['rate_hz'] / bare['rate_hz']:.3f}, "
        f"period p99 {gateway['period_p99_ms'] / bare['period_p99_ms']:.2f}, "
        f"jitter p99 {gateway['jitter_p99_ms'] / bare['jitter_p99_ms']:.2f}"
    )


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--subscribers", type=int, default=10)
    parser.add_argument("--bare", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--udp-port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare:
        asyncio.run(bare_loop(args.udp_port, args.rate, args.duration))
    else:
        asyncio.run(main(args))


if __name__ == "__main__":
    cli()
