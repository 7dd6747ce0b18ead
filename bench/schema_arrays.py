"""Validation time of commands with long arrays: the gateway's `from_plain` vs element-by-element validation.

    .venv/bin/python bench/schema_arrays.py [--repeats 15]

Each case is a schema-valid command at its array limit (and one invalid variant, whose error path
is what an attacker can make the gateway walk). `element-wise` is the validation as it was before
the fast paths: every element parsed through its spec with its own path string, every nested message
through the generic field loop. Times are this thread's CPU time (`time.thread_time`), medians over
`--repeats`; both run in the same process, one after the other, per repeat. `loop stall` is what
the gateway's command path costs the event loop: the longest gap a 1 ms ticker on the loop sees
while `CommandRouter` validates the payload (large ones in a worker thread), median over the repeats.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from gateway.commands import CommandRouter
from gateway.errors import InvalidArgument
from gateway.messages.asebaros import LoadScript, SetVariable
from gateway.messages.schema import Array, Nested, Spec, from_plain, info_of


def _elementwise_parse(spec: Spec, value: object, path: str) -> Any:
    if isinstance(spec, Array):
        assert isinstance(value, list)
        if len(value) > spec.max_length:
            raise InvalidArgument(f"{path}: more than {spec.max_length} elements")
        return tuple(_elementwise_parse(spec.item, element, f"{path}[{i}]") for i, element in enumerate(value))
    if isinstance(spec, Nested):
        return _elementwise_from_plain(spec.cls, value, path)
    return spec.parse(value, path)


def _elementwise_from_plain(cls: type[Any], data: Any, path: str = "data") -> Any:
    info = info_of(cls)
    known = {name for name, _ in info.fields}
    for key in data:
        if key not in known:
            raise InvalidArgument(f"{path}: unknown field {key!r}")
    return cls(
        **{name: _elementwise_parse(spec, data[name], f"{path}.{name}") for name, spec in info.fields if name in data}
    )


CASES: dict[str, tuple[type[Any], dict[str, Any]]] = {
    "LoadScript, 4096 constants": (
        LoadScript,
        {"file_name": "a.aesl", "constants": [{"name": f"c{i}", "value": i} for i in range(4096)]},
    ),
    "SetVariable, 32768 words": (SetVariable, {"variable": "v", "data": [i % 30000 - 15000 for i in range(32768)]}),
    "SetVariable, 32768 words, the last out of range": (
        SetVariable,
        {"variable": "v", "data": [*range(32767), 40000]},
    ),
}


def _cpu_ms(validate: Callable[[], object]) -> float:
    started = time.thread_time()
    with contextlib.suppress(InvalidArgument):
        validate()
    return 1000 * (time.thread_time() - started)


async def _loop_stall_ms(router: CommandRouter, cls: type[Any], data: dict[str, Any]) -> float:
    """The longest gap (ms) between ticks of a 1 ms ticker while the router validates `data`."""
    loop = asyncio.get_running_loop()
    gaps = [0.0]
    done = asyncio.Event()

    async def ticker() -> None:
        last = loop.time()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = loop.time()
            gaps.append(now - last)
            last = now

    gc.collect()  # a collection of the garbage the element-wise runs left would count as a stall
    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.005)
    with contextlib.suppress(InvalidArgument):
        if cls is type(None):  # the bare baseline: the ticker alone, for as long as a validation takes
            await asyncio.sleep(0.02)
        else:
            await router._validate(cls, data)
    done.set()
    await task
    return 1000 * max(gaps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    router = CommandRouter(None, lambda *_: None)  # type: ignore[arg-type]  # validation needs no devices
    print("| case | element-wise ms | from_plain ms | speed-up | loop stall ms (1 ms ticker) |")
    print("|---|---|---|---|---|")
    for name, (cls, data) in CASES.items():
        before, after, stalls = [], [], []
        for _ in range(args.repeats):
            before.append(_cpu_ms(functools.partial(_elementwise_from_plain, cls, data)))
            after.append(_cpu_ms(functools.partial(from_plain, cls, data)))
            stalls.append(asyncio.run(_loop_stall_ms(router, cls, data)))
        b, a = statistics.median(before), statistics.median(after)
        print(f"| {name} | {b:.2f} | {a:.2f} | {b / a:.1f}x | {statistics.median(stalls):.2f} |")
    idle = [asyncio.run(_loop_stall_ms(router, type(None), {})) for _ in range(args.repeats)]
    print(f"| (the ticker alone, 20 ms) | | | | {statistics.median(idle):.2f} |")


if __name__ == "__main__":
    main()
