"""A binding shown as a device: in `list_devices`, on the bus (`<name>/status`), paused and resumed by command.

Each binding runs as a supervised device of kind `binding` (`Supervisor.add`), so every face shows
it and controls it with what it already has: `list_devices` lists it with its status in
`capabilities`, `describe` documents its types, its status is published on `<name>/status`
(`hwgateway/BindingStatus`), and the commands `hwgateway/BindingPause` and `hwgateway/BindingResume`
pause and resume it. Its `estop` halts it (STOP ALL; the router's arbiter halted it first), its
removal (`close`) sends its safe output, confirmed, before its leases and claims go (a removal's
e-stop only pauses it: STOP ALL made the targets safe themselves, a removal does not).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from gateway.bindings.engine import BindingRuntime, RouterLike, RuntimeSettings, TickEvaluator
from gateway.bus import Bus
from gateway.core.adapter import Adapter, Command, DeviceContext
from gateway.errors import UnknownCommand
from gateway.messages import to_plain

KIND = "binding"
PAUSE = "hwgateway/BindingPause"
RESUME = "hwgateway/BindingResume"


@dataclass(frozen=True, slots=True)
class BindingParts:
    """What a binding device is built from: its settings, its evaluator, the command path and the bus."""

    settings: RuntimeSettings
    evaluator: TickEvaluator
    router: RouterLike
    bus: Bus
    #: The binding's own config table as plain data, shown in `capabilities`.
    spec: Mapping[str, Any]


class BindingDevice(Adapter[BindingParts]):
    """One binding as a device (see the module's docstring)."""

    kind = KIND
    options_class = BindingParts
    publishes = ("hwgateway/BindingStatus",)
    streams: ClassVar[Mapping[str, str]] = {"status": "hwgateway/BindingStatus"}
    accepts = (PAUSE, RESUME)

    def __init__(self, ctx: DeviceContext, options: BindingParts) -> None:
        super().__init__(ctx, options)
        self.runtime = BindingRuntime(
            options.settings,
            options.evaluator,
            options.router,
            options.bus,
            lambda status: ctx.publish("status", status),
        )
        self._removed = False
        #: Set by `Bindings.remove` before the supervisor retires it: its e-stop is then no STOP ALL.
        self.leaving = False

    def capabilities(self) -> Mapping[str, Any]:
        """The binding's config and its status now (what the dashboard and `list_devices` show)."""
        return {"binding": dict(self.options.spec), "status": to_plain(self.runtime.status())}

    async def run(self) -> None:
        """Run the binding until cancelled (the supervisor restarts it if it fails)."""
        self.ctx.set_status("connected")
        await self.runtime.run()

    async def handle_command(self, command: Command) -> Mapping[str, Any]:
        """Pause or resume; answer the status."""
        if command.type == PAUSE:
            self.runtime.pause()
        elif command.type == RESUME:
            self.runtime.resume()
        else:
            raise UnknownCommand(f"a binding accepts {PAUSE} and {RESUME}, not {command.type!r}")
        return to_plain(self.runtime.status())

    async def estop(self) -> None:
        """STOP ALL (and the shutdown's estop): halt at once, until resumed.

        Removed or reloaded (`leaving`), only the binding is e-stopped, not the devices it drives:
        it stops driving at once and owes them its safe output, which `close` sends and confirms.
        """
        if self.leaving:
            self.runtime.pause()
            return
        self.runtime.on_stop_all()

    async def close(self) -> None:
        """Removed, reloaded or shut down: the safe output (unless STOP ALL stopped the outputs), then release."""
        if self._removed:
            return
        self._removed = True
        await self.runtime.finish()

    def outputs(self) -> Mapping[str, Any]:
        """The command last sent to a target, driving or safe; nothing of its own once STOP ALL halted it.

        STOP ALL (and the e-stop that starts a shutdown) halts a binding without a safe output of its
        own: its targets' e-stop is their safe state, so what the binding sent before is not what
        they output now, and the shutdown log must not show it as such.
        """
        runtime = self.runtime
        output = runtime.delivery.last_sent
        if output is None or runtime.stopped:
            return {}
        return {"device": output.device, "type": output.type, "data": output.data}

    def unconfirmed_safe_state(self) -> str | None:
        """Why the binding's safe output is unconfirmed (a device that never answered it), else None."""
        if self.runtime.delivery.safe_pending:
            return f"the safe output was not confirmed: {self.runtime.delivery.safe_problem or 'no answer'}"
        return None
