"""The `.aesl` XML file: global events with sizes, constants, and one program per node.

Layout: `<network>` holding `<event name size>`, `<constant name value>`, optional `<keywords>`
and `<node name nodeId>` elements whose text is the node's Aseba source.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass

from protocols.aseba.compiler.symbols import EventSpec
from protocols.errors import ProtocolError

#: Largest .aesl file accepted (bytes).
MAX_AESL_BYTES = 1_000_000


@dataclass(frozen=True, slots=True)
class NodeProgram:
    """The source written for the node type `name` (and `node_id`, 0 when any)."""

    name: str
    node_id: int
    source: str


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
    for element in root:
        name = element.get("name", "")
        if element.tag == "event":
            events.append(EventSpec(name, _integer(element.get("size", "0"), f"size of event {name}")))
        elif element.tag == "constant":
            constants[name] = _integer(element.get("value", "0"), f"value of constant {name}")
        elif element.tag == "node":
            node_id = _integer(element.get("nodeId", "0"), f"nodeId of node {name}")
            programs.append(NodeProgram(name, node_id, element.text or ""))
    return AeslFile(tuple(events), constants, tuple(programs))


def _integer(text: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ProtocolError(f"the {what} is not an integer: {text!r}") from None
    if not -32768 <= value <= 65535:
        raise ProtocolError(f"the {what} does not fit 16 bits: {value}")
    return value - 0x10000 if value > 32767 else value
