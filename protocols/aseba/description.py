"""Assembling a node description from its frames, and reassembling split `Variables` replies."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from protocols.aseba.messages import (
    Description,
    LocalEventDescription,
    NamedVariableDescription,
    NativeFunctionDescription,
)
from protocols.errors import ProtocolError

#: Id of the first local event; the i-th local event has id LOCAL_EVENT_BASE - i.
LOCAL_EVENT_BASE = 0xFFFE


@dataclass(frozen=True, slots=True)
class Variable:
    """A named variable: `address` and `size` in 16-bit words."""

    name: str
    address: int
    size: int


@dataclass(frozen=True, slots=True)
class NodeDescription:
    """A node's complete description, with the address of every named variable computed.

    Sizes are in 16-bit words. `variables` maps names to `Variable`; `local_events` are in id order
    (id = 0xFFFE - index); `natives` in native index order.
    """

    name: str
    protocol_version: int
    bytecode_size: int
    stack_size: int
    variables_size: int
    variables: dict[str, Variable]
    local_events: tuple[LocalEventDescription, ...]
    natives: tuple[NativeFunctionDescription, ...]

    @property
    def user_data_start(self) -> int:
        """First address after the named variables (where a program's own variables go)."""
        return max((v.address + v.size for v in self.variables.values()), default=0)

    def variable(self, name: str) -> Variable:
        """The variable `name`; `KeyError` naming the known ones when absent."""
        try:
            return self.variables[name]
        except KeyError:
            raise KeyError(f"node {self.name!r} has no variable {name!r}") from None

    def native_index(self, name: str) -> int:
        """The index of native function `name` in this node's table; `KeyError` when absent."""
        for index, native in enumerate(self.natives):
            if native.name == name:
                return index
        raise KeyError(f"node {self.name!r} has no native function {name!r}")

    def local_event_id(self, name: str) -> int:
        """The id of local event `name`; `KeyError` when absent."""
        for index, event in enumerate(self.local_events):
            if event.name == name:
                return LOCAL_EVENT_BASE - index
        raise KeyError(f"node {self.name!r} has no local event {name!r}")


_PartT = TypeVar("_PartT", NamedVariableDescription, LocalEventDescription, NativeFunctionDescription)
DescriptionPart = Description | NamedVariableDescription | LocalEventDescription | NativeFunctionDescription


@dataclass(slots=True)
class DescriptionAssembler:
    """Collects one node's description frames: `add` each; `result()` once `complete`."""

    header: Description | None = None
    variables: list[NamedVariableDescription] = field(default_factory=list)
    events: list[LocalEventDescription] = field(default_factory=list)
    natives: list[NativeFunctionDescription] = field(default_factory=list)

    def add(self, part: DescriptionPart) -> None:
        """Add one frame; a new `Description` header restarts the assembly (the node sent it again)."""
        if isinstance(part, Description):
            self.header = part
            self.variables.clear()
            self.events.clear()
            self.natives.clear()
            return
        if self.header is None:
            raise ProtocolError(f"{type(part).__name__} arrived before the node's Description")
        if isinstance(part, NamedVariableDescription):
            self._append(self.variables, part, self.header.named_variable_count, "named variables")
        elif isinstance(part, LocalEventDescription):
            self._append(self.events, part, self.header.local_event_count, "local events")
        else:
            self._append(self.natives, part, self.header.native_function_count, "native functions")

    @staticmethod
    def _append(parts: list[_PartT], part: _PartT, count: int, what: str) -> None:
        if len(parts) >= count:
            raise ProtocolError(f"node sent more {what} than the {count} its Description announced")
        parts.append(part)

    @property
    def complete(self) -> bool:
        """True when every frame the header announced has arrived."""
        header = self.header
        return (
            header is not None
            and len(self.variables) == header.named_variable_count
            and len(self.events) == header.local_event_count
            and len(self.natives) == header.native_function_count
        )

    def result(self) -> NodeDescription:
        """The assembled description; raise `ProtocolError` if incomplete or inconsistent."""
        header = self.header
        if header is None or not self.complete:
            raise ProtocolError("node description is incomplete")
        variables: dict[str, Variable] = {}
        address = 0
        for part in self.variables:
            variables[part.name] = Variable(part.name, address, part.size)
            address += part.size
        if address > header.variables_size:
            raise ProtocolError(f"named variables take {address} words, more than the node's {header.variables_size}")
        return NodeDescription(
            header.name,
            header.protocol_version,
            header.bytecode_size,
            header.stack_size,
            header.variables_size,
            variables,
            tuple(self.events),
            tuple(self.natives),
        )


class VariablesReassembly:
    """Collects the `Variables` frames answering one GetVariables(start, length).

    A real Thymio splits a reply into frames of at most 47 words, each with its own start address;
    frames outside the requested range (another client's request) are ignored.
    """

    def __init__(self, start: int, length: int) -> None:
        self.start = start
        self.length = length
        self._values: list[int | None] = [None] * length

    def add(self, start: int, values: tuple[int, ...]) -> None:
        """Store the words of one Variables frame that fall inside the requested range."""
        for offset, value in enumerate(values):
            index = start + offset - self.start
            if 0 <= index < self.length:
                self._values[index] = value

    @property
    def complete(self) -> bool:
        """True when every requested word has arrived."""
        return all(value is not None for value in self._values)

    def values(self) -> tuple[int, ...]:
        """The requested words; raise `ProtocolError` while some are missing."""
        if not self.complete:
            missing = sum(value is None for value in self._values)
            raise ProtocolError(f"{missing} of {self.length} words are missing from the Variables reply")
        return tuple(value for value in self._values if value is not None)
