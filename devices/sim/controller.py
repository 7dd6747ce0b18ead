"""A simulated controller: moving sticks and buttons on the bus, and LEDs, sound and rumble to command.

It lets the whole path (bus, sessions, servers, supervisor) run before any hardware adapter, and its
fault options (`connect_delay_s`, `fail_after_s`, `command_latency_s`, `failing_commands`) let tests
and demos show reconnects, timeouts and device errors. Its rumble is leased to the client that
started it for its `duration_s` (the core's `gateway.core.lease` rule): it stops when that runs out,
when the client leaves, on estop, on a simulated fault and at shutdown.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from gateway.core.adapter import Adapter, Command
from gateway.core.dispatch import CommandTable
from gateway.core.lease import Lease, LeaseEnd, Leases
from gateway.errors import DeviceError, InvalidArgument
from gateway.messages.common import Time
from gateway.messages.creos import ControllerState
from gateway.messages.generic import Led, Rumble, Sound
from gateway.messages.sim import SimOutputs

log = logging.getLogger(__name__)

AXES = 6
BUTTONS = 17
#: Beyond this lag the generator skips ahead instead of publishing a burst of stale samples.
_MAX_CATCH_UP_S = 0.1


@dataclass(frozen=True, slots=True)
class SimOptions:
    """Config of a `kind = "sim"` device.

    `rate_hz`: ControllerState samples per second. `leds`: number of RGB LEDs.
    `connect_delay_s`: time before it reports connected. `fail_after_s`: raise this long after
    connecting (0: never), to exercise restarts. `command_latency_s`: delay before each command is
    answered. `failing_commands`: command types answered with a device error.
    `block_loop_after_s` / `block_loop_s`: once, this long after connecting, block the whole event
    loop for `block_loop_s` (a hung daemon, for watchdog tests). `state_topics`: each tick publishes
    this many samples together, on `state` and `state/2` … `state/<n>` (as a device with several
    topics per cycle does; the fan-out benchmark's multi-topic scenario).
    """

    rate_hz: float = field(default=100.0, metadata={"min": 0.1, "max": 10000.0})
    leds: int = field(default=1, metadata={"min": 1, "max": 64})
    connect_delay_s: float = field(default=0.0, metadata={"min": 0.0, "max": 3600.0})
    fail_after_s: float = field(default=0.0, metadata={"min": 0.0, "max": 86400.0})
    command_latency_s: float = field(default=0.0, metadata={"min": 0.0, "max": 3600.0})
    failing_commands: tuple[str, ...] = ()
    block_loop_after_s: float = field(default=0.0, metadata={"min": 0.0, "max": 86400.0})
    block_loop_s: float = field(default=0.0, metadata={"min": 0.0, "max": 600.0})
    state_topics: int = field(default=1, metadata={"min": 1, "max": 16})


class SimulatedFault(Exception):
    """The fault that `fail_after_s` injects."""


def controller_state(t: float) -> ControllerState:
    """The simulated pad at time `t` (s): sticks circle, triggers breathe, one button at a time."""
    phase = 2 * math.pi * 0.25 * t
    axes = (
        math.cos(phase),
        math.sin(phase),
        math.cos(phase / 2),
        math.sin(phase / 2),
        0.5 + 0.5 * math.sin(phase),
        0.5 - 0.5 * math.sin(phase),
    )
    pressed = int(t) % BUTTONS
    buttons = tuple([1 if index == pressed else 0 for index in range(BUTTONS)])  # a list: no generator to run
    return ControllerState(Time.from_seconds(t), axes, buttons)


class SimController(Adapter[SimOptions]):
    """Publishes `<id>/state` (ControllerState) at `rate_hz` and `<id>/outputs` on every command."""

    kind = "sim"
    options_class = SimOptions
    publishes = ("creos_messages/ControllerState", "hwgateway/SimOutputs")
    streams: ClassVar[Mapping[str, str]] = {
        "state": "creos_messages/ControllerState",
        "state/*": "creos_messages/ControllerState",
        "outputs": "hwgateway/SimOutputs",
    }

    def __init__(self, ctx: Any, options: SimOptions) -> None:
        super().__init__(ctx, options)
        self._outputs = SimOutputs(leds=((0.0, 0.0, 0.0),) * options.leds)
        #: The rumble's lease (one output, "rumble"), for the command's `duration_s`.
        self.leases: Leases[str, Rumble] = Leases(ctx.device_id, self._on_lease_end, is_safe=_still)

    def capabilities(self) -> Mapping[str, Any]:
        """LED count and the generic outputs it has."""
        return {"leds": self.options.leds, "rumble": True, "sound": True}

    async def run(self) -> None:
        """Connect (after `connect_delay_s`), then publish at `rate_hz` until cancelled or failing."""
        await asyncio.sleep(self.options.connect_delay_s)
        self.ctx.set_status("connected")
        self.ctx.publish("outputs", self._outputs)
        try:
            await self._serve()
        except asyncio.CancelledError:
            self.leases.end_all(LeaseEnd.SHUTDOWN)
            raise
        finally:
            self.leases.end_all(LeaseEnd.DEVICE_LOST)  # a simulated fault; nothing left after a shutdown

    async def _serve(self) -> None:
        period = 1.0 / self.options.rate_hz
        streams = ["state", *(f"state/{index}" for index in range(2, self.options.state_topics + 1))]
        started = next_tick = time.monotonic()
        blocked = False
        while True:
            now = time.monotonic()
            if self.options.fail_after_s and now - started >= self.options.fail_after_s:
                raise SimulatedFault(f"simulated fault after {self.options.fail_after_s} s")
            if self.options.block_loop_s and not blocked and now - started >= self.options.block_loop_after_s:
                blocked = True
                log.warning("blocking the event loop for %s s on purpose", self.options.block_loop_s)
                time.sleep(self.options.block_loop_s)  # noqa: ASYNC251 - the fault being simulated
            if now - next_tick > _MAX_CATCH_UP_S:
                next_tick = now
            # Samples due since the last wake-up go out back to back, so the mean rate is exact.
            while next_tick <= now:
                sampled = time.time()
                state = controller_state(sampled)
                for stream in streams:
                    self.ctx.publish(stream, state, sampled)  # the device's stamp: when it was sampled
                next_tick += period
            await asyncio.sleep(max(next_tick - time.monotonic(), 0.0))

    async def handle_command(self, command: Command) -> Mapping[str, Any] | None:
        """Apply `led`, `sound` or `rumble` to the simulated outputs and publish them."""
        if self.options.command_latency_s:
            await asyncio.sleep(self.options.command_latency_s)
        if command.type in self.options.failing_commands:
            raise DeviceError(f"simulated device fault while handling {command.type!r}")
        outputs: SimOutputs = await self.commands.run(self, command, f"device {self.ctx.device_id!r} (sim)")
        self._set_outputs(replace(outputs, last_command=command.type, commands_received=outputs.commands_received + 1))
        return {"outputs": command.type}

    async def _led(self, command: Command) -> SimOutputs:
        message: Led = command.message
        if message.index >= self.options.leds:
            raise InvalidArgument(
                f"data.index: {message.index} is not an LED of this device (it has {self.options.leds})"
            )
        leds = list(self._outputs.leds)
        for index in range(len(leds)) if message.index < 0 else (message.index,):
            leds[index] = message.rgb
        return replace(self._outputs, leds=tuple(leds))

    async def _sound(self, command: Command) -> SimOutputs:
        message: Sound = command.message
        return replace(self._outputs, sound_frequency_hz=message.frequency_hz)

    async def _rumble(self, command: Command) -> SimOutputs:
        message: Rumble = command.message
        if self.leases.take("rumble", command.client_id, message, term_s=message.duration_s) is None:
            return replace(self._outputs, rumble_low=0.0, rumble_high=0.0)  # no duration or no strength: stopped
        return replace(self._outputs, rumble_low=message.low, rumble_high=message.high)

    async def estop(self) -> None:
        """Silence and stop rumbling at once."""
        self.leases.end_all(LeaseEnd.ESTOP)
        self._stop_rumble()
        self._set_outputs(replace(self._outputs, sound_frequency_hz=0.0, estopped=self._outputs.estopped + 1))

    def release(self, client_id: str) -> None:
        """A rumble is leased to the client that started it: it stops when that client leaves."""
        self.leases.release(client_id)

    async def close(self) -> None:
        """Stop the rumble before the gateway exits."""
        self.leases.end_all(LeaseEnd.SHUTDOWN)
        self._stop_rumble()

    def outputs(self) -> Mapping[str, Any]:
        """Rumble and tone as they are now."""
        out = self._outputs
        return {
            "rumble_low": out.rumble_low,
            "rumble_high": out.rumble_high,
            "sound_frequency_hz": out.sound_frequency_hz,
        }

    def _on_lease_end(self, output: str, lease: Lease[Rumble], why: LeaseEnd) -> None:
        """The rumble's lease ended (its duration is up, among others): the motors stop."""
        self._stop_rumble()

    def _stop_rumble(self) -> None:
        if self._outputs.rumble_low or self._outputs.rumble_high:
            self._set_outputs(replace(self._outputs, rumble_low=0.0, rumble_high=0.0))

    def _set_outputs(self, outputs: SimOutputs) -> None:
        self._outputs = outputs
        self.ctx.publish("outputs", outputs)

    #: Every command the simulated controller takes, and its handler.
    commands: ClassVar[CommandTable[SimController, Command]] = CommandTable(
        {"led": _led, "sound": _sound, "rumble": _rumble}
    )
    accepts = commands.types()


def _still(rumble: Rumble) -> bool:
    """No strength or no duration: the motors' safe value."""
    return rumble.duration_s <= 0 or not (rumble.low or rumble.high)
