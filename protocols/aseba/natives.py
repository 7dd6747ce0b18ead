"""The standard Aseba math natives (aseba vm/natives.c) for the Python VM, by name.

Each native pops its arguments' addresses (first argument first) and then the sizes of its
template arrays, as the compiler pushed them, and works on 16-bit words. `math.sin`, `math.cos`
and `math.atan2` use floating point rounded to the nearest word: the C VM's integer
approximations may differ by one.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from protocols.aseba.vm import AsebaVM, Native, s16


def _pop(vm: AsebaVM, arguments: int, templates: int) -> tuple[list[int], list[int]]:
    addresses = [vm.pop() & 0xFFFF for _ in range(arguments)]
    sizes = [vm.pop() for _ in range(templates)]
    return addresses, sizes


def _elementwise(function: Callable[[int, int], int]) -> Native:
    def native(vm: AsebaVM) -> None:
        (dest, a, b), (size,) = _pop(vm, 3, 1)
        v = vm.variables
        for i in range(size):
            v[dest + i] = s16(function(v[a + i], v[b + i]))

    return native


def _div(a: int, b: int) -> int:
    if b == 0:
        return 0  # natives.c leaves 0 rather than stopping the VM
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


def _copy(vm: AsebaVM) -> None:
    (dest, src), (size,) = _pop(vm, 2, 1)
    vm.variables[dest : dest + size] = vm.variables[src : src + size]


def _fill(vm: AsebaVM) -> None:
    (dest, value), (size,) = _pop(vm, 2, 1)
    vm.variables[dest : dest + size] = [vm.variables[value]] * size


def _addscalar(vm: AsebaVM) -> None:
    (dest, src, scalar), (size,) = _pop(vm, 3, 1)
    v = vm.variables
    for i in range(size):
        v[dest + i] = s16(v[src + i] + v[scalar])


def _clamp(vm: AsebaVM) -> None:
    (dest, x, low, high), (size,) = _pop(vm, 4, 1)
    v = vm.variables
    for i in range(size):
        v[dest + i] = min(max(v[x + i], v[low + i]), v[high + i])


def _dot(vm: AsebaVM) -> None:
    (dest, a, b, shift), (size,) = _pop(vm, 4, 1)
    v = vm.variables
    total = sum(v[a + i] * v[b + i] for i in range(size))
    v[dest] = s16(total >> max(0, v[shift]))


def _stat(vm: AsebaVM) -> None:
    (src, low, high, mean), (size,) = _pop(vm, 4, 1)
    v = vm.variables
    values = v[src : src + size] or [0]
    v[low], v[high] = min(values), max(values)
    v[mean] = s16(_div(sum(values), len(values)))


def _argbounds(vm: AsebaVM) -> None:
    (src, argmin, argmax), (size,) = _pop(vm, 3, 1)
    v = vm.variables
    values = v[src : src + size] or [0]
    v[argmin], v[argmax] = values.index(min(values)), values.index(max(values))


def _sort(vm: AsebaVM) -> None:
    (array,), (size,) = _pop(vm, 1, 1)
    vm.variables[array : array + size] = sorted(vm.variables[array : array + size])


def _muldiv(vm: AsebaVM) -> None:
    (dest, a, b, c), (size,) = _pop(vm, 4, 1)
    v = vm.variables
    for i in range(size):
        v[dest + i] = s16(_div(v[a + i] * v[b + i], v[c + i]))


def _unary(function: Callable[[int], int]) -> Native:
    def native(vm: AsebaVM) -> None:
        (dest, src), (size,) = _pop(vm, 2, 1)
        v = vm.variables
        for i in range(size):
            v[dest + i] = s16(function(v[src + i]))

    return native


def _angle(value: int) -> float:
    return value * math.pi / 32768


def _atan2(vm: AsebaVM) -> None:
    (dest, y, x), (size,) = _pop(vm, 3, 1)
    v = vm.variables
    for i in range(size):
        v[dest + i] = s16(round(math.atan2(v[y + i], v[x + i]) * 32768 / math.pi))


def _rot2(vm: AsebaVM) -> None:
    (dest, vector, angle), _ = _pop(vm, 3, 0)
    v = vm.variables
    a = _angle(v[angle])
    x, y = v[vector], v[vector + 1]
    v[dest] = s16(round(x * math.cos(a) - y * math.sin(a)))
    v[dest + 1] = s16(round(x * math.sin(a) + y * math.cos(a)))


def _rand(vm: AsebaVM) -> None:
    (dest,), (size,) = _pop(vm, 1, 1)
    for i in range(size):
        vm.variables[dest + i] = random.randint(-32768, 32767)


STANDARD_NATIVES: dict[str, Native] = {
    "math.copy": _copy,
    "math.fill": _fill,
    "math.addscalar": _addscalar,
    "math.add": _elementwise(lambda a, b: a + b),
    "math.sub": _elementwise(lambda a, b: a - b),
    "math.mul": _elementwise(lambda a, b: a * b),
    "math.div": _elementwise(_div),
    "math.min": _elementwise(min),
    "math.max": _elementwise(max),
    "math.clamp": _clamp,
    "math.dot": _dot,
    "math.stat": _stat,
    "math.argbounds": _argbounds,
    "math.sort": _sort,
    "math.muldiv": _muldiv,
    "math.atan2": _atan2,
    "math.sin": _unary(lambda a: min(32767, round(math.sin(_angle(a)) * 32767))),
    "math.cos": _unary(lambda a: min(32767, round(math.cos(_angle(a)) * 32767))),
    "math.rot2": _rot2,
    "math.sqrt": _unary(lambda a: math.isqrt(a) if a >= 0 else 0),
    "math.rand": _rand,
}
#: Parameter sizes of the standard natives (>0 fixed, <0 template id), for node descriptions.
STANDARD_PARAMETERS: dict[str, tuple[int, ...]] = {
    "math.copy": (-1, -1),
    "math.fill": (-1, 1),
    "math.addscalar": (-1, -1, 1),
    "math.add": (-1, -1, -1),
    "math.sub": (-1, -1, -1),
    "math.mul": (-1, -1, -1),
    "math.div": (-1, -1, -1),
    "math.min": (-1, -1, -1),
    "math.max": (-1, -1, -1),
    "math.clamp": (-1, -1, -1, -1),
    "math.dot": (1, -1, -1, 1),
    "math.stat": (-1, 1, 1, 1),
    "math.argbounds": (-1, 1, 1),
    "math.sort": (-1,),
    "math.muldiv": (-1, -1, -1, -1),
    "math.atan2": (-1, -1, -1),
    "math.sin": (-1, -1),
    "math.cos": (-1, -1),
    "math.rot2": (2, 2, 1),
    "math.sqrt": (-1, -1),
    "math.rand": (-1,),
}
