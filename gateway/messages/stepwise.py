"""Validation of a large payload in steps, so that an event loop runs other work between them.

`from_plain_steps` gives what `from_plain` gives (the same message, or the same `InvalidArgument`
with the same path), as a generator that pauses (yields None) after each piece of about
`LARGE_PAYLOAD_ELEMENTS` work: 0.2 to 0.6 ms of checking on the fast paths. Arrays are cut into
runs of elements whose work fits a step, each run checked at once; an element too large for a step
(a map holding long arrays itself) is validated in steps of its own. Pure: no loop, no clock.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import Any, TypeVar

from gateway.messages.schema import LARGE_PAYLOAD_ELEMENTS, Array, Nested, Spec, check_object, from_plain, work_of

T = TypeVar("T")

#: A step's work (see `LARGE_PAYLOAD_ELEMENTS`).
STEP = LARGE_PAYLOAD_ELEMENTS

Steps = Generator[None, None, T]


def from_plain_steps(cls: type[T], data: object, path: str = "data") -> Steps[T]:
    """`from_plain(cls, data, path)` in steps: drive it with `next` until `StopIteration` holds the message."""
    if work_of(data, STEP) <= STEP:
        return from_plain(cls, data, path)
    return (yield from _message_steps(cls, data, path))


def _message_steps(cls: type[T], data: object, path: str) -> Steps[T]:
    """`from_plain` of a payload known to be large, in steps."""
    info = check_object(cls, data, path)
    assert isinstance(data, Mapping)
    values = {}
    for name, spec in info.fields:
        if name in data:
            values[name] = yield from _parse_steps(spec, data[name], f"{path}.{name}")
    message: T = cls(**values)
    return message


def _parse_steps(spec: Spec, value: object, path: str) -> Steps[Any]:
    """`spec.parse(value, path)` in steps."""
    if work_of(value, STEP) <= STEP:
        return spec.parse(value, path)
    return (yield from _large_steps(spec, value, path))


def _large_steps(spec: Spec, value: object, path: str) -> Steps[Any]:
    """`spec.parse(value, path)` of a value known to be large, in steps."""
    if isinstance(spec, Nested):
        return (yield from _message_steps(spec.cls, value, path))
    if not isinstance(spec, Array):
        return spec.parse(value, path)  # a scalar spec refuses a container at once
    spec.check_shape(value, path)
    assert isinstance(value, list | tuple)
    parsed: list[Any] = []
    start = 0
    while start < len(value):
        count, first = _run_length(value, start)
        if count == 1 and first > STEP:
            parsed.append((yield from _large_steps(spec.item, value[start], f"{path}[{start}]")))
        else:
            parsed.extend(spec.parse_slice(value[start : start + count], path, start))
            yield
        start += count
    return tuple(parsed)


def _run_length(values: Sequence[Any], start: int) -> tuple[int, int]:
    """How many elements from `start` on make one step's work (at least 1), and the first one's work.

    Judged by the first element (the array's own count of 1/8 per element included), then checked:
    when later elements are larger, fewer of them.
    """
    first = work_of(values[start], STEP)
    count = min(len(values) - start, max(1, 8 * (STEP - 1) // (8 * first + 1)))
    while count > 1 and work_of(values[start : start + count], STEP) > STEP:
        count //= 2
    return count, first


def run(steps: Steps[T]) -> T:
    """Drive `steps` to the end at once (tests and callers without a loop)."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            result: T = done.value
            return result
