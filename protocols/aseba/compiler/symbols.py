"""What a script can name: variables (node's and script's), constants, events, natives, subroutines.

Constant folding lives here too, as Debian's compiler does it: in 32-bit C `int` arithmetic
(division truncating toward zero); the VM sees the low 16 bits of the result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from protocols.aseba.compiler import syntax as s
from protocols.aseba.compiler.errors import CompileError
from protocols.aseba.description import LOCAL_EVENT_BASE, NodeDescription, Variable
from protocols.aseba.messages import NativeFunctionDescription


@dataclass(frozen=True, slots=True)
class EventSpec:
    """A global (script) event: its `name` and the `size` in words it carries."""

    name: str
    size: int


@dataclass
class Symbols:
    """The names a script sees while it is compiled against one node description."""

    description: NodeDescription
    events: tuple[EventSpec, ...]
    constants: dict[str, int]
    variables: dict[str, Variable] = field(default_factory=dict)
    script_variables: dict[str, Variable] = field(default_factory=dict)
    next_address: int = 0
    #: Temporaries of the current statement are allocated downwards from the end of the memory.
    temporaries_top: int = 0

    @classmethod
    def create(cls, description: NodeDescription, events: Sequence[EventSpec], constants: Mapping[str, int]) -> Symbols:
        """Symbols with the node's variables, the script's events and constants."""
        return cls(
            description,
            tuple(events),
            dict(constants),
            dict(description.variables),
            {},
            description.user_data_start,
        )

    def error(self, message: str, node: s.Node) -> CompileError:
        """A `CompileError` at `node`."""
        return CompileError(message, node.line, node.column)

    def declare(self, name: str, size: int, node: s.Node) -> Variable:
        """Give a new script variable of `size` words the next free address."""
        if name in self.variables or name in self.constants:
            raise self.error(f"{name} is already defined", node)
        if size < 1:
            raise self.error(f"array {name} must have a size of at least 1, not {size}", node)
        variable = Variable(name, self.next_address, size)
        self.next_address += size
        if self.next_address > self.description.variables_size:
            raise self.error(
                f"not enough memory for {name}: the node has {self.description.variables_size} words", node
            )
        self.variables[name] = variable
        self.script_variables[name] = variable
        return variable

    def reset_temporaries(self) -> None:
        """Free the temporaries (at the start of each statement)."""
        self.temporaries_top = self.description.variables_size

    def temporary(self, size: int, node: s.Node) -> int:
        """The address of `size` words for an intermediate value, below the previous ones."""
        self.temporaries_top -= size
        if self.temporaries_top < self.next_address:
            raise self.error(
                f"not enough memory for temporary values: the node has {self.description.variables_size} words", node
            )
        return self.temporaries_top

    def variable(self, name: str, node: s.Node) -> Variable:
        """The variable `name`; `CompileError` at `node` when it is none."""
        variable = self.variables.get(name)
        if variable is None:
            if name in self.constants:
                raise self.error(f"{name} is a constant, not a variable", node)
            raise self.error(f"{name} is not a defined variable", node)
        return variable

    def event(self, name: str, node: s.Node) -> tuple[int, int | None]:
        """Id and size (None for a local event) of the event `name`."""
        for index, event in enumerate(self.events):
            if event.name == name:
                return index, event.size
        for index, local in enumerate(self.description.local_events):
            if local.name == name:
                return LOCAL_EVENT_BASE - index, None
        raise self.error(f"{name} is not a defined event", node)

    def native(self, name: str, node: s.Node) -> tuple[int, NativeFunctionDescription]:
        """Index and description of native function `name`."""
        for index, native in enumerate(self.description.natives):
            if native.name == name:
                return index, native
        raise self.error(f"{name} is not a native function of node {self.description.name}", node)

    # -- constants and sizes -------------------------------------------------------------------

    def constant(self, expression: s.Expression) -> int | None:
        """The value of `expression` if it is a constant scalar expression, else None.

        Folded like Debian's compiler: 32-bit C `int` arithmetic, and `x * 0`, `x & 0`, `x | -1`
        are constants whatever `x` is.
        """
        e = expression
        if isinstance(e, s.Number):
            return e.value
        if isinstance(e, s.Name):
            return self.constants.get(e.name) if e.name not in self.variables else None
        if isinstance(e, s.Unary):
            value = self.constant(e.operand)
            return None if value is None else fold_unary(e.op, value, e)
        if isinstance(e, s.Binary):
            left, right = self.constant(e.left), self.constant(e.right)
            if left is not None and right is not None:
                return fold(e.op, left, right, e)
            known = {left, right}
            if e.op in ("*", "&", "and") and 0 in known:
                return 0
            if e.op == "|" and -1 in known:
                return -1
            if e.op == "or" and any(value for value in known if value is not None):
                return 1
        return None

    def require_constant(self, expression: s.Expression, what: str) -> int:
        """The value of constant `expression`; `CompileError` naming `what` otherwise."""
        value = self.constant(expression)
        if value is None:
            raise self.error(f"{what} must be a constant expression", expression)
        return value

    def require_word(self, expression: s.Expression, what: str) -> int:
        """The value of constant `expression`, which must fit a signed 16-bit word."""
        value = self.require_constant(expression, what)
        if not -32768 <= value <= 32767:
            raise self.error(f"{what} is {value}, outside -32768..32767", expression)
        return value

    def size(self, expression: s.Expression) -> int:
        """The number of words `expression` stands for."""
        if isinstance(expression, s.Number):
            return 1
        if isinstance(expression, s.Name):
            if expression.name in self.constants and expression.name not in self.variables:
                return 1
            return self.variable(expression.name, expression).size
        if isinstance(expression, s.Index):
            self.variable(expression.name, expression)
            if self.size(expression.index) != 1:
                raise self.error("an array index must be a single value", expression.index)
            return 1
        if isinstance(expression, s.Slice):
            return self.slice_bounds(expression)[1]
        if isinstance(expression, s.ArrayLiteral):
            return sum(self.size(item) for item in expression.items)
        if isinstance(expression, s.Unary):
            return self.size(expression.operand)
        left, right = self.size(expression.left), self.size(expression.right)
        if left != right:
            raise self.error(f"size mismatch: {left} words {expression.op} {right} words", expression)
        return left

    def slice_bounds(self, expression: s.Slice) -> tuple[int, int]:
        """Address and size of the slice `name[first:last]`, checked against the array."""
        variable = self.variable(expression.name, expression)
        first = self.require_constant(expression.first, "a slice bound")
        last = self.require_constant(expression.last, "a slice bound")
        if not 0 <= first <= last < variable.size:
            raise self.error(
                f"slice [{first}:{last}] is outside array {expression.name} of size {variable.size}", expression
            )
        return variable.address + first, last - first + 1


def int32(value: int) -> int:
    """`value` wrapped to a 32-bit C `int`, as the reference compiler's folding computes."""
    return (value + 0x8000_0000) % 0x1_0000_0000 - 0x8000_0000


def to_word(value: int) -> int:
    """The signed 16-bit word the VM sees for a folded constant."""
    return (value + 0x8000) % 0x10000 - 0x8000


def fold(op: str, a: int, b: int, node: s.Node) -> int:
    """`a op b` on 32-bit C ints, as Debian's compiler folds constants; `CompileError` on division by zero."""
    if op in ("/", "%"):
        if b == 0:
            raise CompileError("division by zero", node.line, node.column)
        quotient = abs(a) // abs(b)
        quotient = quotient if (a >= 0) == (b >= 0) else -quotient
        return int32(quotient if op == "/" else a - quotient * b)
    results = {
        "+": lambda: a + b,
        "-": lambda: a - b,
        "*": lambda: a * b,
        "<<": lambda: a << (b & 0x1F),
        ">>": lambda: a >> (b & 0x1F),
        "|": lambda: a | b,
        "^": lambda: a ^ b,
        "&": lambda: a & b,
        "==": lambda: int(a == b),
        "!=": lambda: int(a != b),
        "<": lambda: int(a < b),
        "<=": lambda: int(a <= b),
        ">": lambda: int(a > b),
        ">=": lambda: int(a >= b),
        "and": lambda: int(bool(a) and bool(b)),
        "or": lambda: int(bool(a) or bool(b)),
    }
    return int32(results[op]())


def fold_unary(op: str, value: int, node: s.Node) -> int:
    """`op value` on a constant; `abs(-32768)` is refused as the reference does."""
    if op == "-":
        return int32(-value)
    if op == "~":
        return int32(~value)
    if op == "abs":
        if value == -32768:
            raise CompileError("abs(-32768) does not fit 16 bits", node.line, node.column)
        return int32(abs(value))
    return int(value == 0)
