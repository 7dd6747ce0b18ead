"""Compile one Aseba script against a node description: declarations, then code generation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from protocols.aseba.bytecode import Assembler, Op
from protocols.aseba.compiler import syntax as s
from protocols.aseba.compiler.codegen import CodeGenerator
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
    """Compile `source` for the node `description`; `CompileError` (line:column) when it is wrong."""
    program = parse(source)
    symbols = Symbols.create(description, events, constants or {})
    _check_events(symbols)
    for section in program.sections:
        _declare(symbols, section.body)
    asm = Assembler()
    CodeGenerator(symbols, asm).program(program)
    try:
        bytecode = asm.assemble()
    except ProtocolError as error:
        raise CompileError(f"program too large: {error}", 1, 1) from None
    depth = stack_depth(bytecode) + (1 if any(section.kind == "sub" for section in program.sections) else 0)
    if depth > description.stack_size:
        raise CompileError(
            f"program needs {depth} words of stack, node {description.name} has {description.stack_size}", 1, 1
        )
    if len(bytecode) > description.bytecode_size:
        raise CompileError(
            f"program needs {len(bytecode)} words of bytecode, node {description.name} has {description.bytecode_size}",
            1,
            1,
        )
    return CompiledScript(bytecode, dict(symbols.script_variables), symbols.events, dict(symbols.constants))


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
_LENGTH = {Op.LARGE_IMMEDIATE: 2, Op.LOAD_INDIRECT: 2, Op.STORE_INDIRECT: 2, Op.CONDITIONAL_BRANCH: 2, Op.EMIT: 3}


def stack_depth(bytecode: tuple[int, ...]) -> int:
    """Most words the generated code keeps on the stack (words), subroutine return addresses aside.

    Every statement leaves the stack as it found it, so a linear scan suffices: a native call
    consumes everything its statement pushed.
    """
    depth = deepest = 0
    position = bytecode[0] if bytecode else 0
    while position < len(bytecode):
        op = bytecode[position] >> 12
        if op in (Op.STOP, Op.SUB_RET, Op.NATIVE_CALL):
            depth = 0
        else:
            depth += _STACK_EFFECT.get(Op(op), 0)
        deepest = max(deepest, depth)
        position += _LENGTH.get(Op(op), 1)
    return deepest


def _check_events(symbols: Symbols) -> None:
    names: set[str] = set()
    for event in symbols.events:
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
            symbols.constants[st.name] = symbols.require_constant(st.value, "the value of a constant")
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
