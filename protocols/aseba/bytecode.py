"""Aseba bytecode: opcodes and an assembler with labels and an event vector table.

A program is 16-bit words: the event vector table (word 0 = its length 2n+1, then n pairs of event
id and handler address), then the code. Opcode in the top 4 bits, operand in the low 12
(consts.h; vm.c `AsebaVMStep`). Addresses of variables and indices of natives come from the node's
live description (`protocols.aseba.description`), never from tables: they differ between the real
firmware and the simulator.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from protocols.errors import ProtocolError


class Op(IntEnum):
    """Opcodes (top 4 bits of an instruction word)."""

    STOP = 0x0
    SMALL_IMMEDIATE = 0x1
    LARGE_IMMEDIATE = 0x2
    LOAD = 0x3
    STORE = 0x4
    LOAD_INDIRECT = 0x5
    STORE_INDIRECT = 0x6
    UNARY = 0x7
    BINARY = 0x8
    JUMP = 0x9
    CONDITIONAL_BRANCH = 0xA
    EMIT = 0xB
    NATIVE_CALL = 0xC
    SUB_CALL = 0xD
    SUB_RET = 0xE


class Unary(IntEnum):
    """Operand of UNARY."""

    NEG = 0
    ABS = 1
    BIT_NOT = 2


class Binary(IntEnum):
    """Operand of BINARY and comparison of CONDITIONAL_BRANCH: `a op b` with b on top of the stack."""

    SHIFT_LEFT = 0
    SHIFT_RIGHT = 1
    ADD = 2
    SUB = 3
    MULT = 4
    DIV = 5
    MOD = 6
    BIT_OR = 7
    BIT_XOR = 8
    BIT_AND = 9
    EQUAL = 10
    NOT_EQUAL = 11
    BIGGER_THAN = 12
    BIGGER_EQUAL_THAN = 13
    SMALLER_THAN = 14
    SMALLER_EQUAL_THAN = 15
    OR = 16
    AND = 17


#: CONDITIONAL_BRANCH flags: edge-triggered ("when") and the "was true" bit the VM writes back.
BRANCH_WHEN = 1 << 8
BRANCH_WAS_TRUE = 1 << 9
#: Words of the instructions longer than one word.
INSTRUCTION_LENGTH = {
    Op.LARGE_IMMEDIATE: 2,
    Op.LOAD_INDIRECT: 2,
    Op.STORE_INDIRECT: 2,
    Op.CONDITIONAL_BRANCH: 2,
    Op.EMIT: 3,
}
#: Largest operand of a 12-bit field, and the range of SMALL_IMMEDIATE.
OPERAND_MAX = 0xFFF
SMALL_MIN, SMALL_MAX = -2048, 2047


def word(op: Op, operand: int = 0) -> int:
    """One instruction word; raise `ProtocolError` when `operand` does not fit 12 bits."""
    if not 0 <= operand <= OPERAND_MAX:
        raise ProtocolError(f"{op.name} operand {operand} does not fit 12 bits")
    return (op << 12) | operand


@dataclass
class Assembler:
    """Builds a program: call `handler(event_id)` to start an event's code, then emit instructions.

    Jumps and branches name labels (`label(name)` marks the next instruction); `assemble()`
    resolves them and prepends the event vector table. All operands are checked.
    """

    code: list[int] = field(default_factory=list)
    handlers: dict[int, int] = field(default_factory=dict)
    labels: dict[str, int] = field(default_factory=dict)
    _fixups: list[tuple[int, str, str]] = field(default_factory=list)
    _unique: int = 0

    def checkpoint(self) -> tuple[int, int, int]:
        """A mark to `rollback` to: the code, labels and fixups written so far."""
        return len(self.code), len(self.labels), len(self._fixups)

    def rollback(self, mark: tuple[int, int, int]) -> None:
        """Forget everything written since `mark` (code, labels, fixups); handlers are not undone."""
        code, labels, fixups = mark
        del self.code[code:]
        for name in list(self.labels)[labels:]:
            del self.labels[name]
        del self._fixups[fixups:]

    def new_label(self, hint: str = "l") -> str:
        """A label name not used yet."""
        self._unique += 1
        return f"{hint}.{self._unique}"

    def handler(self, event_id: int) -> None:
        """Start the handler of `event_id` (user event id, or a local event id 0xFFxx, 0xFFFF init)."""
        if event_id in self.handlers:
            raise ProtocolError(f"event 0x{event_id:04X} already has a handler")
        self.handlers[event_id] = len(self.code)

    def label(self, name: str) -> None:
        """Mark the next instruction as `name`."""
        if name in self.labels:
            raise ProtocolError(f"label {name!r} defined twice")
        self.labels[name] = len(self.code)

    def stop(self) -> None:
        """End the event handler."""
        self.code.append(word(Op.STOP))

    def push(self, value: int) -> None:
        """Push a constant (one word when it fits -2048..2047, else two)."""
        if SMALL_MIN <= value <= SMALL_MAX:
            self.code.append(word(Op.SMALL_IMMEDIATE, value & OPERAND_MAX))
        elif -0x8000 <= value <= 0xFFFF:
            self.code += [word(Op.LARGE_IMMEDIATE), value & 0xFFFF]
        else:
            raise ProtocolError(f"constant {value} does not fit 16 bits")

    def load(self, address: int) -> None:
        """Push the variable at `address`."""
        self.code.append(word(Op.LOAD, address))

    def store(self, address: int) -> None:
        """Pop into the variable at `address`."""
        self.code.append(word(Op.STORE, address))

    def load_indirect(self, address: int, size: int) -> None:
        """Replace the index on top of the stack by array[index] (array of `size` at `address`)."""
        self.code += [word(Op.LOAD_INDIRECT, address), size]

    def store_indirect(self, address: int, size: int) -> None:
        """Pop the index, then the value, into array[index] (array of `size` at `address`)."""
        self.code += [word(Op.STORE_INDIRECT, address), size]

    def unary(self, op: Unary) -> None:
        """Apply `op` to the top of the stack."""
        self.code.append(word(Op.UNARY, op))

    def binary(self, op: Binary) -> None:
        """Pop b, then a; push `a op b`."""
        self.code.append(word(Op.BINARY, op))

    def jump(self, label: str) -> None:
        """Jump to `label`."""
        self._fixups.append((len(self.code), label, "jump"))
        self.code.append(word(Op.JUMP))

    def branch_unless(self, comparison: Binary, label: str, when: bool = False) -> None:
        """Pop b, a; go on if `a comparison b` holds, else jump to `label`.

        With `when`, go on only when the condition has just become true (edge-triggered).
        """
        flags = BRANCH_WHEN if when else 0
        self.code.append(word(Op.CONDITIONAL_BRANCH, comparison | flags))
        self._fixups.append((len(self.code), label, "branch"))
        self.code.append(0)

    def emit(self, event_id: int, address: int, length: int) -> None:
        """Send user event `event_id` carrying `length` words read at `address`."""
        self.code += [word(Op.EMIT, event_id), address, length]

    def native(self, index: int) -> None:
        """Call native function `index` (its arguments' addresses and template sizes already pushed)."""
        self.code.append(word(Op.NATIVE_CALL, index))

    def call_native(self, index: int, addresses: Sequence[int], template_sizes: Sequence[int] = ()) -> None:
        """Push `template_sizes` and `addresses` (both in reverse) and call native `index`."""
        for size in reversed(template_sizes):
            self.push(size)
        for address in reversed(addresses):
            self.push(address)
        self.native(index)

    def sub_call(self, label: str) -> None:
        """Call the subroutine at `label`."""
        self._fixups.append((len(self.code), label, "call"))
        self.code.append(word(Op.SUB_CALL))

    def sub_ret(self) -> None:
        """Return from a subroutine."""
        self.code.append(word(Op.SUB_RET))

    def assemble(self) -> tuple[int, ...]:
        """The program's words: the event vector table (ids in ascending order), then the code."""
        table_size = 2 * len(self.handlers) + 1
        code = list(self.code)
        for position, label, kind in self._fixups:
            if label not in self.labels:
                raise ProtocolError(f"label {label!r} is not defined")
            target = self.labels[label]
            if kind == "call":
                code[position] |= _operand(target + table_size, "subroutine address", 0, OPERAND_MAX)
            elif kind == "jump":
                code[position] |= _operand(target - position, "jump", SMALL_MIN, SMALL_MAX) & OPERAND_MAX
            else:
                # The displacement counts from the branch instruction, one word before its operand.
                code[position] = (target - (position - 1)) & 0xFFFF
        table = [table_size]
        for event_id in sorted(self.handlers):
            table += [event_id, self.handlers[event_id] + table_size]
        return tuple(table + code)


def _operand(value: int, what: str, low: int, high: int) -> int:
    if not low <= value <= high:
        raise ProtocolError(f"{what} {value} is outside {low}..{high}")
    return value
