"""A readable listing of Aseba bytecode: one instruction per line with its address."""

from __future__ import annotations

from protocols.aseba.bytecode import BRANCH_WHEN, Binary, Op, Unary
from protocols.aseba.vm import s16

_UNARY = frozenset(int(u) for u in Unary)
_BINARY = frozenset(int(b) for b in Binary)


def _signed12(value: int) -> int:
    return value - 0x1000 if value & 0x800 else value


def listing(bytecode: tuple[int, ...]) -> list[str]:
    """Lines "address: words  mnemonic operands" for the vector table and every instruction."""
    if not bytecode:
        return []
    size = bytecode[0]
    lines = [f"{0:5d}: {size:04x}            vectors {size // 2}"]
    for position in range(1, min(size, len(bytecode) - 1), 2):
        lines.append(f"{position:5d}: {bytecode[position]:04x} {bytecode[position + 1]:04x}       "
                     f"event 0x{bytecode[position]:04x} -> {bytecode[position + 1]}")  # fmt: skip
    pc = size
    while pc < len(bytecode):
        word = bytecode[pc]
        op, operand = word >> 12, word & 0xFFF
        length, text = 1, ""
        if op == Op.STOP:
            text = "stop"
        elif op == Op.SMALL_IMMEDIATE:
            text = f"push.s {_signed12(operand)}"
        elif op == Op.LARGE_IMMEDIATE:
            length, text = 2, f"push {s16(bytecode[pc + 1]) if pc + 1 < len(bytecode) else '?'}"
        elif op == Op.LOAD:
            text = f"load {operand}"
        elif op == Op.STORE:
            text = f"store {operand}"
        elif op in (Op.LOAD_INDIRECT, Op.STORE_INDIRECT):
            name = "load.ind" if op == Op.LOAD_INDIRECT else "store.ind"
            length, text = 2, f"{name} {operand} size {bytecode[pc + 1] if pc + 1 < len(bytecode) else '?'}"
        elif op == Op.UNARY:
            text = Unary(operand & 0xFF).name.lower() if operand & 0xFF in _UNARY else f"unary {operand}"
        elif op == Op.BINARY:
            text = Binary(operand & 0xFF).name.lower() if operand & 0xFF in _BINARY else f"binary {operand}"
        elif op == Op.JUMP:
            text = f"jump {pc + _signed12(operand)}"
        elif op == Op.CONDITIONAL_BRANCH:
            kind = "when.not" if operand & BRANCH_WHEN else "if.not"
            comparison = Binary(operand & 0xFF).name.lower() if operand & 0xFF in _BINARY else str(operand & 0xFF)
            target = pc + s16(bytecode[pc + 1]) if pc + 1 < len(bytecode) else "?"
            length, text = 2, f"jump.{kind} {comparison} {target}"
        elif op == Op.EMIT:
            fields = [str(w) for w in bytecode[pc + 1 : pc + 3]] + ["?", "?"]
            length, text = 3, f"emit {operand} address {fields[0]} size {fields[1]}"
        elif op == Op.NATIVE_CALL:
            text = f"callnat {operand}"
        elif op == Op.SUB_CALL:
            text = f"callsub {operand}"
        elif op == Op.SUB_RET:
            text = "ret"
        else:
            text = f"dc 0x{word:04x}"
        raw = " ".join(f"{w:04x}" for w in bytecode[pc : pc + length])
        lines.append(f"{pc:5d}: {raw:<15s} {text}")
        pc += length
    return lines
