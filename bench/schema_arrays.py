"""Validation of every command type at its limits: the gateway's `from_plain` vs element-by-element validation.

    .venv/bin/python bench/schema_arrays.py [--repeats 5]

Every type some adapter kind accepts is a case (a `replay` device accepts every registered type,
published ones included), built at its limits: each array at its maximum length, each number at the
top of its range, each choice the last one. Arrays inside arrays are filled only up to
`MAX_ELEMENTS` values in all (the most one flat array holds, 65536 words): two replay-only reply
types would otherwise hold 10^7 to 10^8 elements, whose checking grows linearly in a worker
thread. Strings are short: checking one costs the same at any length. Each case has an invalid
twin whose last element (in its largest array) is out of range or of the wrong type: the error
path an attacker can make the gateway walk. Types at their limits under `SMALL` elements are
summed up in one row (their worst figures).

`element-wise` is the validation as it was before the fast paths: every element parsed through its
spec with its own path string, every nested message through the generic field loop. Times are this
thread's CPU time (`time.thread_time`), medians over `--repeats`; both run in the same process, one
after the other, per repeat. `loop stall` is what the gateway's command path costs the event loop:
the longest gap a 1 ms ticker on the loop sees while `CommandRouter` validates the payload (large
ones in steps), median over the repeats; `longest step` is this thread's CPU time of the longest
step of a large payload (the longest callback it gives the loop, whatever the machine's load);
`stall in a thread` is the stall for a large payload validated in a worker thread instead (as the
gateway did before the steps); the ticker alone is the bare baseline.
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

import msgpack

from devices.registry import KINDS
from gateway.commands import CommandRouter
from gateway.errors import InvalidArgument
from gateway.messages import REGISTRY
from gateway.messages.schema import Array, Bool, Float, Int, Nested, Spec, Str, from_plain, info_of, is_large
from gateway.messages.stepwise import from_plain_steps

#: The most values (numbers, strings, maps, arrays) a generated payload holds.
MAX_ELEMENTS = 65536
#: Types whose payload at its limits holds fewer elements are summed up in one row.
SMALL = 64
_FLOAT32_MAX = 3.4028234663852886e38


def _elementwise_parse(spec: Spec, value: object, path: str) -> Any:
    if isinstance(spec, Array):
        if not isinstance(value, list):
            raise InvalidArgument(f"{path}: expected an array")
        if len(value) > spec.max_length:
            raise InvalidArgument(f"{path}: more than {spec.max_length} elements")
        return tuple(_elementwise_parse(spec.item, element, f"{path}[{i}]") for i, element in enumerate(value))
    if isinstance(spec, Nested):
        return _elementwise_from_plain(spec.cls, value, path)
    return spec.parse(value, path)


def _elementwise_from_plain(cls: type[Any], data: Any, path: str = "data") -> Any:
    if not isinstance(data, dict):
        raise InvalidArgument(f"{path}: expected an object")
    info = info_of(cls)
    known = {name for name, _ in info.fields}
    for key in data:
        if key not in known:
            raise InvalidArgument(f"{path}: unknown field {key!r}")
    return cls(
        **{name: _elementwise_parse(spec, data[name], f"{path}.{name}") for name, spec in info.fields if name in data}
    )


def _count(value: object) -> int:
    """Values in `value`, itself included."""
    if isinstance(value, dict):
        return 1 + sum(map(_count, value.values()))
    if isinstance(value, list):
        return 1 + sum(map(_count, value))
    return 1


def at_limits(spec: Spec, room: int = MAX_ELEMENTS) -> Any:
    """Plain data for `spec` at its limits, holding about `room` values at most in nested arrays."""
    if isinstance(spec, Int):
        return spec.choices[-1] if spec.choices is not None else spec.bounds()[1]
    if isinstance(spec, Float):
        if spec.maximum is not None:
            return spec.maximum
        return _FLOAT32_MAX if spec.bits == 32 else 1e308
    if isinstance(spec, Bool):
        return True
    if isinstance(spec, Str):
        return "x" * min(spec.max_length, 8)
    if isinstance(spec, Array):
        item = at_limits(spec.item, room)
        most = spec.length if spec.length is not None else spec.max_length
        count = spec.length if spec.length is not None else max(min(1, most), min(most, room // _count(item)))
        return [item] * count
    if isinstance(spec, Nested):
        return message_at_limits(spec.cls, room)
    raise TypeError(f"no value at limits for {spec!r}")


def message_at_limits(cls: type[Any], room: int = MAX_ELEMENTS) -> dict[str, Any]:
    """Plain data for message class `cls` at its limits."""
    return {name: at_limits(spec, room) for name, spec in info_of(cls).fields}


def _bad(spec: Spec) -> Any:
    """A value `spec` refuses: just out of range, or of the wrong type."""
    if isinstance(spec, Int):
        return max(spec.choices) + 1 if spec.choices is not None else spec.bounds()[1] + 1
    if isinstance(spec, Float):
        return float("nan")
    if isinstance(spec, Bool):
        return 1
    return 7


def spoiled(cls: type[Any], data: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
    """`data` with the last value of its largest array made invalid, and where; None when it has no array."""
    fields = dict(info_of(cls).fields)
    arrays = [name for name, value in data.items() if isinstance(value, list) and value]
    if not arrays:
        return None
    name = max(arrays, key=lambda field: _count(data[field]))
    return {**data, name: _spoil_array(fields[name], data[name])}, name


def _spoil_array(spec: Spec, values: list[Any]) -> list[Any]:
    assert isinstance(spec, Array)
    return [*values[:-1], _spoil(spec.item, values[-1])]


def _spoil(spec: Spec, value: Any) -> Any:
    if isinstance(spec, Array):
        return _spoil_array(spec, value) if value else _bad(spec)
    if isinstance(spec, Nested):
        fields = dict(info_of(spec.cls).fields)
        name = max(value, key=lambda field: _count(value[field]))  # the largest field, else the last
        name = name if _count(value[name]) > 1 else list(value)[-1]
        return {**value, name: _spoil(fields[name], value[name])}
    return _bad(spec)


def _decoded(data: dict[str, Any]) -> dict[str, Any]:
    """`data` as the gateway gets it from a msgpack client: every value its own object, as decoded."""
    decoded: dict[str, Any] = msgpack.unpackb(msgpack.packb(data))
    return decoded


def accepted_by() -> dict[str, list[str]]:
    """Every type some adapter kind accepts, with the kinds (a `replay` device accepts every one)."""
    kinds_of: dict[str, list[str]] = {}
    for kind in KINDS.kinds():
        for type_name in KINDS.adapter_class(kind).accepts:
            kinds_of.setdefault(type_name, []).append(kind)
    largest_first = sorted(kinds_of, key=lambda name: (-_count(message_at_limits(REGISTRY[name].cls)), name))
    return {name: kinds_of[name] for name in largest_first}


def _cpu_ms(validate: Callable[[], object]) -> float:
    started = time.thread_time()
    with contextlib.suppress(InvalidArgument):
        validate()
    return 1000 * (time.thread_time() - started)


async def _loop_stall_ms(router: CommandRouter, cls: type[Any] | None, data: object) -> float:
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
        if cls is None:  # the bare baseline: the ticker alone, for as long as a validation takes
            await asyncio.sleep(0.02)
        else:
            await router._validate(cls, data)
    done.set()
    await task
    return 1000 * max(gaps)


async def _thread_stall_ms(cls: type[Any], data: object) -> float:
    """The stall while a worker thread validates `data` (how the gateway did it before the steps)."""
    router = CommandRouter(None, lambda *_: None)  # type: ignore[arg-type]

    async def in_a_thread(cls: type[Any], data: object) -> Any:
        return await asyncio.to_thread(from_plain, cls, data, "data")

    router._validate = in_a_thread  # type: ignore[method-assign]
    return await _loop_stall_ms(router, cls, data)


def _longest_step_ms(cls: type[Any], data: object) -> float:
    """This thread's CPU time (ms) of the longest step of `from_plain_steps`: the loop's longest callback."""
    steps = from_plain_steps(cls, data)
    longest = 0.0
    while True:
        started = time.thread_time()
        try:
            next(steps)
        except (StopIteration, InvalidArgument):
            return 1000 * max(longest, time.thread_time() - started)
        longest = max(longest, time.thread_time() - started)


def measure(router: CommandRouter, cls: type[Any], data: dict[str, Any], repeats: int) -> list[float]:
    """Medians of element-wise ms, from_plain ms, loop stall ms; the longest step and thread stall (large ones)."""
    before, after, stalls, longest, threaded = [], [], [], [], []
    large = is_large(data)
    for _ in range(repeats):
        before.append(_cpu_ms(functools.partial(_elementwise_from_plain, cls, data)))
        after.append(_cpu_ms(functools.partial(from_plain, cls, data)))
        stalls.append(asyncio.run(_loop_stall_ms(router, cls, data)))
        if large:
            gc.collect()
            longest.append(_longest_step_ms(cls, data))
            threaded.append(asyncio.run(_thread_stall_ms(cls, data)))
    figures = [statistics.median(before), statistics.median(after), statistics.median(stalls)]
    if not large:
        return [*figures, float("nan"), float("nan")]
    return [*figures, statistics.median(longest), statistics.median(threaded)]


def _check(cls: type[Any], data: dict[str, Any], valid: bool) -> None:
    """The case is what it claims: accepted when valid, refused when not (else the figures mean nothing)."""
    try:
        from_plain(cls, data)
    except InvalidArgument as error:
        if valid:
            raise SystemExit(f"{info_of(cls).name} at its limits is refused: {error}") from None
        return
    if not valid:
        raise SystemExit(f"{info_of(cls).name}'s invalid twin is accepted")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    router = CommandRouter(None, lambda *_: None)  # type: ignore[arg-type]  # validation needs no devices
    print(
        "| case | accepted by | elements | element-wise ms | from_plain ms | speed-up | loop stall ms "
        "| longest step ms | stall in a thread |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    small: list[list[float]] = []
    small_names = 0
    for type_name, adapters in accepted_by().items():
        cls = REGISTRY[type_name].cls
        valid = message_at_limits(cls)
        elements = _count(valid)
        spoilt = spoiled(cls, valid)
        variants = [(type_name, _decoded(valid), True)]
        if spoilt is not None:
            variants.append((f"{type_name}, the last of {spoilt[1]} bad", _decoded(spoilt[0]), False))
        by = ", ".join(kind for kind in adapters if kind != "replay") or "replay only"
        for name, data, is_valid in variants:
            _check(cls, data, is_valid)
            figures = measure(router, cls, data, args.repeats)
            if elements < SMALL:
                small.append(figures)
                small_names += is_valid
                continue
            b, a, stall, step, threaded = figures
            steps = "" if step != step else f"{step:.2f}"  # nan: validated at once
            in_thread = "" if threaded != threaded else f"{threaded:.2f}"
            print(
                f"| {name} | {by} | {elements} | {b:.2f} | {a:.2f} | {b / a:.1f}x | {stall:.2f} "
                f"| {steps} | {in_thread} |"
            )
    worst = [max(column) for column in list(zip(*small, strict=True))[:3]]
    print(
        f"| each of the {small_names} other types (and twins), the worst | | < {SMALL} "
        f"| {worst[0]:.2f} | {worst[1]:.2f} | | {worst[2]:.2f} | | |"
    )
    idle = [asyncio.run(_loop_stall_ms(router, None, {})) for _ in range(args.repeats)]
    print(f"| (the ticker alone, 20 ms) | | | | | | {statistics.median(idle):.2f} | | |")


if __name__ == "__main__":
    main()
