"""The Aseba language compiler: source (or a .aesl file) to bytecode for one node description.

`compile_script(source, description, events, constants)` returns a `CompiledScript`;
`parse_aesl(text)` reads a .aesl file; errors are `CompileError` with `line` and `column`.
"""

from protocols.aseba.compiler.aesl import AeslFile, NodeProgram, parse_aesl
from protocols.aseba.compiler.errors import CompileError
from protocols.aseba.compiler.listing import listing
from protocols.aseba.compiler.program import CompiledScript, compile_script
from protocols.aseba.compiler.symbols import EventSpec

__all__ = [
    "AeslFile",
    "CompileError",
    "CompiledScript",
    "EventSpec",
    "NodeProgram",
    "compile_script",
    "listing",
    "parse_aesl",
]
