"""What every TDM client of one gateway shares: groups (shared events and variables) and scratchpads.

As in Mobsya's TDM, a node belongs to one group, which holds the events programs on its nodes may
use (RegisterEvents on the node or the group; the compiler takes them as the program's global
events) and the shared variables apps keep there (SetVariables on the group id: a name -> values
store, not VM memory). A node is alone in its group unless `[tdm] groups` puts it in one: each
pattern there is a group of every device it matches (the first pattern that matches wins).
Scratchpads are the code text apps broadcast for a node (VPL3 sends one before each run), kept for
every client and across reconnections until deleted. Each change is pushed to the sessions watching
it (`Watcher`). Watched nodes' variables are read once a period for all the sessions watching them
(`VariablePolls`).
"""

from __future__ import annotations

import fnmatch
import uuid
from dataclasses import dataclass, field
from typing import Protocol

from gateway.faces.tdm import nodes
from gateway.faces.tdm.variables import VariablePolls
from protocols.tdm.messages import EventDefinition

#: Most scratchpads kept (a client past it is refused), and most shared variables in one group.
MAX_SCRATCHPADS = 1024
MAX_SHARED_VARIABLES = 1024
_NAMESPACE = uuid.UUID("5d7f3b0e-2a41-4c8e-9b6d-1f0a7c3e5b29")


@dataclass
class Group:
    """One group: its 16-byte `id`, registered `events` and shared `variables` (name -> 16-bit words)."""

    id: bytes
    events: tuple[EventDefinition, ...] = ()
    variables: dict[str, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Scratchpad:
    """A scratchpad as last sent: its id, the node and group it belongs to, language, text and name."""

    id: bytes
    node_id: bytes
    group_id: bytes
    language: int
    text: str
    name: str


class Watcher(Protocol):
    """A session told about shared changes (it sends them on to its client when it watches them)."""

    def group_events_changed(self, group: Group) -> None:
        """The group's registered events changed."""

    def shared_variables_changed(self, group: Group) -> None:
        """The group's shared variables changed."""

    def scratchpad_changed(self, scratchpad: Scratchpad, deleted: bool) -> None:
        """A scratchpad was created, updated or deleted."""


class TdmShared:
    """The groups and scratchpads of one TDM face, and the sessions to tell about their changes."""

    def __init__(self, group_patterns: tuple[str, ...] = ()) -> None:
        """`group_patterns`: device-id glob patterns, each one group (`[tdm] groups`)."""
        self._patterns = group_patterns
        self._groups: dict[bytes, Group] = {}
        self.scratchpads: dict[bytes, Scratchpad] = {}
        self.watchers: set[Watcher] = set()
        #: The reads of watched nodes' variables, one per node and period for every session.
        self.polls = VariablePolls()

    def group_id(self, device: str) -> bytes:
        """The id of `device`'s group: its pattern's, or its own when no pattern matches."""
        for pattern in self._patterns:
            if fnmatch.fnmatchcase(device, pattern):
                return uuid.uuid5(_NAMESPACE, f"group/{pattern}").bytes
        return nodes.group_id(device)

    def group(self, group_id: bytes) -> Group:
        """The group `group_id` (created empty on first use)."""
        found = self._groups.get(group_id)
        if found is None:
            found = self._groups[group_id] = Group(group_id)
        return found

    def set_events(self, group: Group, events: tuple[EventDefinition, ...]) -> None:
        """Replace the group's registered events and tell every watcher."""
        group.events = events
        for watcher in list(self.watchers):
            watcher.group_events_changed(group)

    def set_variables(self, group: Group, values: dict[str, tuple[int, ...]]) -> None:
        """Replace the group's shared variables (as thymio-api's `IGroup.setVariables` does) and tell every watcher."""
        if len(values) > MAX_SHARED_VARIABLES:
            raise ValueError(f"more than {MAX_SHARED_VARIABLES} shared variables in one group")
        group.variables = dict(values)
        for watcher in list(self.watchers):
            watcher.shared_variables_changed(group)

    def update_scratchpad(self, scratchpad: Scratchpad, deleted: bool) -> None:
        """Create, update or delete (`deleted`) a scratchpad and tell every watcher."""
        if deleted:
            self.scratchpads.pop(scratchpad.id, None)
        else:
            if scratchpad.id not in self.scratchpads and len(self.scratchpads) >= MAX_SCRATCHPADS:
                raise ValueError(f"more than {MAX_SCRATCHPADS} scratchpads")
            self.scratchpads[scratchpad.id] = scratchpad
        for watcher in list(self.watchers):
            watcher.scratchpad_changed(scratchpad, deleted)
