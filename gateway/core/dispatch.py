"""A device's commands as one table: message type → handler, from which its `accepts` derives.

An adapter lists its handlers once, at the end of its class body, where its methods are defined:

    commands = CommandTable({"led": _led, "hwgateway/LegoMotorSpeed": _motor_speed})
    accepts = commands.types()

and its `handle_command` is `return await self.commands.run(self, command)`. A type the table does
not hold answers `unknown_command` naming the device's kind.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from gateway.errors import UnknownCommand


class _Typed(Protocol):
    """A command, as far as the table needs it: its message type."""

    @property
    def type(self) -> str:
        """The bus message type or generic command name."""


SelfT = TypeVar("SelfT")
CommandT = TypeVar("CommandT", bound=_Typed)
#: `handler(adapter, command)`: carry out one command; its result goes to the adapter's caller.
Handler = Callable[[SelfT, CommandT], Awaitable[Any]]


class CommandTable(Generic[SelfT, CommandT]):
    """The handlers of one adapter class, by message type, in the order they are listed."""

    def __init__(self, handlers: Mapping[str, Handler[SelfT, CommandT]]) -> None:
        self._handlers = dict(handlers)

    def types(self, *without: str) -> tuple[str, ...]:
        """The message types handled, in table order, less `without` (e.g. simulator-only commands)."""
        return tuple(name for name in self._handlers if name not in without)

    async def run(self, adapter: SelfT, command: CommandT, kind: str = "this device") -> Any:
        """Carry out `command` on `adapter` with its type's handler; `UnknownCommand` when it has none."""
        handler = self._handlers.get(command.type)
        if handler is None:
            raise UnknownCommand(f"{kind} does not accept {command.type!r}")
        return await handler(adapter, command)
