"""The `.aesl` XML file: global events with sizes, constants, and one program per node.

Layout: `<network>` holding `<event name size>`, `<constant name value>`, optional `<keywords>`
and `<node name nodeId>` elements whose text is the node's Aseba source.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
import xml.parsers.expat
from dataclasses import dataclass, field

from protocols.aseba.compiler.errors import CompileError
from protocols.aseba.compiler.symbols import EventSpec
from protocols.errors import ProtocolError

#: Largest .aesl file accepted (bytes).
MAX_AESL_BYTES = 1_000_000


#: A piece of a node's text: where it starts in the file (line from 1, column from 0) and its text.
Chunk = tuple[int, int, str]


@dataclass(frozen=True, slots=True)
class NodeProgram:
    """The source written for the node type `name` (and `node_id`, 0 when any).

    `chunks` say where the source's characters are in the .aesl file, for `locate`.
    """

    name: str
    node_id: int
    source: str
    chunks: tuple[Chunk, ...] = field(default=(), compare=False)

    def locate(self, error: CompileError) -> CompileError:
        """`error` with its line and column counted in the .aesl file instead of the node's text."""
        line, column = self.file_position(error.line, error.column)
        return CompileError(error.message, line, column)

    def file_position(self, line: int, column: int) -> tuple[int, int]:
        """The file line and column (from 1) of the source's `line`:`column` (from 1)."""
        lines = self.source.split("\n")
        if not self.chunks or not 1 <= line <= len(lines):
            return line, column
        offset = sum(len(text) + 1 for text in lines[: line - 1]) + column - 1
        start = 0
        for chunk_line, chunk_column, text in self.chunks:
            if offset < start + len(text) or (chunk_line, chunk_column, text) == self.chunks[-1]:
                inside = text[: offset - start]
                newlines = inside.count("\n")
                if newlines:
                    return chunk_line + newlines, len(inside) - inside.rfind("\n")
                return chunk_line, chunk_column + len(inside) + 1
            start += len(text)
        return line, column


@dataclass(frozen=True, slots=True)
class AeslFile:
    """A parsed .aesl file: global `events` (index = id), `constants` and per-node `programs`."""

    events: tuple[EventSpec, ...]
    constants: dict[str, int]
    programs: tuple[NodeProgram, ...]

    def program_for(self, node_name: str, node_id: int) -> NodeProgram:
        """The program for a node: same name and id first, then same name with id 0, then same name."""
        same_name = [p for p in self.programs if p.name == node_name]
        for wanted in (node_id, 0):
            for program in same_name:
                if program.node_id == wanted:
                    return program
        if same_name:
            return same_name[0]
        raise ProtocolError(f"the script has no program for a {node_name!r} node")


def parse_aesl(text: str) -> AeslFile:
    """Parse .aesl `text`; `ProtocolError` when it is not a well-formed Aseba network file."""
    if len(text) > MAX_AESL_BYTES:
        raise ProtocolError(f"the .aesl file is larger than {MAX_AESL_BYTES} bytes")
    if "<!ENTITY" in text:
        raise ProtocolError("the .aesl file declares XML entities, which are not accepted")
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as error:
        raise ProtocolError(f"the .aesl file is not well-formed XML: {error}") from None
    if root.tag != "network":
        raise ProtocolError(f"the .aesl root element is <{root.tag}>, expected <network>")
    events: list[EventSpec] = []
    constants: dict[str, int] = {}
    programs: list[NodeProgram] = []
    positions = iter(_node_text_chunks(text))
    for element in root:
        name = element.get("name", "")
        if element.tag == "event":
            events.append(EventSpec(name, _integer(element.get("size", "0"), f"size of event {name}")))
        elif element.tag == "constant":
            constants[name] = _integer(element.get("value", "0"), f"value of constant {name}")
        elif element.tag == "node":
            node_id = _integer(element.get("nodeId", "0"), f"nodeId of node {name}")
            programs.append(NodeProgram(name, node_id, element.text or "", next(positions, ())))
    return AeslFile(tuple(events), constants, tuple(programs))


def _node_text_chunks(text: str) -> list[tuple[Chunk, ...]]:
    """For each top-level <node> in document order, where the pieces of its text are in the file."""
    parser = xml.parsers.expat.ParserCreate()
    nodes: list[tuple[Chunk, ...]] = []
    depth = 0
    current: list[Chunk] | None = None

    def start(name: str, _attributes: dict[str, str]) -> None:
        nonlocal depth, current
        depth += 1
        if depth == 2 and name == "node":
            current = []

    def end(name: str) -> None:
        nonlocal depth, current
        if depth == 2 and current is not None:
            nodes.append(tuple(current))
            current = None
        depth -= 1

    def characters(data: str) -> None:
        if current is not None and depth == 2:
            current.append((parser.CurrentLineNumber, parser.CurrentColumnNumber, data))

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = characters
    try:
        parser.Parse(text, True)
    except xml.parsers.expat.ExpatError:
        return []  # ElementTree accepted it; positions are then counted in the node's text
    return nodes


def _integer(text: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ProtocolError(f"the {what} is not an integer: {text!r}") from None
    if not -32768 <= value <= 65535:
        raise ProtocolError(f"the {what} does not fit 16 bits: {value}")
    return value - 0x10000 if value > 32767 else value
