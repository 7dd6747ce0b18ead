"""The command table (`gateway.core.dispatch.CommandTable`): one list of handlers, `accepts` derived from it."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from devices.lego.adapter import LegoHubAdapter
from gateway.core.adapter import Command
from gateway.core.dispatch import CommandTable
from gateway.errors import UnknownCommand


class Lamp:
    """A device with two commands, in the shape adapters declare them."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def _on(self, command: Command) -> dict[str, Any]:
        self.calls.append(("on", command.message))
        return {"on": True}

    async def _blink(self, command: Command) -> None:
        self.calls.append(("blink", command.message))

    commands: ClassVar[CommandTable[Lamp, Command]] = CommandTable({"lamp/On": _on, "lamp/Blink": _blink})
    accepts = commands.types()


async def test_each_type_runs_its_own_handler_and_returns_its_result() -> None:
    lamp = Lamp()
    assert await Lamp.commands.run(lamp, Command("lamp/On", 1, "c1", 0.0)) == {"on": True}
    assert await Lamp.commands.run(lamp, Command("lamp/Blink", 2, "c1", 0.0)) is None
    assert lamp.calls == [("on", 1), ("blink", 2)]


async def test_a_type_not_in_the_table_is_an_unknown_command_naming_the_device() -> None:
    with pytest.raises(UnknownCommand, match=r"^device 'lamp' \(lamp\) does not accept 'lamp/Off'$"):
        await Lamp.commands.run(Lamp(), Command("lamp/Off", None, "c1", 0.0), "device 'lamp' (lamp)")


def test_accepts_is_the_table_in_order_less_the_simulator_only_types() -> None:
    assert Lamp.accepts == ("lamp/On", "lamp/Blink")
    assert Lamp.commands.types("lamp/Blink") == ("lamp/On",)
    # An adapter: its accepts and its handlers are one list; the simulated hub's button is extra.
    assert LegoHubAdapter.accepts == LegoHubAdapter.commands.types("hwgateway/SimButton")
    assert "hwgateway/SimButton" not in LegoHubAdapter.accepts
