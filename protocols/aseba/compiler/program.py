"""Compile one Aseba script against a node description: declarations, then code generation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from protocols.aseba.bytecode import INSTRUCTION_LENGTH, Assembler, Op
from protocols.aseba.compiler import syntax as s
from protocols.aseba.compiler.codegen import CodeGenerator, SectionCode
from protocols.aseba.compiler.errors import CompileError
from protocols.aseba.compiler.parser import parse
from protocols.aseba.compiler.symbols import EventSpec, Symbols
from protocols.aseba.description import NodeDescription, Variable
from protocols.errors import ProtocolError


@dataclass(frozen=True, slots=True)
class CompiledScript:
    """A compiled script: its bytecode (16-bit words, vector table first) and what it declares.

    `variables` are the script's own variables (addresses and sizes in words, after the node's
    named variables); `events` its global events (index = event id); `constants` every constant
    it saw (from the .aesl file, overrides, and `const` statements).
    """

    bytecode: tuple[int, ...]
    variables: dict[str, Variable]
    events: tuple[EventSpec, ...]
    constants: dict[str, int]


def compile_script(
    source: str,
    description: NodeDescription,
    events: Sequence[EventSpec] = (),
    constants: Mapping[str, int] | None = None,
) -> CompiledScript:
    """Compile `source` for the node `description`; `CompileError` (line:column) when it is wrong.

    The first error in the text is the one reported: the program is generated once in source
    order (only to find errors), then in the layout of Debian's compiler. A program nested so
    deeply that the compiler's recursion gives up is refused too.
    """
    try:
        return _compile(source, description, events, constants)
    except RecursionError:
        raise CompileError("the program is nested too deeply to compile", 1, 1) from None


def _compile(
    source: str,
    description: NodeDescription,
    events: Sequence[EventSpec],
    constants: Mapping[str, int] | None,
) -> CompiledScript:
    program = parse(source, {event.name: event.size for event in events})
    symbols = Symbols.create(description, events, constants or {})
    _check_events(symbols)
    for section in program.sections:
        _declare(symbols, section.body)
    CodeGenerator(symbols, Assembler()).program(program, source_order=True)
    asm = Assembler()
    generator = CodeGenerator(symbols, asm)
    generator.program(program)
    try:
        bytecode = asm.assemble()
    except ProtocolError as error:
        raise CompileError(f"program too large: {error}", 1, 1) from None
    check_stack(generator.sections, asm.code, description)
    if len(bytecode) > description.bytecode_size:
        raise CompileError(
            f"program needs {len(bytecode)} words of bytecode, node {description.name} has {description.bytecode_size}",
            1,
            1,
        )
    return CompiledScript(bytecode, dict(symbols.script_variables), symbols.events, dict(symbols.constants))


#: Call chains longer than this are refused before their depth is added up (the stack overflows).
MAX_CALL_CHAIN = 256
#: Stack effect of the instructions whose effect does not depend on the program.
_STACK_EFFECT = {
    Op.SMALL_IMMEDIATE: 1,
    Op.LARGE_IMMEDIATE: 1,
    Op.LOAD: 1,
    Op.STORE: -1,
    Op.STORE_INDIRECT: -2,
    Op.BINARY: -1,
    Op.CONDITIONAL_BRANCH: -2,
}


def stack_depth(code: Sequence[int], start: int = 0, end: int | None = None) -> tuple[int, int]:
    """Most words the code from `start` to `end` keeps on the stack, and where (subroutine returns aside).

    Every statement leaves the stack as it found it, so a linear scan suffices: a native call
    consumes everything its statement pushed.
    """
    depth = deepest = 0
    position = where = start
    end = len(code) if end is None else end
    while position < end:
        op = Op(code[position] >> 12)
        if op in (Op.STOP, Op.SUB_RET, Op.NATIVE_CALL):
            depth = 0
        else:
            depth += _STACK_EFFECT.get(op, 0)
        if depth > deepest:
            deepest, where = depth, position
        position += INSTRUCTION_LENGTH.get(op, 1)
    return deepest, where


def check_stack(sections: Sequence[SectionCode], code: Sequence[int], description: NodeDescription) -> None:
    """Refuse recursion, and call chains plus expressions deeper than the node's stack (words).

    Each `callsub` keeps its return address on the VM's stack while the subroutine runs, so a
    subroutine reached through n calls needs n words plus its own expressions (analysis.cpp).
    """
    by_name = {c.section.name: c for c in sections if c.section.kind == "sub"}
    own = {id(c): stack_depth(code, c.start, c.end)[0] for c in sections}
    needs: dict[str, int] = {}

    def deepest(section: SectionCode, path: tuple[str, ...]) -> int:
        """Words `section` needs on the stack, its callees included (not its own return address)."""
        words = own[id(section)]
        for call in section.calls:
            if call.name in path:
                chain = " -> ".join((*path[path.index(call.name) :], call.name))
                raise CompileError(
                    f"recursive call of subroutine {call.name} ({chain}): the execution stack will overflow",
                    call.line,
                    call.column,
                )
            if len(path) >= max(description.stack_size, MAX_CALL_CHAIN):
                # Each call keeps a return address: this chain overflows whatever it computes
                # (checked here so that a long chain cannot exhaust the compiler's recursion).
                raise CompileError(
                    f"the execution stack will overflow: more than {len(path)} nested subroutine calls",
                    call.line,
                    call.column,
                )
            if call.name not in needs:
                needs[call.name] = deepest(by_name[call.name], (*path, call.name))
            words = max(words, 1 + needs[call.name])
        return words

    for section in sections:
        path = (section.section.name,) if section.section.kind == "sub" else ()
        words = deepest(section, path)
        if words > description.stack_size:
            where: s.Node = section.section
            position = stack_depth(code, section.start, section.end)[1]
            for start, statement in section.statements:
                if start <= position:
                    where = statement
            for call in section.calls:
                if 1 + needs[call.name] > description.stack_size:
                    where = call
                    break
            raise CompileError(
                f"the execution stack will overflow: this code needs {words} words (subroutine calls and "
                f"expressions), node {description.name} has {description.stack_size}",
                where.line,
                where.column,
            )


def _check_events(symbols: Symbols) -> None:
    names: set[str] = set()
    for event in symbols.events:
        if not event.name:  # no program could name it, and the gateway's bus could not carry it
            raise CompileError("an event has an empty name", 1, 1)
        if event.name in names:
            raise CompileError(f"event {event.name} is defined twice", 1, 1)
        if event.size < 0:
            raise CompileError(f"event {event.name} has a negative size", 1, 1)
        names.add(event.name)


def _declare(symbols: Symbols, body: tuple[s.Statement, ...]) -> None:
    """Declare the constants and variables of `body` (and of its nested blocks) in source order."""
    for st in body:
        if isinstance(st, s.ConstDecl):
            if st.name in symbols.constants or st.name in symbols.variables:
                raise symbols.error(f"{st.name} is already defined", st)
            symbols.constants[st.name] = symbols.require_word(st.value, "the value of a constant")
        elif isinstance(st, s.VarDecl):
            if st.size is not None:
                size = symbols.require_constant(st.size, "the size of an array")
            elif st.init is not None:
                size = symbols.size(st.init)
            else:
                size = 1
            symbols.declare(st.name, size, st)
        elif isinstance(st, s.If):
            for _, branch in st.branches:
                _declare(symbols, branch)
            _declare(symbols, st.otherwise)
        elif isinstance(st, s.When | s.While | s.For):
            _declare(symbols, st.body)
