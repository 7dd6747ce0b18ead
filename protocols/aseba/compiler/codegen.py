"""Syntax tree to bytecode, through the `Assembler`, laid out as Debian's compiler does.

Each element of an expression is expanded to a scalar tree and simplified (`simplify`: constant
folding, neutral and absorbing elements, shifts for powers of two, De Morgan). Statements that
generate no code are dropped with their conditions, constant conditions keep only the branch
taken, event handlers without code get no entry. Native arguments that are not variables or
constant slices go through temporaries placed at the end of the memory; an element with a
run-time index is passed by address, after a bounds check. Each section's code range and
subroutine calls are recorded for the stack check (`program.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocols.aseba.bytecode import INSTRUCTION_LENGTH, SMALL_MIN, Assembler, Binary, Op, Unary, word
from protocols.aseba.compiler import syntax as s
from protocols.aseba.compiler.errors import CompileError
from protocols.aseba.compiler.simplify import check_types, element_tree, negate, simplify
from protocols.aseba.compiler.symbols import Symbols, to_word
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


@dataclass(frozen=True, slots=True)
class Memory:
    """A run of words at a fixed address."""

    address: int
    size: int


@dataclass(slots=True)
class SectionCode:
    """Where one section's code is (`start`, `end` in the assembler's code) and what it calls."""

    section: s.Section
    start: int = 0
    end: int = 0
    #: The `callsub` statements of the section that were generated, in order.
    calls: list[s.CallSub] = field(default_factory=list)
    #: Where each top-level statement's code starts, in order.
    statements: list[tuple[int, s.Statement]] = field(default_factory=list)


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


class CodeGenerator:
    """Generates one program's code into `asm` against `symbols`."""

    def __init__(self, symbols: Symbols, asm: Assembler) -> None:
        self.symbols = symbols
        self.asm = asm
        self.subroutines: dict[str, str] = {}
        self.in_subroutine = False
        #: The code of every generated section, in generation order.
        self.sections: list[SectionCode] = []
        self._current: SectionCode | None = None

    def error(self, message: str, node: s.Node) -> CompileError:
        """A `CompileError` at `node`."""
        return CompileError(message, node.line, node.column)

    # -- program -------------------------------------------------------------------------------

    def program(self, program: s.Program, source_order: bool = False) -> None:
        """Generate every section: event handlers and the init code by event id, then subroutines.

        This is the order of Debian's compiler. With `source_order`, sections are generated in
        the order of the source instead, so that the first error raised is the first in the text.
        """
        handlers: dict[int, s.Section] = {}
        subroutines: list[s.Section] = []
        ordered: list[tuple[int | None, s.Section]] = []
        for section in program.sections:
            if section.kind == "sub":
                if section.name in self.subroutines:
                    raise self.error(f"subroutine {section.name} is already defined", section)
                self.subroutines[section.name] = self.asm.new_label("sub." + section.name)
                subroutines.append(section)
                ordered.append((None, section))
            else:
                event_id = INIT_EVENT if section.kind == "init" else self.symbols.event(section.name, section)[0]
                if event_id in handlers:
                    raise self.error(f"event {section.name} already has a handler", section)
                handlers[event_id] = section
                ordered.append((event_id, section))
        if not source_order:
            ordered = [(key, handlers[key]) for key in sorted(handlers)]
            ordered += [(None, section) for section in subroutines]
        for target, section in ordered:
            code = SectionCode(section, len(self.asm.code))
            self._current = code
            self.in_subroutine = target is None
            if target is None:
                self.asm.label(self.subroutines[section.name])
                self.block(section.body, top=True)
                if not self._ends_with(Op.SUB_RET):
                    self.asm.sub_ret()
            else:
                self.block(section.body, top=True)
                if len(self.asm.code) == code.start:
                    continue  # no code: no handler, as Debian's compiler does
                self.asm.handlers[target] = code.start
                self.asm.stop()
            code.end = len(self.asm.code)
            self.sections.append(code)
        self._current = None

    def _ends_with(self, op: Op) -> bool:
        """True when the last instruction is `op` and no label points after it."""
        code = self.asm.code
        if not code or code[-1] >> 12 != op or len(code) in self.asm.labels.values():
            return False
        # The word before could be the operand of a two-word instruction: walk the section.
        assert self._current is not None
        position, last = self._current.start, -1
        while position < len(code):
            last = position
            position += INSTRUCTION_LENGTH.get(Op(code[position] >> 12), 1)
        return last == len(code) - 1

    def block(self, body: tuple[s.Statement, ...], top: bool = False) -> None:
        """Generate the statements of a block in order.

        Temporaries are freed before each statement of a section's top level only, like Debian's
        compiler (inside a block they accumulate), so that the addresses are the same.
        """
        for statement in body:
            if top:
                self.symbols.reset_temporaries()
                if self._current is not None:
                    self._current.statements.append((len(self.asm.code), statement))
            try:
                self.statement(statement)
            except CompileError:
                raise
            except ProtocolError as error:
                raise self.error(str(error), statement) from None

    def dead(self, body: tuple[s.Statement, ...]) -> None:
        """Check a block that is never run (a constant condition), then drop its code."""
        mark = self.asm.checkpoint()
        calls = len(self._current.calls) if self._current else 0
        top = self.symbols.temporaries_top
        self.block(body)
        self.asm.rollback(mark)
        self.symbols.temporaries_top = top
        if self._current:
            del self._current.calls[calls:]

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
            self.if_statement(st.branches, st.otherwise, when=False)
        elif isinstance(st, s.When):
            self.if_statement(((st.condition, st.body),), (), when=True)
        elif isinstance(st, s.While):
            self.while_statement(st)
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
            if self._current is not None:
                self._current.calls.append(st)
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

    def if_statement(
        self,
        branches: tuple[tuple[s.Expression, tuple[s.Statement, ...]], ...],
        otherwise: tuple[s.Statement, ...],
        when: bool,
    ) -> None:
        """`if`/`elseif`/`else` (or `when`): constant conditions resolved, empty tails dropped."""
        live: list[tuple[s.Binary, tuple[s.Statement, ...]]] = []
        for position, (condition, body) in enumerate(branches):
            tree = self.condition_tree(condition)
            if isinstance(tree, s.Binary):
                live.append((tree, body))
                continue
            if not tree.value:
                self.dead(body)
                continue
            # Always true: this body replaces the rest of the chain, which is never run.
            for later_condition, later_body in branches[position + 1 :]:
                self.condition_tree(later_condition)
                self.dead(later_body)
            self.dead(otherwise)
            otherwise = body
            break
        self.chain(live, otherwise, when)

    def chain(
        self, branches: list[tuple[s.Binary, tuple[s.Statement, ...]]], otherwise: tuple[s.Statement, ...], when: bool
    ) -> bool:
        """Generate an if/elseif chain; drop the parts that generate nothing. True when code was written."""
        if not branches:
            start = len(self.asm.code)
            self.block(otherwise)
            return len(self.asm.code) > start
        tree, body = branches[0]
        mark = self.asm.checkpoint()
        following, end = self.asm.new_label("else"), self.asm.new_label("endif")
        self.branch(tree, following, when)
        body_start = len(self.asm.code)
        self.block(body)
        body_empty = len(self.asm.code) == body_start
        jump = self.asm.checkpoint()
        self.asm.jump(end)
        self.asm.label(following)
        if self.chain(branches[1:], otherwise, when):
            if body_empty and not when:
                # Nothing to do when the test holds: test the opposite and skip the jump (one
                # word less than the reference, which keeps an empty block and its jump).
                self.asm.rollback(mark)
                opposite = negate(tree)
                assert isinstance(opposite, s.Binary)
                self.branch(opposite, end)
                self.chain(branches[1:], otherwise, when)
            self.asm.label(end)
            return True
        self.asm.rollback(jump)
        if body_empty:
            self.asm.rollback(mark)  # nothing to run whatever the condition: no test at all
            return False
        self.asm.label(following)
        return True

    def while_statement(self, st: s.While) -> None:
        tree = self.condition_tree(st.condition)
        if isinstance(tree, s.Number):
            if tree.value:
                raise self.error("infinite loop: the condition of this while is always true", st.condition)
            self.dead(st.body)
            return
        mark = self.asm.checkpoint()
        top, end = self.asm.new_label("while"), self.asm.new_label("wend")
        self.asm.label(top)
        self.branch(tree, end)
        body_start = len(self.asm.code)
        self.block(st.body)
        if len(self.asm.code) == body_start:
            self.asm.rollback(mark)  # an empty loop is dropped, as Debian's compiler does
            return
        self.asm.jump(top)
        self.asm.label(end)

    def for_statement(self, st: s.For) -> None:
        symbols = self.symbols
        variable = symbols.variable(st.variable.name, st.variable)
        if variable.size != 1:
            raise self.error(f"the loop variable {variable.name} must be a scalar", st.variable)
        step = 1 if st.step is None else symbols.require_word(st.step, "the step of a for loop")
        if step == 0:
            raise self.error("the step of a for loop cannot be 0", st.step or st)
        first = symbols.require_word(st.first, "a for loop bound")
        last = symbols.require_word(st.last, "a for loop bound")
        if first > last if step > 0 else first < last:
            raise self.error(f"the for loop range {first}:{last} with step {step} is empty", st)
        final = first + (last - first) // step * step
        if not -32768 <= final + step <= 32767:
            # The variable would wrap around before passing `last`: the loop would never end.
            raise self.error(
                f"the for loop {first}:{last} step {step} never ends: {variable.name} cannot pass {last} in 16 bits",
                st.last,
            )
        self.assign(st.variable, s.Number(st.first.line, st.first.column, first), st)
        if first == last:
            self.block(st.body)  # one iteration: no test, and the variable stays at `first`
            return
        top, end = self.asm.new_label("for"), self.asm.new_label("endfor")
        self.asm.label(top)
        comparison = self.condition_tree(
            s.Binary(st.line, st.column, "<=" if step > 0 else ">=", st.variable, s.Number(st.line, st.column, last))
        )
        assert isinstance(comparison, s.Binary)
        self.branch(comparison, end)
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
        any_sizes: list[int] = []
        for argument, (size, name) in zip(st.arguments, native.parameters, strict=True):
            check_types(argument, False)
            given = self.symbols.size(argument)
            if size > 0 and given != size:
                raise self.error(f"argument {name} of {st.native} must have {size} words, not {given}", argument)
            if size == 0:
                any_sizes.append(given)
            if size < 0:
                expected = templates.setdefault(size, given)
                if expected != given:
                    raise self.error(
                        f"argument {name} of {st.native} must have {expected} words like the others, not {given}",
                        argument,
                    )
        # Like Debian's compiler: temporaries allocated in argument order, the sizes of "any size"
        # and template parameters pushed (last first), then each argument's address (last first).
        # A native may write any argument, so an element with a run-time index is passed by
        # address, never through a copy.
        plans: list[tuple[s.Expression, Memory | None, int]] = []
        for argument in st.arguments:
            memory = self.memory(argument)
            if memory is not None:
                plans.append((argument, memory, memory.address))
            else:
                size = 1 if isinstance(argument, s.Index) else self.symbols.size(argument)
                plans.append((argument, None, self.symbols.temporary(size, argument)))
        for size in reversed([*any_sizes, *(templates[t] for t in sorted(templates, reverse=True))]):
            self.push(size)
        for argument, memory, address in reversed(plans):
            if memory is not None:
                self.push(address)
            elif isinstance(argument, s.Index):
                self.element_address(argument, address)
            else:
                self.store_into(argument, address)
                self.push(address)
        self.asm.native(index)

    def element_address(self, target: s.Index, scratch: int) -> None:
        """Push the address of `name[index]` (index known at run time only), bounds-checked.

        As Debian's compiler: the index is kept in `scratch`, read once through LOAD_INDIRECT
        (which stops the VM when it is out of bounds), then added to the array's address.
        """
        variable = self.symbols.variable(target.name, target)
        self.element(target.index, 0)
        self.asm.store(scratch)
        self.asm.load(scratch)
        self.asm.load(scratch)
        self.asm.load_indirect(variable.address, variable.size)
        self.asm.store(scratch)
        self.push(variable.address)
        self.asm.binary(Binary.ADD)

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
        """Push a constant (its low 16 bits); -2048 takes two words, as Debian's compiler writes it."""
        value = to_word(value)
        if value == SMALL_MIN:
            self.asm.code += [word(Op.LARGE_IMMEDIATE), value & 0xFFFF]
        else:
            self.asm.push(value)

    def element(self, expression: s.Expression, i: int) -> None:
        """Push element `i` of the integer `expression`."""
        check_types(expression, False)
        self.tree(simplify(self.symbols, element_tree(self.symbols, expression, i)))

    def tree(self, tree: s.Expression) -> None:
        """Push the value of a simplified scalar tree."""
        if isinstance(tree, s.Number):
            self.push(tree.value)
        elif isinstance(tree, s.Name):
            self.asm.load(self.symbols.variable(tree.name, tree).address)
        elif isinstance(tree, s.Index):
            variable = self.symbols.variable(tree.name, tree)
            if isinstance(tree.index, s.Number):
                self.asm.load(variable.address + tree.index.value)
            else:
                self.tree(tree.index)
                self.asm.load_indirect(variable.address, variable.size)
        elif isinstance(tree, s.Unary):
            self.tree(tree.operand)
            self.asm.unary(UNARY_OPS[tree.op])
        elif isinstance(tree, s.Binary):
            self.tree(tree.left)
            self.tree(tree.right)
            self.asm.binary(BINARY_OPS[tree.op])
        else:
            raise AssertionError(tree)

    def condition_tree(self, expression: s.Expression) -> s.Binary | s.Number:
        """The simplified condition: a comparison or logical operator, or a constant."""
        check_types(expression, True)
        if self.symbols.size(expression) != 1:
            raise self.error("a condition must be a single value", expression)
        tree = simplify(self.symbols, element_tree(self.symbols, expression, 0))
        assert isinstance(tree, s.Binary | s.Number), tree
        return tree

    def branch(self, tree: s.Binary, otherwise: str, when: bool = False) -> None:
        """Go on when the condition `tree` holds (with `when`: has just become true), else jump to `otherwise`."""
        self.tree(tree.left)
        self.tree(tree.right)
        self.asm.branch_unless(BINARY_OPS[tree.op], otherwise, when)
