"""Syntax tree to bytecode, through the `Assembler`.

Arrays are expanded element by element (both operands of an operator have the same size); constant
sub-expressions are folded; `not` is pushed down to the comparisons (De Morgan). Conditions
branch on their comparison or logical operator directly. Native arguments that are not plain
variables or constant slices go through temporaries placed after the script's variables.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocols.aseba.bytecode import SMALL_MIN, Assembler, Binary, Op, Unary, word
from protocols.aseba.compiler import syntax as s
from protocols.aseba.compiler.errors import CompileError
from protocols.aseba.compiler.symbols import Symbols
from protocols.aseba.vm import INIT_EVENT
from protocols.errors import ProtocolError

BINARY_OPS: dict[str, Binary] = {
    "<<": Binary.SHIFT_LEFT,
    ">>": Binary.SHIFT_RIGHT,
    "+": Binary.ADD,
    "-": Binary.SUB,
    "*": Binary.MULT,
    "/": Binary.DIV,
    "%": Binary.MOD,
    "|": Binary.BIT_OR,
    "^": Binary.BIT_XOR,
    "&": Binary.BIT_AND,
    "==": Binary.EQUAL,
    "!=": Binary.NOT_EQUAL,
    ">": Binary.BIGGER_THAN,
    ">=": Binary.BIGGER_EQUAL_THAN,
    "<": Binary.SMALLER_THAN,
    "<=": Binary.SMALLER_EQUAL_THAN,
    "or": Binary.OR,
    "and": Binary.AND,
}
UNARY_OPS = {"-": Unary.NEG, "abs": Unary.ABS, "~": Unary.BIT_NOT}
NEGATED = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}
CONDITION_OPS = frozenset((*NEGATED, "and", "or"))


@dataclass(frozen=True, slots=True)
class Memory:
    """A run of words at a fixed address."""

    address: int
    size: int


def _declaration_only(statement: s.Statement) -> bool:
    return isinstance(statement, s.ConstDecl) or (isinstance(statement, s.VarDecl) and statement.init is None)


def _reads(expression: s.Expression, name: str) -> bool:
    """True when `expression` reads variable `name`."""
    e = expression
    if isinstance(e, s.Name):
        return e.name == name
    if isinstance(e, s.Index):
        return e.name == name or _reads(e.index, name)
    if isinstance(e, s.Slice):
        return e.name == name
    if isinstance(e, s.ArrayLiteral):
        return any(_reads(item, name) for item in e.items)
    if isinstance(e, s.Unary):
        return _reads(e.operand, name)
    if isinstance(e, s.Binary):
        return _reads(e.left, name) or _reads(e.right, name)
    return False


def negate(expression: s.Expression) -> s.Expression:
    """`not expression`, with the negation pushed down to comparisons (De Morgan)."""
    e = expression
    if isinstance(e, s.Unary) and e.op == "not":
        return e.operand
    if isinstance(e, s.Binary) and e.op in NEGATED:
        return s.Binary(e.line, e.column, NEGATED[e.op], e.left, e.right)
    if isinstance(e, s.Binary) and e.op in ("and", "or"):
        op = "or" if e.op == "and" else "and"
        return s.Binary(e.line, e.column, op, negate(e.left), negate(e.right))
    return s.Binary(e.line, e.column, "==", e, s.Number(e.line, e.column, 0))


class CodeGenerator:
    """Generates one program's code into `asm` against `symbols`."""

    def __init__(self, symbols: Symbols, asm: Assembler) -> None:
        self.symbols = symbols
        self.asm = asm
        self.subroutines: dict[str, str] = {}
        self.in_subroutine = False
        #: True while generating the operands of a condition, where comparisons are allowed.
        self.in_condition = False

    def error(self, message: str, node: s.Node) -> CompileError:
        """A `CompileError` at `node`."""
        return CompileError(message, node.line, node.column)

    # -- program -------------------------------------------------------------------------------

    def program(self, program: s.Program) -> None:
        """Generate every section: event handlers and the init code by event id, then subroutines.

        This is the order of Debian's compiler; init code that does nothing gets no handler.
        """
        handlers: dict[int, s.Section] = {}
        subroutines: list[s.Section] = []
        for section in program.sections:
            if section.kind == "sub":
                if section.name in self.subroutines:
                    raise self.error(f"subroutine {section.name} is already defined", section)
                self.subroutines[section.name] = self.asm.new_label("sub." + section.name)
                subroutines.append(section)
            elif section.kind == "init":
                if any(not _declaration_only(st) for st in section.body):
                    handlers[INIT_EVENT] = section
            else:
                event_id = self.symbols.event(section.name, section)[0]
                if event_id in handlers:
                    raise self.error(f"event {section.name} already has a handler", section)
                handlers[event_id] = section
        for event_id in sorted(handlers):
            self.in_subroutine = False
            self.asm.handler(event_id)
            self.block(handlers[event_id].body)
            self.asm.stop()
        for section in subroutines:
            self.in_subroutine = True
            self.asm.label(self.subroutines[section.name])
            self.block(section.body)
            self.asm.sub_ret()

    def block(self, body: tuple[s.Statement, ...]) -> None:
        """Generate the statements of a block in order."""
        for statement in body:
            self.symbols.reset_temporaries()
            try:
                self.statement(statement)
            except CompileError:
                raise
            except ProtocolError as error:
                raise self.error(str(error), statement) from None

    # -- statements ----------------------------------------------------------------------------

    def statement(self, st: s.Statement) -> None:
        """Generate one statement."""
        if isinstance(st, s.VarDecl):
            if st.init is not None:
                self.assign(s.Name(st.line, st.column, st.name), st.init, st)
        elif isinstance(st, s.ConstDecl):
            pass  # declared before generation
        elif isinstance(st, s.Assign):
            self.assignment(st)
        elif isinstance(st, s.If):
            self.if_statement(st)
        elif isinstance(st, s.When):
            end = self.asm.new_label("when")
            self.condition(st.condition, end, when=True)
            self.block(st.body)
            self.asm.label(end)
        elif isinstance(st, s.While):
            top, end = self.asm.new_label("while"), self.asm.new_label("wend")
            self.asm.label(top)
            self.condition(st.condition, end)
            self.block(st.body)
            self.asm.jump(top)
            self.asm.label(end)
        elif isinstance(st, s.For):
            self.for_statement(st)
        elif isinstance(st, s.Emit):
            self.emit(st)
        elif isinstance(st, s.Call):
            self.call(st)
        elif isinstance(st, s.CallSub):
            label = self.subroutines.get(st.name)
            if label is None:
                raise self.error(f"subroutine {st.name} is not defined", st)
            self.asm.sub_call(label)
        elif self.in_subroutine:
            self.asm.sub_ret()
        else:
            self.asm.stop()

    def assignment(self, st: s.Assign) -> None:
        if st.op == "=":
            assert st.value is not None
            self.assign(st.target, st.value, st)
            return
        if st.op in ("++", "--"):
            one = s.Number(st.line, st.column, 1)
            size = self.symbols.size(st.target)
            ones: s.Expression = one if size == 1 else s.ArrayLiteral(st.line, st.column, (one,) * size)
            op, value = st.op[0], ones
        else:
            assert st.value is not None
            op, value = st.op[:-1], st.value
        self.assign(st.target, s.Binary(st.line, st.column, op, st.target, value), st)

    def assign(self, target: s.Target, value: s.Expression, node: s.Node) -> None:
        """Store `value` into `target` element by element."""
        symbols = self.symbols
        if isinstance(target, s.Name) and target.name in symbols.constants and target.name not in symbols.variables:
            raise self.error(f"{target.name} is a constant and cannot be assigned", target)
        target_size = symbols.size(target)
        value_size = symbols.size(value)
        if value_size != target_size:
            raise self.error(f"size mismatch: assigning {value_size} words to {target_size} words", node)
        if isinstance(target, s.Index) and symbols.constant(target.index) is None:
            variable = symbols.variable(target.name, target)
            self.element(value, 0)
            self.element(target.index, 0)
            self.asm.store_indirect(variable.address, variable.size)
            return
        memory = self.memory(target)
        assert memory is not None
        if memory.size > 1 and _reads(value, target.name):
            # The value reads the array it is stored into: compute it whole first (like Debian's
            # compiler), so that `a[1:2] = a[0:1]` copies the old elements.
            temporary = self.symbols.temporary(memory.size, node)
            self.store_into(value, temporary)
            for i in range(memory.size):
                self.asm.load(temporary + i)
                self.asm.store(memory.address + i)
            return
        for i in range(memory.size):
            self.element(value, i)
            self.asm.store(memory.address + i)

    def if_statement(self, st: s.If) -> None:
        end = self.asm.new_label("endif")
        for condition, body in st.branches:
            following = self.asm.new_label("else")
            self.condition(condition, following)
            self.block(body)
            if st.otherwise or (condition, body) != st.branches[-1]:
                self.asm.jump(end)
            self.asm.label(following)
        self.block(st.otherwise)
        self.asm.label(end)

    def for_statement(self, st: s.For) -> None:
        symbols = self.symbols
        variable = symbols.variable(st.variable.name, st.variable)
        if variable.size != 1:
            raise self.error(f"the loop variable {variable.name} must be a scalar", st.variable)
        step = 1 if st.step is None else symbols.require_constant(st.step, "the step of a for loop")
        if step == 0:
            raise self.error("the step of a for loop cannot be 0", st.step or st)
        first = symbols.require_constant(st.first, "a for loop bound")
        last = symbols.require_constant(st.last, "a for loop bound")
        if first > last if step > 0 else first < last:
            raise self.error(f"the for loop range {first}:{last} with step {step} is empty", st)
        self.assign(st.variable, st.first, st)
        top, end = self.asm.new_label("for"), self.asm.new_label("endfor")
        self.asm.label(top)
        self.condition(s.Binary(st.line, st.column, "<=" if step > 0 else ">=", st.variable, st.last), end)
        self.block(st.body)
        self.assign(st.variable, s.Binary(st.line, st.column, "+", st.variable, s.Number(st.line, st.column, step)), st)
        self.asm.jump(top)
        self.asm.label(end)

    def emit(self, st: s.Emit) -> None:
        event_id, size = self.symbols.event(st.event, st)
        if size is None:
            raise self.error(f"{st.event} is a local event of the node and cannot be emitted", st)
        if st.argument is None:
            if size:
                raise self.error(f"event {st.event} carries {size} words, none given", st)
            self.asm.emit(event_id, 0, 0)
            return
        given = self.symbols.size(st.argument)
        if given != size:
            raise self.error(f"event {st.event} carries {size} words, {given} given", st.argument)
        memory = self.memory(st.argument)
        if memory is None:
            memory = Memory(self.symbols.temporary(size, st.argument), size)
            self.store_into(st.argument, memory.address)
        self.asm.emit(event_id, memory.address, memory.size)

    def call(self, st: s.Call) -> None:
        index, native = self.symbols.native(st.native, st)
        if len(st.arguments) != len(native.parameters):
            raise self.error(f"{st.native} takes {len(native.parameters)} arguments, {len(st.arguments)} given", st)
        templates: dict[int, int] = {}
        for argument, (size, name) in zip(st.arguments, native.parameters, strict=True):
            given = self.symbols.size(argument)
            if size > 0 and given != size:
                raise self.error(f"argument {name} of {st.native} must have {size} words, not {given}", argument)
            if size < 0:
                expected = templates.setdefault(size, given)
                if expected != given:
                    raise self.error(
                        f"argument {name} of {st.native} must have {expected} words like the others, not {given}",
                        argument,
                    )
        # Like Debian's compiler: temporaries allocated in argument order, template sizes pushed
        # first, then each argument (last first) computed into its temporary and its address pushed.
        memories = [self.memory(argument) for argument in st.arguments]
        temporaries = [
            self.symbols.temporary(self.symbols.size(argument), argument) if memory is None else memory.address
            for argument, memory in zip(st.arguments, memories, strict=True)
        ]
        for template in sorted(templates):
            self.push(templates[template])
        for argument, memory, address in reversed(list(zip(st.arguments, memories, temporaries, strict=True))):
            if memory is None:
                self.store_into(argument, address)
            self.push(address)
        self.asm.native(index)

    # -- expressions ---------------------------------------------------------------------------

    def memory(self, expression: s.Expression) -> Memory | None:
        """Where `expression` already is in memory (a variable, an element, a slice), else None."""
        symbols = self.symbols
        if isinstance(expression, s.Name) and expression.name in symbols.variables:
            variable = symbols.variables[expression.name]
            return Memory(variable.address, variable.size)
        if isinstance(expression, s.Index):
            variable = symbols.variable(expression.name, expression)
            index = symbols.constant(expression.index)
            if index is None:
                return None
            if not 0 <= index < variable.size:
                raise self.error(f"index {index} is outside array {variable.name} of size {variable.size}", expression)
            return Memory(variable.address + index, 1)
        if isinstance(expression, s.Slice):
            address, size = symbols.slice_bounds(expression)
            return Memory(address, size)
        return None

    def store_into(self, expression: s.Expression, address: int) -> None:
        """Compute `expression` into the words at `address`."""
        for i in range(self.symbols.size(expression)):
            self.element(expression, i)
            self.asm.store(address + i)

    def push(self, value: int) -> None:
        """Push a constant; -2048 takes two words, as Debian's compiler writes it."""
        if value == SMALL_MIN:
            self.asm.code += [word(Op.LARGE_IMMEDIATE), value & 0xFFFF]
        else:
            self.asm.push(value)

    def element(self, expression: s.Expression, i: int) -> None:
        """Push element `i` of `expression`."""
        symbols = self.symbols
        logical = isinstance(expression, s.Binary) and expression.op in CONDITION_OPS
        if (logical or (isinstance(expression, s.Unary) and expression.op == "not")) and not self.in_condition:
            op = expression.op if isinstance(expression, s.Binary | s.Unary) else ""
            raise self.error(f"{op} is only allowed in a condition (if, elseif, when, while)", expression)
        value = symbols.constant(expression)
        if value is not None:
            self.push(value)
            return
        if isinstance(expression, s.Number):
            self.push(expression.value)  # reached only by a literal the folding above did not take
        elif isinstance(expression, s.Name | s.Slice):
            memory = self.memory(expression)
            if memory is None:
                raise self.error(f"{expression.name} is not a defined variable", expression)
            self.asm.load(memory.address + i)
        elif isinstance(expression, s.Index):
            memory = self.memory(expression)
            if memory is not None:
                self.asm.load(memory.address)
            else:
                variable = symbols.variable(expression.name, expression)
                self.element(expression.index, 0)
                self.asm.load_indirect(variable.address, variable.size)
        elif isinstance(expression, s.ArrayLiteral):
            for item in expression.items:
                size = symbols.size(item)
                if i < size:
                    self.element(item, i)
                    return
                i -= size
            raise AssertionError(i)
        elif isinstance(expression, s.Unary):
            if expression.op == "not":
                self.element(negate(expression.operand), i)
                return
            self.element(expression.operand, i)
            self.asm.unary(UNARY_OPS[expression.op])
        else:
            symbols.size(expression)  # checks that the sizes agree
            # 0 + x, x + 0 and x / 1 are x, as Debian's compiler simplifies them.
            if expression.op == "+" and symbols.constant(expression.left) == 0:
                self.element(expression.right, i)
                return
            if (expression.op, symbols.constant(expression.right)) in (("+", 0), ("/", 1)):
                self.element(expression.left, i)
                return
            self.element(expression.left, i)
            factor = self.constant_element(expression.right, i) if expression.op == "*" else None
            if factor is not None and factor > 1 and factor & (factor - 1) == 0:
                # Multiplying by a power of two is a left shift (as Debian's compiler does).
                self.push(factor.bit_length() - 1)
                self.asm.binary(Binary.SHIFT_LEFT)
                return
            self.element(expression.right, i)
            self.asm.binary(BINARY_OPS[expression.op])

    def constant_element(self, expression: s.Expression, i: int) -> int | None:
        """Element `i` of `expression` when it is a constant, else None."""
        if isinstance(expression, s.ArrayLiteral):
            for item in expression.items:
                size = self.symbols.size(item)
                if i < size:
                    return self.constant_element(item, i)
                i -= size
            return None
        return self.symbols.constant(expression)

    def condition(self, expression: s.Expression, otherwise: str, when: bool = False) -> None:
        """Go on when `expression` holds (with `when`: has just become true), else jump to `otherwise`."""
        while isinstance(expression, s.Unary) and expression.op == "not":
            expression = negate(expression.operand)
        if self.symbols.size(expression) != 1:
            raise self.error("a condition must be a single value", expression)
        self.in_condition = True
        try:
            if isinstance(expression, s.Binary) and expression.op in CONDITION_OPS:
                self.element(expression.left, 0)
                self.element(expression.right, 0)
                self.asm.branch_unless(BINARY_OPS[expression.op], otherwise, when)
            else:
                self.element(expression, 0)
                self.push(0)
                self.asm.branch_unless(Binary.NOT_EQUAL, otherwise, when)
        finally:
            self.in_condition = False
