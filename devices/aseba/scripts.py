"""Scripts for LoadScript: find a .aesl file inside the configured folders, compile it for a node.

Only files inside one of the `script_folders` (after resolving symbolic links and `..`) are
loaded; anything else is refused with `InvalidArgument`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gateway.errors import InvalidArgument
from protocols.aseba.compiler import AeslFile, CompiledScript, CompileError, compile_script, parse_aesl
from protocols.aseba.description import NodeDescription
from protocols.errors import ProtocolError


def resolve_script(file_name: str, folders: tuple[str, ...]) -> Path:
    """The file `file_name` names inside one of `folders` (first match); `InvalidArgument` otherwise."""
    if not folders:
        raise InvalidArgument("data.file_name: no script_folders are configured for this device")
    if not file_name:
        raise InvalidArgument("data.file_name: empty")
    for folder in folders:
        base = Path(folder).resolve()
        candidate = (base / file_name).resolve()
        if candidate.is_relative_to(base) and candidate.is_file():
            return candidate
    raise InvalidArgument(f"data.file_name: {file_name!r} is not a file inside the script folders")


@dataclass(frozen=True, slots=True)
class Script:
    """A parsed .aesl file and the constant values the request overrides."""

    name: str
    aesl: AeslFile
    overrides: dict[str, int]

    @classmethod
    def read(cls, path: Path, overrides: dict[str, int]) -> Script:
        """Read and parse the .aesl file at `path`; `InvalidArgument` when it is malformed."""
        try:
            aesl = parse_aesl(path.read_text(encoding="utf-8"))
        except (ProtocolError, UnicodeDecodeError) as error:
            raise InvalidArgument(f"data.file_name: {path.name}: {error}") from None
        return cls(path.name, aesl, overrides)

    def compile_for(self, description: NodeDescription, node_id: int) -> CompiledScript:
        """Compile the program for this node; `InvalidArgument` with file:line:column when it is wrong.

        Lines and columns count in the .aesl file, not in the node's program text.
        """
        try:
            program = self.aesl.program_for(description.name, node_id)
        except ProtocolError as error:
            raise InvalidArgument(f"data.file_name: {self.name}: {error}") from None
        try:
            constants = {**self.aesl.constants, **self.overrides}
            return compile_script(program.source, description, self.aesl.events, constants)
        except CompileError as error:
            located = program.locate(error)
            raise InvalidArgument(
                f"data.file_name: {self.name}:{located.line}:{located.column}: {located.message}"
            ) from None
        except ProtocolError as error:
            raise InvalidArgument(f"data.file_name: {self.name}: {error}") from None
