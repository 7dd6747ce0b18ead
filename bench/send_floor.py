"""The CPU one TCP send costs on this machine: the floor under any fan-out server's per-client write.

Method: a reader process holds `--clients` loopback TCP connections and reads whatever arrives
(one `selectors` loop, as a client process would). This process writes `--bytes` to every
connection `--rate` times a second, on absolute deadlines, with a bare non-blocking
`socket.send` and nothing else: no event loop, no encoding, no bookkeeping. Its CPU time
(`getrusage`, user + system) over the window, divided by the sends, is what one send costs the
sender. On loopback that includes the receiving side's TCP work, which the kernel runs inside the
sender's system call.

With `--bytes` set to what the gateway writes per client per turn (the default, 932 B, is four
233-byte msgpack state messages: bench/fanout.py's multi-topic scenario), the cost per send over
`--messages-per-send` is the least CPU per delivered message that one write per client per turn
can cost here, for a server in any language.

Run:  scripts/loopback-only.sh .venv/bin/python bench/send_floor.py [--clients 50] [--rate 250]
      [--bytes 932] [--messages-per-send 4] [--seconds 5] [--repeats 3]
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import multiprocessing.synchronize
import resource
import selectors
import socket
import statistics
import time

HOST = "127.0.0.1"
READ_SIZE = 65536
WARMUP_S = 1.0


def read_all(port: int, clients: int, stop: multiprocessing.synchronize.Event) -> None:
    """Connect `clients` times and read until `stop` is set."""
    selector = selectors.DefaultSelector()
    for _ in range(clients):
        sock = socket.create_connection((HOST, port))
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
    while not stop.is_set():
        for key, _ in selector.select(0.1):
            with contextlib.suppress(BlockingIOError):
                key.fileobj.recv(READ_SIZE)  # type: ignore[union-attr]


def send_for(connections: list[socket.socket], data: bytes, rate: float, seconds: float) -> int:
    """Write `data` to every connection `rate` times a second for `seconds`; the number of sends."""
    period = 1.0 / rate
    sends = 0
    deadline = time.monotonic()
    end = deadline + seconds
    while deadline < end:
        for sock in connections:
            sock.send(data)
        sends += len(connections)
        deadline += period
        delay = deadline - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    return sends


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(clients: int, rate: float, size: int, seconds: float) -> float:
    """µs of this process's CPU per send, with a fresh reader process and fresh connections."""
    listener = socket.create_server((HOST, 0), backlog=clients)
    stop = multiprocessing.Event()
    reader = multiprocessing.Process(target=read_all, args=(listener.getsockname()[1], clients, stop), daemon=True)
    reader.start()
    connections = []
    try:
        for _ in range(clients):
            sock, _ = listener.accept()
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as asyncio's transports do
            sock.setblocking(False)
            connections.append(sock)
        data = b"\x00" * size
        send_for(connections, data, rate, WARMUP_S)
        before = cpu_seconds()
        sends = send_for(connections, data, rate, seconds)
        return (cpu_seconds() - before) * 1e6 / sends
    finally:
        stop.set()
        reader.join(5)
        for sock in connections:
            sock.close()
        listener.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rate", type=float, default=250.0, help="writes per second to each client")
    parser.add_argument("--bytes", type=int, default=932, help="bytes per write")
    parser.add_argument("--messages-per-send", type=int, default=4, help="messages one write carries")
    parser.add_argument("--seconds", type=float, default=5.0, help="measurement window of each repeat")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if min(args.clients, args.bytes, args.messages_per_send, args.repeats) < 1 or args.rate <= 0:
        parser.error("--clients, --bytes, --messages-per-send, --repeats and --rate must be positive")
    runs = [measure(args.clients, args.rate, args.bytes, args.seconds) for _ in range(args.repeats)]
    median = statistics.median(runs)
    print(
        f"{args.clients} clients x {args.rate:g} writes/s of {args.bytes} B: "
        f"{median:.2f} µs of CPU per send (median of {', '.join(f'{run:.2f}' for run in runs)}), "
        f"{median / args.messages_per_send:.2f} µs per message at {args.messages_per_send} per send"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
