"""Kortex cyclic benchmark: the gateway's 1 kHz BaseCyclic loop under client load, against bare loops.

Method: a simulated arm (devices/sim/kortex_arm.py, Kortex 3) runs in its own process and timestamps
every BaseCyclic request it receives, per session. In turn, in one run:

1. the real daemon (`python -m gateway run`) with one kortex device at `--rate` Hz, publishing every
   reply to the bus (`publish_rate_hz = rate`), with `--subscribers` WebSocket clients that each
   receive every sample of `--topics` (default `actuators`: one sample per cycle) and count them;
   its loop runs in its cyclic process (devices/kortex/cyclic_process.py), whose scheduling is printed;
2. `bare-thread`: a bare blocking UDP loop in its own process (this file with `--bare thread`), the
   mechanism the gateway's cyclic process uses: sleep to an absolute deadline
   (`time.perf_counter_ns`) less `--spin-us`, spin to it, send, read the replies, parse them;
3. `bare-asyncio`: the same exchange on a bare asyncio loop (`--bare asyncio`), the mechanism the
   gateway used before its loop had a thread (asyncio wakes on whole milliseconds).

Each does UDP CreateSession, RefreshFeedback on absolute deadlines (what the gateway sends while no
client commands the wrist), each reply parsed, then CloseSession. The order rotates between
repeats. Figures are measured at the arm: achieved rate, the send period's p50/p99 and jitter
(|period - nominal|) p50/p99; medians over repeats; the gateway against the bare thread loop (the
goal: period and jitter p99 within +0.1 ms) and against bare asyncio. The gateway's drop counters
come from its `cyclic` stream; "delivered" is the share of the samples published during the
clients' window that every client received.

Run:  scripts/loopback-only.sh .venv/bin/python bench/kortex.py [--rate 1000] [--duration 10] [--repeats 3]
      [--subscribers 50] [--priority 0] [--spin-us 100]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import aiohttp
import orjson

THIS_FILE = Path(__file__).resolve()
REPO_ROOT = THIS_FILE.parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.common import read_json_line  # noqa: E402 - after the path fix above

DEVICE = "bench-arm"
START_TIMEOUT_S = 20.0
#: SCHED_FIFO priority of the simulated arm when permitted: above any loop measured.
ARM_PRIORITY = 50


class Arm:
    """The simulated arm process, asked for its timing over stdin."""

    def __init__(self, proc: asyncio.subprocess.Process, tcp: int, udp: int) -> None:
        self.proc, self.tcp, self.udp = proc, tcp, udp
        self.scheduling = "normal scheduling"

    @classmethod
    async def start(cls) -> Arm:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "devices.sim.kortex_arm", "--api", "kortex3",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=REPO_ROOT,
            limit=64 * 1024 * 1024,  # the stats line lists every period
        )  # fmt: skip
        assert proc.stdout is not None
        line = await read_json_line(proc.stdout, "listening")
        arm = cls(proc, line["tcp"], line["udp"])
        try:
            # A real arm is its own computer: give the simulated one the CPU whenever a datagram comes,
            # so it timestamps arrivals, not the moments this shared machine got round to it.
            os.sched_setscheduler(proc.pid, os.SCHED_FIFO, os.sched_param(ARM_PRIORITY))
            arm.scheduling = f"SCHED_FIFO {ARM_PRIORITY}"
        except OSError as error:
            arm.scheduling = f"normal scheduling ({error.strerror})"
        return arm

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


async def run_gateway(arm: Arm, args: argparse.Namespace) -> dict[str, Any]:
    rate, duration, subscribers = args.rate, args.duration, args.subscribers
    with tempfile.TemporaryDirectory() as workdir:
        config = Path(workdir) / "gateway.toml"
        config.write_text(
            '[server]\nhost = "127.0.0.1"\nhttp_port = 0\nmsgpack_port = -1\nunix_socket = ""\n\n'
            f'[devices.{DEVICE}]\nkind = "kortex"\nhost = "127.0.0.1"\nusername = "admin"\npassword = "admin"\n'
            f"tcp_port = {arm.tcp}\nudp_port = {arm.udp}\n"
            f'api = "kortex3"\ntransport = "tcp"\ncyclic_rate_hz = {rate!r}\npublish_rate_hz = {rate!r}\n'
            f"cyclic_priority = {args.priority}\ncyclic_spin_us = {args.spin_us!r}\n"
            f"cyclic_cpus = {list(args.loop_cpus)!r}\n"
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
        first_seq: dict[str, int] = {}
        last_seq: dict[str, int] = {}
        last_stats: dict[str, Any] = {}
        counting = False
        topics = [f"{DEVICE}/{topic}" for topic in args.topics.split(",")]
        stats_topic = f"{DEVICE}/cyclic"
        async with aiohttp.ClientSession() as http:
            # compress=0: no permessage-deflate offer, as in the baseline method (specs/perf-baselines.md).
            url = f"ws://127.0.0.1:{port}/ws"
            sockets = [await http.ws_connect(url, compress=0, max_msg_size=0) for _ in range(subscribers)]
            connected = asyncio.Event()

            async def consume(index: int, ws: aiohttp.ClientWebSocketResponse) -> None:
                await ws.send_str(orjson.dumps({"op": "subscribe", "id": 1, "topics": [*topics, stats_topic]}).decode())
                loads = orjson.loads
                async for message in ws:  # the hot path: one parse and a few lookups per sample
                    data = loads(message.data)
                    op = data["op"]
                    if op == "state":
                        topic = data["topic"]
                        if topic == stats_topic:
                            last_stats.update(data["data"])
                        elif counting:
                            received[index] += 1
                            first_seq.setdefault(topic, data["seq"])
                            last_seq[topic] = data["seq"]
                    elif op == "device" and data["status"] == "connected":
                        connected.set()

            tasks = [asyncio.create_task(consume(i, ws)) for i, ws in enumerate(sockets)]
            await asyncio.wait_for(connected.wait(), START_TIMEOUT_S)
            await asyncio.sleep(1.0)  # every client subscribed and past the latest-value replay
            counting = True
            await asyncio.sleep(duration)
            counting = False
            delivered = sum(received)
            published = sum(last_seq[t] - first_seq[t] + 1 for t in last_seq)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for ws in sockets:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(ws.close(), 1.0)
        proc.terminate()
        await proc.wait()
        log = (await drain).decode(errors="replace").splitlines()
    scheduling = [line for line in log if ": cyclic process " in line]
    if scheduling:
        print(f"  gateway log: {scheduling[0][:300]}")
    problems = [line for line in log if '"warning"' in line or '"error"' in line or "LinkLost" in line]
    for line in problems[:5]:
        print(f"  gateway log: {line[:300]}")
    stats = await arm.stats()
    sessions = stats["sessions"]
    if len(sessions) > 1:
        print(f"  the gateway reconnected: {len(sessions)} UDP sessions; measuring the longest")
    session = max(sessions, key=lambda s: s["requests"])
    share = delivered / (published * subscribers) if published else 0.0
    return {"periods_ms": session["periods_ms"], "gateway_stats": last_stats, "delivered": share}


async def run_bare(arm: Arm, kind: str, args: argparse.Namespace) -> dict[str, Any]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(THIS_FILE), "--bare", kind, "--udp-port", str(arm.udp), "--rate", repr(args.rate),
        "--duration", repr(args.duration + 1.0), "--spin-us", repr(args.spin_us), "--priority", str(args.priority),
        "--loop-cpus", ",".join(map(str, args.loop_cpus)),
        stdout=asyncio.subprocess.PIPE, cwd=REPO_ROOT,
    )  # fmt: skip
    out, _ = await proc.communicate()
    result = json.loads(out.decode().strip().splitlines()[-1])
    stats = await arm.stats()
    [session] = stats["sessions"]
    return {"periods_ms": session["periods_ms"], "bare": result}


async def bare_asyncio(udp_port: int, rate: float, duration: float) -> None:
    """A reference: the same UDP exchange on a bare asyncio loop, nothing else in the process."""
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


def bare_thread(udp_port: int, rate: float, duration: float, spin_us: float, priority: int) -> None:
    """The reference: a blocking loop on absolute deadlines (sleep, then spin), nothing else in the process."""
    import ctypes
    import socket
    import time

    from protocols.kortex.frame import parse_payload
    from protocols.kortex.generated import BaseCyclicKortex3_pb2, Session_pb2
    from protocols.kortex.router import Response, Router
    from protocols.kortex.services import Function

    with contextlib.suppress(OSError):
        ctypes.CDLL(None, use_errno=True).prctl(29, 1, 0, 0, 0)  # PR_SET_TIMERSLACK, as the gateway's thread
    if priority:
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.connect(("127.0.0.1", udp_port))
    router = Router()
    info = Session_pb2.CreateSessionInfo(username="admin", password="admin", session_inactivity_timeout=35000)
    sock.settimeout(2)
    sock.send(router.request(Function.SESSION_CREATE_SESSION, info.SerializeToString())[1])
    router.receive(sock.recv(65536))
    sock.setblocking(False)
    period, spin = round(1e9 / rate), round(spin_us * 1000)
    sent = parsed = 0
    deadline = start = time.perf_counter_ns()
    end = start + round(duration * 1e9)
    while deadline < end:
        now = time.perf_counter_ns()
        while deadline <= now:
            sock.send(router.request(Function.BASE_CYCLIC_REFRESH_FEEDBACK)[1])
            sent += 1
            deadline += period
        while True:
            try:
                event = router.receive(sock.recv(65536))
            except BlockingIOError:
                break
            if isinstance(event, Response):
                parse_payload(BaseCyclicKortex3_pb2.Feedback, event.frame.payload)
                parsed += 1
        remaining = deadline - spin - time.perf_counter_ns()
        if remaining > 0:
            time.sleep(remaining / 1e9)
        while time.perf_counter_ns() < deadline:
            pass
    sock.setblocking(True)
    sock.settimeout(1)
    sock.send(router.request(Function.SESSION_CLOSE_SESSION)[1])
    with contextlib.suppress(OSError):
        while True:
            sock.recv(65536)  # drain until the CloseSession reply (or the timeout)
    sock.close()
    print(json.dumps({"sent": sent, "replies": parsed}))


def fmt(row: dict[str, float]) -> str:
    return (
        f"{row['rate_hz']:8.1f} Hz  period p50 {row['period_p50_ms']:.3f} ms  p99 {row['period_p99_ms']:.3f} ms  "
        f"jitter p50 {row['jitter_p50_ms']:.3f} ms  p99 {row['jitter_p99_ms']:.3f} ms"
    )


def load() -> str:
    """The load averages (1, 5, 15 min), as `uptime` shows them."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


KINDS = ("gateway", "bare-thread", "bare-asyncio")


async def main(args: argparse.Namespace) -> None:
    arm = await Arm.start()
    nominal = 1000.0 / args.rate
    results: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
    drops: list[int] = []
    delivered: list[float] = []
    print(f"load average before: {load()}; simulated arm: {arm.scheduling}", flush=True)
    try:
        for repeat in range(args.repeats):
            order = KINDS[repeat % 3 :] + KINDS[: repeat % 3]
            for kind in order:
                if kind == "gateway":
                    run = await run_gateway(arm, args)
                    stats = run["gateway_stats"]
                    drops.append(int(stats.get("dropped", -1)))
                    delivered.append(run["delivered"])
                    extra = (
                        f"  gateway counters {stats}  delivered {run['delivered']:.4f} of every sample to every client"
                    )
                else:
                    run = await run_bare(arm, kind.removeprefix("bare-"), args)
                    extra = f"  {kind} {run['bare']}"
                row = summarize(run["periods_ms"], nominal)
                results[kind].append(row)
                print(f"repeat {repeat + 1} {kind:12s} {fmt(row)}\n{extra}", flush=True)
    finally:
        await arm.stop()
    medians = {
        kind: {key: statistics.median(row[key] for row in rows) for key in rows[0]} for kind, rows in results.items()
    }
    print(
        f"\n{args.rate:g} Hz for {args.duration:g} s x {args.repeats}, {args.subscribers} WebSocket subscribers "
        f"on {args.topics}, cyclic_priority {args.priority}, spin {args.spin_us:g} us, loop CPUs "
        f"{list(args.loop_cpus) or 'any'}, other CPUs {list(args.others_cpus) or 'any'}; load average after: {load()}"
    )
    for kind in KINDS:
        print(f"{kind:12s} {fmt(medians[kind])}")
    gateway = medians["gateway"]
    for bare_kind in ("bare-thread", "bare-asyncio"):
        bare = medians[bare_kind]
        print(
            f"gateway vs {bare_kind}: rate x{gateway['rate_hz'] / bare['rate_hz']:.3f}, "
            f"period p99 {gateway['period_p99_ms'] - bare['period_p99_ms']:+.3f} ms "
            f"(x{gateway['period_p99_ms'] / bare['period_p99_ms']:.2f}), "
            f"jitter p99 {gateway['jitter_p99_ms'] - bare['jitter_p99_ms']:+.3f} ms "
            f"(x{gateway['jitter_p99_ms'] / bare['jitter_p99_ms']:.2f})"
        )
    print(f"gateway dropped cycles per repeat {drops}; delivered share median {statistics.median(delivered):.4f}")


def _cpus(text: str) -> tuple[int, ...]:
    """CPU numbers from "0,1" (empty: any CPU)."""
    return tuple(int(cpu) for cpu in text.split(",") if cpu.strip())


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--subscribers", type=int, default=50)
    parser.add_argument("--topics", default="actuators", help="comma-separated streams every client takes")
    parser.add_argument("--priority", type=int, default=0, help="SCHED_FIFO priority of the loops (0: normal)")
    parser.add_argument("--spin-us", type=float, default=100.0, help="spin before each deadline (µs)")
    parser.add_argument(
        "--loop-cpus", type=_cpus, default=(), help="comma-separated CPUs of the loops (cyclic_cpus; default any)"
    )
    parser.add_argument(
        "--others-cpus",
        type=_cpus,
        default=(),
        help="CPUs of everything else: this process (the clients), the arm, the daemon (default any)",
    )
    parser.add_argument("--bare", choices=("thread", "asyncio"), help=argparse.SUPPRESS)
    parser.add_argument("--udp-port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare and args.loop_cpus:
        os.sched_setaffinity(0, args.loop_cpus)  # as the gateway's cyclic process with `cyclic_cpus`
    elif args.others_cpus and not args.bare:
        os.sched_setaffinity(0, args.others_cpus)  # the daemon and the arm, started from here, inherit it
    if args.bare == "asyncio":
        asyncio.run(bare_asyncio(args.udp_port, args.rate, args.duration))
    elif args.bare == "thread":
        bare_thread(args.udp_port, args.rate, args.duration, args.spin_us, args.priority)
    else:
        asyncio.run(main(args))


if __name__ == "__main__":
    cli()
