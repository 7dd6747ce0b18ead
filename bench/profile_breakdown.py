"""Where a profiled gateway's CPU went: cProfile's own time per function, summed by category.

The profile covers the benchmark's window only (bench/profiled_gateway.py), so it is the steady
per-message cost.

Categories follow the fan-out path of one sample: the device making it, the bus and the outboxes
routing it (bookkeeping), encoding it once (plain data, then JSON/msgpack), framing it (WebSocket
headers, multi-sample arrays, joining a batch), writing it (the transport and the send system
call), and the event loop around all that. The event loop's waits in epoll (idle) and imports
(should any happen) are left out. cProfile adds a fixed cost to every Python call, so it inflates
call-heavy Python code (bookkeeping, to_plain) against C code (orjson, send): read the shares as
an upper bound for Python code.
"""

from __future__ import annotations

import pstats
from dataclasses import dataclass
from pathlib import Path

#: (category, rule) in order; the first rule a function matches names its category. A rule is a
#: (path fragment, function names or None for any) pair; the path is cProfile's file name ("~" for builtins).
RULES: tuple[tuple[str, tuple[tuple[str, frozenset[str] | None], ...]], ...] = (
    ("idle (waiting in epoll)", (("~", frozenset({"<method 'poll' of 'select.epoll' objects>"})),)),
    (
        "startup (imports)",
        (
            ("<frozen importlib", None),
            ("", frozenset({"<module>"})),
            ("~", frozenset({"<built-in method builtins.exec>"})),
        ),
    ),
    ("device (sim samples)", (("devices/sim/", None), ("gateway/messages/common.py", None))),
    (
        "encode (to_plain, orjson, msgpack)",
        (
            ("gateway/messages/", None),
            ("gateway/bus.py", frozenset({"data", "envelope", "frame", "encoded", "<lambda>"})),
            ("gateway/wire.py", frozenset({"encode"})),
            ("msgpack/", None),
            (
                "~",
                frozenset({"<built-in method orjson.dumps>", "<method 'pack' of 'msgpack._cmsgpack.Packer' objects>"}),
            ),
        ),
    ),
    (
        "framing (WebSocket headers, arrays, joins)",
        (
            ("gateway/wire.py", None),
            ("~", frozenset({"<method 'join' of 'bytes' objects>", "<built-in method _struct.pack>"})),
        ),
    ),
    (
        "write (transport, send syscall)",
        (
            ("gateway/servers/socket_transport.py", None),
            ("asyncio/selector_events.py", frozenset({"write", "get_write_buffer_size", "is_closing"})),
            ("asyncio/transports.py", None),
            ("asyncio/streams.py", frozenset({"write", "drain"})),
            ("~", frozenset({"<method 'send' of '_socket.socket' objects>"})),
        ),
    ),
    (
        "bus + outbox bookkeeping",
        (
            ("gateway/bus.py", None),
            ("gateway/faces/", None),
            ("gateway/core/", None),
            ("gateway/topics.py", None),
        ),
    ),
    (
        "event loop",
        (
            ("asyncio/", None),
            ("selectors.py", None),
        ),
    ),
)
OTHER = "other (aiohttp reading, metrics, logging, ...)"
TOP_FUNCTIONS = 12


@dataclass(frozen=True)
class Breakdown:
    """Seconds of own time per category (idle and startup left out of `total`), and the costliest functions."""

    categories: list[tuple[str, float]]
    total: float
    top: list[tuple[str, float]]


def category_of(path: str, function: str) -> str:
    """The category of one profiled function."""
    path = path.replace("\\", "/")
    for category, rules in RULES:
        for fragment, names in rules:
            if fragment in path and (names is None or function in names):
                return category
    return OTHER


def _label(path: str, line: int, function: str) -> str:
    if path == "~":
        return function
    return f"{'/'.join(path.split('/')[-2:])}:{line}({function})"


def profile_breakdown(path: Path) -> Breakdown:
    """Sum a cProfile dump's own times (tottime) by category."""
    stats = pstats.Stats(str(path))
    sums: dict[str, float] = {}
    functions: list[tuple[str, float]] = []
    left_out = {RULES[0][0], RULES[1][0]}  # idle is not work; startup is paid once, not per message
    for (file, line, function), (_calls, _primitive, own, _cumulative, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        category = category_of(file, function)
        sums[category] = sums.get(category, 0.0) + own
        if category not in left_out:
            functions.append((_label(file, line, function), own))
    order = [category for category, _ in RULES if category not in left_out] + [OTHER]
    categories = [(category, sums.get(category, 0.0)) for category in order]
    functions.sort(key=lambda item: item[1], reverse=True)
    return Breakdown(categories, sum(seconds for _, seconds in categories), functions[:TOP_FUNCTIONS])
