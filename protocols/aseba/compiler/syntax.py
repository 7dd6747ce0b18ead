"""The syntax tree of an Aseba script: expressions, statements, and the sections of a program.

Every node carries the `line` and `column` (from 1) of its first token, for error messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Node:
    """Base of every syntax node: where it starts in the source."""

    line: int
    column: int


@dataclass(frozen=True, slots=True)
class Number(Node):
    """An integer literal (already a signed 16-bit value)."""

    value: int


@dataclass(frozen=True, slots=True)
class Name(Node):
    """A variable or constant, by name."""

    name: str


@dataclass(frozen=True, slots=True)
class Index(Node):
    """`name[index]`: one element."""

    name: str
    index: Expression


@dataclass(frozen=True, slots=True)
class Slice(Node):
    """`name[first:last]`: elements first..last (both included, constant bounds)."""

    name: str
    first: Expression
    last: Expression


@dataclass(frozen=True, slots=True)
class ArrayLiteral(Node):
    """`[a, b, ...]`: the concatenation of its items."""

    items: tuple[Expression, ...]


@dataclass(frozen=True, slots=True)
class Unary(Node):
    """`op operand` with op one of "-", "~", "abs", "not"."""

    op: str
    operand: Expression


@dataclass(frozen=True, slots=True)
class Binary(Node):
    """`left op right` (arithmetic, bitwise, comparison, "and", "or")."""

    op: str
    left: Expression
    right: Expression


Expression = Number | Name | Index | Slice | ArrayLiteral | Unary | Binary
Target = Name | Index | Slice


@dataclass(frozen=True, slots=True)
class VarDecl(Node):
    """`var name[size] = init` (size and initialiser optional)."""

    name: str
    size: Expression | None
    sized: bool
    init: Expression | None


@dataclass(frozen=True, slots=True)
class ConstDecl(Node):
    """`const name = value` (a constant expression)."""

    name: str
    value: Expression


@dataclass(frozen=True, slots=True)
class Assign(Node):
    """`target op value`: op "=", a compound operator like "+=", or "++"/"--" (no value)."""

    target: Target
    op: str
    value: Expression | None


@dataclass(frozen=True, slots=True)
class If(Node):
    """`if c then ... elseif c then ... else ... end`: `branches` in order, then `otherwise`."""

    branches: tuple[tuple[Expression, tuple[Statement, ...]], ...]
    otherwise: tuple[Statement, ...]


@dataclass(frozen=True, slots=True)
class When(Node):
    """`when c do ... end`: runs the body when `c` becomes true."""

    condition: Expression
    body: tuple[Statement, ...]


@dataclass(frozen=True, slots=True)
class While(Node):
    """`while c do ... end`."""

    condition: Expression
    body: tuple[Statement, ...]


@dataclass(frozen=True, slots=True)
class For(Node):
    """`for var in first:last step s do ... end` (last included; step a constant, default 1)."""

    variable: Name
    first: Expression
    last: Expression
    step: Expression | None
    body: tuple[Statement, ...]


@dataclass(frozen=True, slots=True)
class Emit(Node):
    """`emit event argument` (argument optional)."""

    event: str
    argument: Expression | None


@dataclass(frozen=True, slots=True)
class Call(Node):
    """`call native(arguments)`."""

    native: str
    arguments: tuple[Expression, ...]


@dataclass(frozen=True, slots=True)
class CallSub(Node):
    """`callsub name`."""

    name: str


@dataclass(frozen=True, slots=True)
class Return(Node):
    """`return`: leave the event handler or the subroutine."""


Statement = VarDecl | ConstDecl | Assign | If | When | While | For | Emit | Call | CallSub | Return


@dataclass(frozen=True, slots=True)
class Section(Node):
    """The init code (`kind` "init"), an `onevent` handler or a `sub` subroutine, with its body."""

    kind: str
    name: str
    body: tuple[Statement, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class Program:
    """A whole script: the init section first, then handlers and subroutines in source order."""

    sections: tuple[Section, ...]
