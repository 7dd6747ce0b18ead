"""Random Aseba programs for the differential report: whatever both compilers accept must behave alike.

`bench/aseba_compiler.py --random COUNT [--seed S]` writes COUNT programs with this module and runs
them through the same comparison as the corpus (both compilers, both bytecodes side by side on
asebaplayground). The same seed gives the same programs.

Each program declares four scalars, two loop counters and a 4-word array, up to three subroutines,
and handlers for `in_a` and `in_b` (two words each) that end by emitting the scalars and the array
(`out_a`, `out_b`). The statements are drawn from assignments (plain, compound, `++`/`--`, whole
vectors), `if`/`elseif`/`else`, `when`, `for` with and without `step`, `emit` and `callsub`; the
expressions from every arithmetic, shift and bitwise operator, unary minus, `abs` and `~`,
comparisons joined by `and`, `or` and `not`, constants near the 12-bit and 16-bit limits, array
reads by constant and by run-time index, and `event.args`. So that every run is well defined on the
real VM and ends, divisors are never zero (a non-zero constant, or `(x | 1)`), shift counts stay in
0..15, run-time indices are masked with `& 3`, and subroutines hold no loops (a subroutine that
changed the counter of the loop calling it could loop forever).
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from pathlib import Path

SCALARS = ("a", "b", "c", "d")
LOOP_COUNTERS = ("i", "j")
#: Constants that sit on the edges the compiler cares about: small immediates (12 bits), powers of
#: two (shifts), 16-bit limits (folding wraps there).
_NON_NEGATIVE = (0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 31, 100, 255, 256, 1000, 2047, 2048, 4095, 10000, 32767)
CONSTANTS = (*_NON_NEGATIVE, -1, -2, -3, -7, -8, -16, -100, -2047, -2048, -2049, -32767)
BINARY = ("+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "+", "-", "*")
COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
COMPOUND = ("+=", "-=", "*=", "|=", "&=", "^=")


class ProgramWriter:
    """Draws one program from `rng`; `constant_share` is the chance that a leaf is a constant."""

    def __init__(self, rng: random.Random, constant_share: float = 0.4, depth: int = 4) -> None:
        self._rng = rng
        self._constant_share = constant_share
        self._depth = depth
        self._counters: list[str] = []  # the loop counters in scope
        self._subroutines: list[str] = []  # those defined so far: callable, never recursively
        self._in_subroutine = False

    def program(self) -> str:
        """The program text (Aseba source)."""
        rng = self._rng
        lines = [f"var {name} = {rng.randint(-50, 50)}" for name in SCALARS]
        lines += [f"var {name}" for name in LOOP_COUNTERS]
        lines.append(f"var v[4] = [{', '.join(str(rng.randint(-9, 9)) for _ in range(4))}]")
        for number in range(rng.randint(0, 3)):
            lines.append(f"sub s{number}")
            self._in_subroutine = True
            lines += self._block(2, "  ")
            self._in_subroutine = False
            self._subroutines.append(f"s{number}")
        for event in ("in_a", "in_b"):
            lines.append(f"onevent {event}")
            lines += self._block(3, "  ")
            lines += ["  emit out_a [a + b, c - d]", "  emit out_b [v[0], v[1], v[2], v[3]]"]
        return "\n".join(lines) + "\n"

    # -- expressions -----------------------------------------------------------------------------

    def _constant(self) -> str:
        rng = self._rng
        value = rng.choice(CONSTANTS) if rng.random() < 0.8 else rng.randint(-32767, 32767)
        return f"({value})" if value < 0 else str(value)  # `a - -7` would read as `a --7`

    def _scalar(self) -> str:
        return self._rng.choice((*SCALARS, *self._counters))

    def _index(self) -> str:
        """A run-time array index, always in 0..3."""
        if self._rng.random() < 0.5:
            return f"{self._scalar()} & 3"
        return f"abs({self._expression(1)}) % 4 & 3"

    def _leaf(self) -> str:
        rng = self._rng
        draw = rng.random()
        if draw < self._constant_share:
            return self._constant()
        draw = (draw - self._constant_share) / (1.0 - self._constant_share)
        if draw < 0.5:
            return self._scalar()
        if draw < 0.7:
            return f"v[{rng.randint(0, 3)}]"
        if draw < 0.85:
            return f"v[{self._index()}]"
        return f"event.args[{rng.randint(0, 1)}]"

    def _operand(self, depth: int) -> str:
        """An expression as an operand: in parentheses unless it is a leaf (or `-x`: `--` is a token)."""
        expression = self._expression(depth)
        indexed = expression.startswith("v[") and expression.endswith("]") and expression.count("[") == 1
        compound = " " in expression and not indexed
        return f"({expression})" if compound or expression.startswith("-") else expression

    def _expression(self, depth: int) -> str:
        rng = self._rng
        if depth <= 0 or rng.random() < 0.25:
            return self._leaf()
        draw = rng.random()
        if draw < 0.1:
            return f"-{self._operand(depth - 1)}"
        if draw < 0.16:
            return f"abs {self._operand(depth - 1)}"
        if draw < 0.2:
            return f"~{self._operand(depth - 1)}"
        if draw < 0.3:
            return self._chain()
        operator = rng.choice(BINARY)
        left = self._operand(depth - 1)
        if operator in ("/", "%"):
            divisor = rng.choice([c for c in CONSTANTS if c]) if rng.random() < 0.5 else None
            right = f"({divisor})" if divisor is not None else f"({self._expression(depth - 1)} | 1)"
        elif operator in ("<<", ">>"):
            right = str(rng.randint(0, 15)) if rng.random() < 0.6 else f"({self._expression(depth - 1)} & 15)"
        else:
            right = self._operand(depth - 1)
        return f"{left} {operator} {right}"

    def _chain(self) -> str:
        """Leaves and operators of different precedence without parentheses: `a + b * 3 & c - 7`."""
        rng = self._rng
        parts = [self._leaf()]
        for _ in range(rng.randint(2, 4)):
            operator = rng.choice(("+", "-", "*", "&", "|", "^", "<<", ">>"))
            parts += [operator, str(rng.randint(0, 15)) if operator in ("<<", ">>") else self._leaf()]
        return " ".join(parts)

    def _condition(self, depth: int) -> str:
        rng = self._rng
        draw = rng.random()
        if depth > 0 and draw < 0.15:
            return f"{self._condition(depth - 1)} {rng.choice(('and', 'or'))} {self._condition(depth - 1)}"
        if depth > 0 and draw < 0.22:
            return f"not ({self._condition(depth - 1)})"
        return f"{self._expression(2)} {rng.choice(COMPARISONS)} {self._expression(2)}"

    # -- statements ------------------------------------------------------------------------------

    def _target(self) -> str:
        draw = self._rng.random()
        if draw < 0.6:
            return self._rng.choice(SCALARS)
        if draw < 0.85:
            return f"v[{self._rng.randint(0, 3)}]"
        return f"v[{self._index()}]"

    def _block(self, depth: int, indent: str) -> list[str]:
        return [line for _ in range(self._rng.randint(1, 4)) for line in self._statement(depth, indent)]

    def _statement(self, depth: int, indent: str) -> list[str]:
        rng = self._rng
        inner = indent + "  "
        draw = rng.random()
        if depth > 0 and draw < 0.12:
            lines = [f"{indent}if {self._condition(2)} then", *self._block(depth - 1, inner)]
            if rng.random() < 0.3:
                lines += [f"{indent}elseif {self._condition(2)} then", *self._block(depth - 1, inner)]
            if rng.random() < 0.4:
                lines += [f"{indent}else", *self._block(depth - 1, inner)]
            return [*lines, f"{indent}end"]
        if depth > 0 and draw < 0.17:
            return [f"{indent}when {self._condition(1)} do", *self._block(depth - 1, inner), f"{indent}end"]
        if depth > 0 and draw < 0.23 and len(self._counters) < len(LOOP_COUNTERS) and not self._in_subroutine:
            return self._for(depth, indent)
        if draw < 0.26 and self._subroutines:
            return [f"{indent}callsub {rng.choice(self._subroutines)}"]
        if draw < 0.3:
            return [f"{indent}emit out_a [{self._expression(2)}, {self._expression(2)}]"]
        if draw < 0.37:
            return [f"{indent}{self._target()}{rng.choice(('++', '--'))}"]
        if draw < 0.5:
            return [f"{indent}{self._target()} {rng.choice(COMPOUND)} {self._expression(2)}"]
        if draw < 0.58:
            operator = rng.choice(("=", "=", "+=", "-=", "*="))
            return [f"{indent}v {operator} [{', '.join(self._expression(1) for _ in range(4))}]"]
        return [f"{indent}{self._target()} = {self._expression(self._depth)}"]

    def _for(self, depth: int, indent: str) -> list[str]:
        rng = self._rng
        counter = LOOP_COUNTERS[len(self._counters)]
        low = rng.randint(-3, 2)
        high = low + rng.randint(0, 4)
        step = ""
        if rng.random() < 0.3:
            step = f" step {rng.choice((1, 2, 3))}"
            if rng.random() < 0.5:
                low, high, step = high, low, f" step -{rng.choice((1, 2))}"
        self._counters.append(counter)
        body = self._block(depth - 1, indent + "  ")
        self._counters.pop()
        return [f"{indent}for {counter} in {low}:{high}{step} do", *body, f"{indent}end"]


def aesl_document(source: str) -> str:
    """`source` as an .aesl file for the playground Thymio, with the four events the programs use."""
    escaped = source.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    events = "".join(
        f'<event size="{size}" name="{name}"/>\n'
        for name, size in (("in_a", 2), ("in_b", 2), ("out_a", 2), ("out_b", 4))
    )
    return (
        f'<!DOCTYPE aesl-source>\n<network>\n{events}<keywords flag="true"/>\n'
        f'<node nodeId="1" name="thymio-II">{escaped}</node>\n</network>\n'
    )


def programs(seed: int, count: int) -> list[tuple[str, str]]:
    """`count` programs of `seed`: (file name, .aesl text). Program n is the same whatever `count` is."""
    documents = []
    for number in range(count):
        rng = random.Random(f"{seed}/{number}")
        constant_share = rng.choice((0.3, 0.4, 0.6))
        documents.append(
            (f"random_{seed}_{number:04d}.aesl", aesl_document(ProgramWriter(rng, constant_share).program()))
        )
    return documents


def write_programs(folder: Path, seed: int, count: int) -> list[Path]:
    """Write `programs(seed, count)` into `folder` (created); their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in programs(seed, count):
        path = folder / name
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    """Write random programs into a folder (to read them, or to run `aseba_compiler.py --folder` on)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="where to write the .aesl files")
    parser.add_argument("--count", type=int, default=100, help="how many programs (default 100)")
    parser.add_argument("--seed", type=int, default=1, help="the programs' seed (default 1)")
    args = parser.parse_args(argv)
    if args.count < 1:
        parser.error("--count must be positive")
    paths = write_programs(args.folder, args.seed, args.count)
    print(f"{len(paths)} programs of seed {args.seed} in {args.folder}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
