"""A Python Aseba VM: every opcode, event dispatch, the error reports of the real VM.

It follows the C VM's semantics (aseba vm/vm.c): 16-bit two's complement arithmetic, C division
and remainder (truncating toward zero), the "when" edge bit written back into the bytecode, user
events writing the sender into variable 1 and their words into `event.args`, a new event killing
a running one. Errors pause the VM (step-by-step flag) and produce the real messages:
ArrayAccessOutOfBounds, DivisionByZero, EventExecutionKilled; a stack overflow or underflow is
reported as NodeSpecificError "VM ASSERT !" as a Thymio does (simulators abort instead).

Natives are looked up by the names in the node's description (`natives.py`); the VM collects what
it sends (emitted events, error reports) in `outbox` for the node to transmit.
"""

from __future__ import annotations

from collections.abc import Callable

from protocols.aseba.bytecode import BRANCH_WAS_TRUE, BRANCH_WHEN, Binary, Op, Unary
from protocols.aseba.description import NodeDescription
from protocols.aseba.messages import Message, MessageType, NodeSpecificError, UserMessage, WordMessage

#: Execution flags of ExecutionStateChanged.
FLAG_EVENT_ACTIVE = 1
FLAG_STEP_BY_STEP = 2
#: Instructions run per `run` call before yielding (the rest continues on the next call).
DEFAULT_STEP_BUDGET = 65535
INIT_EVENT = 0xFFFF


def s16(value: int) -> int:
    """Wrap an integer to signed 16 bits."""
    value &= 0xFFFF
    return value - 0x10000 if value & 0x8000 else value


def _c_div(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


#: Length in words of the instructions longer than one word (to find "when" bits on reset).
_INSTRUCTION_WORDS: dict[int, int] = {
    Op.LARGE_IMMEDIATE: 2,
    Op.LOAD_INDIRECT: 2,
    Op.STORE_INDIRECT: 2,
    Op.CONDITIONAL_BRANCH: 2,
    Op.EMIT: 3,
}
_UNARY = frozenset(int(u) for u in Unary)
_BINARY = frozenset(int(b) for b in Binary)


class VMError(Exception):
    """Execution stopped on an error; the VM has queued its report in `outbox`."""


Native = Callable[["AsebaVM"], None]


class AsebaVM:
    """One node's VM, sized by its `description` (words); `natives` maps native names to code."""

    def __init__(self, node_id: int, description: NodeDescription, natives: dict[str, Native]) -> None:
        self.node_id = node_id
        self.description = description
        self.bytecode = [0] * description.bytecode_size
        self.variables = [0] * description.variables_size
        self.stack: list[int] = []
        self.stack_size = description.stack_size
        self.pc = 0
        self.flags = FLAG_STEP_BY_STEP
        self.outbox: list[Message] = []
        self._natives = [natives.get(n.name) for n in description.natives]
        self._native_names = [n.name for n in description.natives]
        self._args = description.variables.get("event.args")
        self.variables[0] = node_id  # _id

    # -- stack ---------------------------------------------------------------------------------------

    def push(self, value: int) -> None:
        """Push a word; overflow is a VM assert."""
        if len(self.stack) >= self.stack_size:
            self._assert("stack overflow")
        self.stack.append(s16(value))

    def pop(self) -> int:
        """Pop a word; underflow is a VM assert."""
        if not self.stack:
            self._assert("stack underflow")
        return self.stack.pop()

    def _assert(self, why: str) -> None:
        self.outbox.append(NodeSpecificError(self.node_id, self.pc, "VM ASSERT !"))
        self._halt()
        raise VMError(why)

    def _halt(self) -> None:
        self.flags = (self.flags | FLAG_STEP_BY_STEP) & ~FLAG_EVENT_ACTIVE
        self.stack.clear()

    def _report(self, type_: MessageType, *words: int) -> None:
        self.outbox.append(WordMessage(self.node_id, type_, tuple(w & 0xFFFF for w in words)))
        self._halt()
        raise VMError(type_.name)

    # -- program control -----------------------------------------------------------------------------

    def set_bytecode(self, start: int, words: tuple[int, ...]) -> None:
        """Write `words` at `start`, then reset (paused until `run`) like SetBytecode."""
        if start + len(words) > len(self.bytecode):
            raise ValueError(f"bytecode of {start + len(words)} words exceeds the node's {len(self.bytecode)}")
        self.bytecode[start : start + len(words)] = [w & 0xFFFF for w in words]
        self.reset()

    def reset(self) -> None:
        """Clear the "when" bits, pause, and set the init event up (it runs after `start`)."""
        size = self.bytecode[0]
        position = size
        while position < len(self.bytecode):
            word = self.bytecode[position]
            op = word >> 12
            if op == Op.CONDITIONAL_BRANCH:
                self.bytecode[position] = word & ~BRANCH_WAS_TRUE
            position += _INSTRUCTION_WORDS.get(op, 1)
        self.flags = FLAG_STEP_BY_STEP
        self.stack.clear()
        self.setup_event(INIT_EVENT)

    def start(self) -> None:
        """Run: leave step-by-step mode."""
        self.flags &= ~FLAG_STEP_BY_STEP

    def stop(self) -> None:
        """Stop the running event and pause."""
        self._halt()

    @property
    def running(self) -> bool:
        """True while an event handler is executing and the VM is not paused."""
        return bool(self.flags & FLAG_EVENT_ACTIVE) and not self.flags & FLAG_STEP_BY_STEP

    def handler_address(self, event_id: int) -> int:
        """Address of `event_id`'s handler in the vector table, 0 if none."""
        size = self.bytecode[0]
        for position in range(1, min(size, len(self.bytecode) - 1), 2):
            if self.bytecode[position] == event_id:
                return self.bytecode[position + 1]
        return 0

    def setup_event(self, event_id: int) -> bool:
        """Start `event_id`'s handler; a running handler is killed (reported). False if none."""
        address = self.handler_address(event_id)
        if not address:
            return False
        if self.flags & FLAG_EVENT_ACTIVE:
            self.outbox.append(WordMessage(self.node_id, MessageType.EVENT_EXECUTION_KILLED, (self.pc,)))
        self.pc = address
        self.stack.clear()
        self.flags |= FLAG_EVENT_ACTIVE
        return True

    def user_event(self, source: int, event_id: int, data: tuple[int, ...]) -> bool:
        """Deliver a user event: sender into `event.source`, words into `event.args`; run its handler."""
        if not self.handler_address(event_id):
            return False  # the VM drops events its program does not handle
        self.variables[1] = source
        if self._args is not None:
            words = data[: self._args.size]
            self.variables[self._args.address : self._args.address + len(words)] = [s16(w) for w in words]
        return self.setup_event(event_id)

    def run(self, budget: int = DEFAULT_STEP_BUDGET) -> None:
        """Execute up to `budget` instructions of the active handler."""
        try:
            for _ in range(budget):
                if not self.running:
                    return
                self.step()
        except VMError:
            return

    # -- instructions ------------------------------------------------------------------------------

    def _variable(self, address: int) -> int:
        if not 0 <= address < len(self.variables):
            self._assert(f"variable address {address} out of range")
        return address

    def step(self) -> None:
        """Execute one instruction; raise `VMError` when it fails (reported in `outbox`)."""
        if not 0 <= self.pc < len(self.bytecode):
            self._assert(f"pc {self.pc} out of range")
        word = self.bytecode[self.pc]
        op, operand = word >> 12, word & 0xFFF
        if op == Op.STOP:
            self.flags &= ~FLAG_EVENT_ACTIVE
        elif op == Op.SMALL_IMMEDIATE:
            self.push(operand - 0x1000 if operand & 0x800 else operand)
            self.pc += 1
        elif op == Op.LARGE_IMMEDIATE:
            self.push(self.bytecode[self.pc + 1])
            self.pc += 2
        elif op == Op.LOAD:
            self.push(self.variables[self._variable(operand)])
            self.pc += 1
        elif op == Op.STORE:
            self.variables[self._variable(operand)] = self.pop()
            self.pc += 1
        elif op in (Op.LOAD_INDIRECT, Op.STORE_INDIRECT):
            size = self.bytecode[self.pc + 1]
            index = self.pop()
            if index & 0xFFFF >= size:
                self._report(MessageType.ARRAY_ACCESS_OUT_OF_BOUNDS, self.pc, size, index)
            address = self._variable(operand + index)
            if op == Op.LOAD_INDIRECT:
                self.push(self.variables[address])
            else:
                self.variables[address] = self.pop()
            self.pc += 2
        elif op == Op.UNARY:
            value = self.pop()
            if operand & 0xFF not in _UNARY:
                self._assert(f"unknown unary operator {operand & 0xFF}")
            self.push({Unary.NEG: -value, Unary.ABS: abs(value), Unary.BIT_NOT: ~value}[Unary(operand & 0xFF)])
            self.pc += 1
        elif op == Op.BINARY:
            b, a = self.pop(), self.pop()
            self.push(self.binary(a, b, operand & 0xFF))
            self.pc += 1
        elif op == Op.JUMP:
            self.pc += operand - 0x1000 if operand & 0x800 else operand
        elif op == Op.CONDITIONAL_BRANCH:
            b, a = self.pop(), self.pop()
            result = self.binary(a, b, operand & 0xFF)
            taken = result and not (word & BRANCH_WHEN and word & BRANCH_WAS_TRUE)
            self.bytecode[self.pc] = word | BRANCH_WAS_TRUE if result else word & ~BRANCH_WAS_TRUE
            self.pc += 2 if taken else s16(self.bytecode[self.pc + 1])
        elif op == Op.EMIT:
            start, length = self.bytecode[self.pc + 1], self.bytecode[self.pc + 2]
            if start + length > len(self.variables):
                self._assert("emit outside the variables")
            self.outbox.append(UserMessage(self.node_id, operand, tuple(self.variables[start : start + length])))
            self.pc += 3
        elif op == Op.NATIVE_CALL:
            native = self._natives[operand] if operand < len(self._natives) else None
            if native is None:
                self._assert(f"native {operand} is not implemented")
            else:
                native(self)
            self.pc += 1
        elif op == Op.SUB_CALL:
            self.push(self.pc + 1)
            self.pc = operand
        elif op == Op.SUB_RET:
            self.pc = self.pop()
        else:
            self._assert(f"unknown opcode {op}")

    def binary(self, a: int, b: int, op: int) -> int:
        """`a op b` on signed 16-bit words, as the C VM computes it."""
        if op not in _BINARY:
            self._assert(f"unknown binary operator {op}")
        if op in (Binary.DIV, Binary.MOD) and b == 0:
            self._report(MessageType.DIVISION_BY_ZERO, self.pc)
        match Binary(op):
            case Binary.SHIFT_LEFT:
                return s16(a << (b & 0x1F))
            case Binary.SHIFT_RIGHT:
                return a >> (b & 0x1F)
            case Binary.ADD:
                return s16(a + b)
            case Binary.SUB:
                return s16(a - b)
            case Binary.MULT:
                return s16(a * b)
            case Binary.DIV:
                return s16(_c_div(a, b))
            case Binary.MOD:
                return s16(a - _c_div(a, b) * b)
            case Binary.BIT_OR:
                return a | b
            case Binary.BIT_XOR:
                return a ^ b
            case Binary.BIT_AND:
                return a & b
            case Binary.EQUAL:
                return int(a == b)
            case Binary.NOT_EQUAL:
                return int(a != b)
            case Binary.BIGGER_THAN:
                return int(a > b)
            case Binary.BIGGER_EQUAL_THAN:
                return int(a >= b)
            case Binary.SMALLER_THAN:
                return int(a < b)
            case Binary.SMALLER_EQUAL_THAN:
                return int(a <= b)
            case Binary.OR:
                return int(bool(a) or bool(b))
            case Binary.AND:
                return int(bool(a) and bool(b))
        raise AssertionError(op)  # every Binary member is handled above
