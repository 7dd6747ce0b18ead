"""Scalar expressions: one element of a (vector) expression, expanded and simplified.

`element_tree(expression, i)` gives the scalar tree that computes element `i`; `simplify` rewrites
it as Debian's compiler does (tree-optimize.cpp), so that every program is no larger: constants
folded in 32-bit C `int` arithmetic (the emitted word is the low 16 bits), neutral elements
removed (`x+0`, `0+x`, `x-0`, `x*1`, `1*x`, `x/1`, `x|0`, `0|x`, `x&-1`, `-1&x`, `c and true`,
`false or c`), absorbing elements folded (`x*0`, `x&0`, `x|-1`, `c and false`, `true or c`),
multiplication and division by a power of two turned into shifts, and `not` removed by De Morgan.
"""

from __future__ import annotations

from protocols.aseba.compiler import syntax as s
from protocols.aseba.compiler.errors import CompileError
from protocols.aseba.compiler.symbols import Symbols, fold, fold_unary

NEGATED = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}
COMPARISONS = frozenset(NEGATED)
LOGICAL = frozenset(("and", "or"))


def element_tree(symbols: Symbols, expression: s.Expression, i: int) -> s.Expression:
    """The scalar tree of element `i` of `expression` (names of arrays become constant indices)."""
    e = expression
    if isinstance(e, s.Number):
        return e
    if isinstance(e, s.Name):
        if e.name in symbols.constants and e.name not in symbols.variables:
            return s.Number(e.line, e.column, symbols.constants[e.name])
        variable = symbols.variable(e.name, e)
        if variable.size == 1:
            return e
        return s.Index(e.line, e.column, e.name, s.Number(e.line, e.column, i))
    if isinstance(e, s.Index):
        return s.Index(e.line, e.column, e.name, element_tree(symbols, e.index, 0))
    if isinstance(e, s.Slice):
        first = symbols.slice_bounds(e)[0] - symbols.variable(e.name, e).address
        return s.Index(e.line, e.column, e.name, s.Number(e.line, e.column, first + i))
    if isinstance(e, s.ArrayLiteral):
        for item in e.items:
            size = symbols.size(item)
            if i < size:
                return element_tree(symbols, item, i)
            i -= size
        raise AssertionError(i)
    if isinstance(e, s.Unary):
        return s.Unary(e.line, e.column, e.op, element_tree(symbols, e.operand, i))
    return s.Binary(e.line, e.column, e.op, element_tree(symbols, e.left, i), element_tree(symbols, e.right, i))


def is_boolean(expression: s.Expression) -> bool:
    """True for a comparison, `and`, `or` or `not` (what a condition must be)."""
    e = expression
    return (isinstance(e, s.Binary) and (e.op in COMPARISONS or e.op in LOGICAL)) or (
        isinstance(e, s.Unary) and e.op == "not"
    )


def check_types(expression: s.Expression, boolean: bool) -> None:
    """Refuse integers where a condition is needed and conditions where an integer is (reference typecheck)."""
    e = expression
    if boolean and not is_boolean(e):
        raise CompileError("a condition must be a comparison, and, or, not: found an integer", e.line, e.column)
    if not boolean and is_boolean(e):
        op = e.op if isinstance(e, s.Binary | s.Unary) else ""
        raise CompileError(f"{op} is only allowed in a condition (if, elseif, when, while)", e.line, e.column)
    if isinstance(e, s.Binary):
        operands_boolean = e.op in LOGICAL
        check_types(e.left, operands_boolean)
        check_types(e.right, operands_boolean)
    elif isinstance(e, s.Unary):
        check_types(e.operand, e.op == "not")
    elif isinstance(e, s.Index):
        check_types(e.index, False)
    elif isinstance(e, s.ArrayLiteral):
        for item in e.items:
            check_types(item, False)
    elif isinstance(e, s.Slice):
        check_types(e.first, False)
        check_types(e.last, False)


def _power_of_two(value: int) -> int | None:
    """The exponent k when `value` is 2**k with k >= 1, else None."""
    if value > 1 and value & (value - 1) == 0:
        return value.bit_length() - 1
    return None


def negate(expression: s.Expression) -> s.Expression:
    """`not expression` for a simplified condition (De Morgan down to the comparisons)."""
    e = expression
    if isinstance(e, s.Number):
        return s.Number(e.line, e.column, int(e.value == 0))
    if isinstance(e, s.Binary) and e.op in NEGATED:
        return s.Binary(e.line, e.column, NEGATED[e.op], e.left, e.right)
    if isinstance(e, s.Binary) and e.op in LOGICAL:
        op = "or" if e.op == "and" else "and"
        return s.Binary(e.line, e.column, op, negate(e.left), negate(e.right))
    raise AssertionError(e)  # the type check admits only conditions under `not`


def simplify(symbols: Symbols, expression: s.Expression) -> s.Expression:
    """Simplify the scalar tree `expression` bottom-up, as the reference optimizer does."""
    e = expression
    if isinstance(e, s.Number | s.Name):
        return e
    if isinstance(e, s.Index):
        index = simplify(symbols, e.index)
        if isinstance(index, s.Number):
            variable = symbols.variable(e.name, e)
            if not 0 <= index.value < variable.size:
                raise CompileError(
                    f"index {index.value} is outside array {variable.name} of size {variable.size}", e.line, e.column
                )
        return s.Index(e.line, e.column, e.name, index)
    if isinstance(e, s.Unary):
        operand = simplify(symbols, e.operand)
        if isinstance(operand, s.Number):
            return s.Number(e.line, e.column, fold_unary(e.op, operand.value, e))
        if e.op == "not":
            return negate(operand)
        return s.Unary(e.line, e.column, e.op, operand)
    assert isinstance(e, s.Binary), e
    left, right = simplify(symbols, e.left), simplify(symbols, e.right)
    lv = left.value if isinstance(left, s.Number) else None
    rv = right.value if isinstance(right, s.Number) else None
    if lv is not None and rv is not None:
        return s.Number(e.line, e.column, fold(e.op, lv, rv, e))
    op = e.op
    # Neutral elements.
    if op in ("*", "/") and rv == 1:
        return left
    if op == "*" and lv == 1:
        return right
    if op in ("+", "-") and rv == 0:
        return left
    if op == "+" and lv == 0:
        return right
    if op in ("|", "or", "^", "<<", ">>") and rv == 0:
        return left  # x ^ 0, x << 0, x >> 0: kept by the reference, dropped here (shorter)
    if op in ("|", "or", "^") and lv == 0:
        return right
    if op == "&" and rv == -1:
        return left
    if op == "&" and lv == -1:
        return right
    if op == "and" and rv is not None and rv != 0:
        return left
    if op == "and" and lv is not None and lv != 0:
        return right
    # Absorbing elements.
    if op in ("*", "&", "and") and 0 in (lv, rv):
        return s.Number(e.line, e.column, 0)
    if op == "|" and -1 in (lv, rv):
        return s.Number(e.line, e.column, -1)
    if op == "or" and ((lv is not None and lv != 0) or (rv is not None and rv != 0)):
        return s.Number(e.line, e.column, 1)
    if op in ("/", "%") and rv == 0:
        raise CompileError("division by zero", e.line, e.column)
    shift = None if rv is None else _power_of_two(rv)
    if shift is not None and op in ("*", "/"):
        # x * 2^k is x << k; x / 2^k is x >> k, which rounds toward minus infinity like the
        # reference compiler (Aseba Studio, Thymio Suite) that users' programs are written for.
        return s.Binary(e.line, e.column, "<<" if op == "*" else ">>", left, s.Number(e.line, e.column, shift))
    return s.Binary(e.line, e.column, op, left, right)
