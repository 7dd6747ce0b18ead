"""One binding at run time: its source on the bus, its output timer, its safety and its status.

`BindingRuntime.run` is the binding's task. It watches the source (`SourceWatch`: the newest sample
per stream and its arrival time) and, on a timer of its own at `rate_hz`, evaluates the newest input
once (`TickEvaluator.output`, the pure part of `gateway.bindings`) and sends the result through
the gateway's command path (`Delivery`: latest value only, under the binding's holder id, so the
arbiter's priorities and the adapters' leases apply as to any client). Button actions go out as
their samples arrive (`TickEvaluator.actions`).

Safety does not depend on the source. The binding stops driving when:

- the deadman input is released (`deadman = "none"` states there is none);
- the newest source sample is older than `timeout_s` (a stalled source: judged on the sample's
  arrival, never on repeats);
- the source device is lost (its availability leaves "connected"; at once, not at the next tick);
- it is paused from the API, removed or reloaded (`BindingRuntime.finish`);

and each time it owes ONE safe output (the evaluator's `safe_output`: zero speed), re-sent every
tick until the command path confirms it (`Delivery`), and never sent over another source that
drives the output meanwhile (the arbiter refuses it: `safe=True`). STOP ALL (`on_stop_all`, called
synchronously by the router's estop before any adapter's) halts it at once: the estop itself is
the safe output, nothing of the binding follows it, and the binding stays stopped until resumed
(`resume`), then drives again only once its deadman has been released and pressed anew. At
gateway shutdown the supervisor's estop and the adapters' shutdown leases put the targets in
their safe state; the router refuses the binding's commands from the first moment of the stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from gateway.bindings.delivery import CommandPath, Delivery, DeviceCommand
from gateway.bindings.source import SourceWatch
from gateway.bus import Bus
from gateway.core.arbitration import Arbiter
from gateway.errors import GatewayError, Locked
from gateway.messages.binding import BindingStatus

log = logging.getLogger(__name__)

#: Seconds between status publications while nothing but the input age changes.
STATUS_PERIOD_S = 0.2
#: Seconds a removed binding may spend confirming its safe output before its leases are released anyway.
FINISH_DEADLINE_S = 2.0


@dataclass(frozen=True, slots=True)
class TickResult:
    """One output tick: the commands to send, whether the deadman is held, whether an output was clamped.

    `stop_reason`: why the evaluator itself gives the safe output this tick ("deadman released",
    "timeout"; "" when it drives).
    """

    commands: Sequence[DeviceCommand]
    deadman_held: bool
    clamped: bool = False
    stop_reason: str = ""


@dataclass(frozen=True, slots=True)
class Fired:
    """A button action that fired: a command to send, or the binding set to switch to."""

    command: DeviceCommand | None = None
    switch_set: str = ""


class TickEvaluator(Protocol):
    """The pure part of a binding as the runtime uses it (`gateway.bindings.evaluation` adapts the evaluator)."""

    def output(self, latest: Mapping[str, Any], sample_age_s: float | None, now_s: float) -> TickResult:
        """The commands of this tick from the newest message per stream, its age (s) and a monotonic time (s)."""

    def actions(self, latest: Mapping[str, Any], sample_age_s: float | None, now_s: float) -> Sequence[Fired]:
        """The button actions that fire now (press, release, double, toggle, thresholds; hold without a sample)."""

    def deadman_held(self, latest: Mapping[str, Any]) -> bool:
        """True when the newest message per stream holds the deadman (or the binding has none)."""

    def safe_output(self) -> Sequence[DeviceCommand]:
        """The one safe output (zero speed); driving starts again from it (the slew limiters are reset)."""


@dataclass(frozen=True, slots=True)
class RuntimeSettings:
    """What the runtime needs of a binding's spec.

    `holder`: the id its commands carry (leases, arbitration); `streams`: the source streams its
    inputs read; `rate_hz`: output rate; `timeout_s`: the oldest sample it drives from;
    `priority` (and `target_priorities` per device): its arbitration priority; `deadman`: False
    when the binding states `deadman = "none"` (no re-arm needed after a resume).
    """

    name: str
    source: str
    streams: frozenset[str]
    rate_hz: float
    timeout_s: float
    priority: int
    target_priorities: Mapping[str, int] = field(default_factory=dict)
    deadman: bool = True

    @property
    def holder(self) -> str:
        """The holder id of the binding's commands."""
        return f"binding:{self.name}"

    @property
    def period_s(self) -> float:
        """One output period (s)."""
        return 1.0 / self.rate_hz


class RouterLike(CommandPath, Protocol):
    """What the runtime needs of the command router: the command path, the arbiter and device availability."""

    arbiter: Arbiter

    def status_of(self, device_id: str) -> str | None:
        """A device's availability ("connected", ...), None when there is no such device."""


class BindingRuntime:
    """One binding's task, state and status (see the module's docstring)."""

    def __init__(
        self,
        settings: RuntimeSettings,
        evaluator: TickEvaluator,
        router: RouterLike,
        bus: Bus,
        publish: Callable[[BindingStatus], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.evaluator = evaluator
        self._router = router
        self._bus = bus
        self._publish = publish
        self._clock = clock
        self._wake = asyncio.Event()
        self.source = SourceWatch(
            settings.name,
            settings.source,
            settings.streams,
            router.status_of,
            clock,
            on_lost=self._wake.set,
            on_sample=self._on_sample,
        )
        self.delivery = Delivery(settings.holder, router, max(settings.period_s * 4, 0.25), self._on_refused)
        self.paused = False
        self.stopped = False  # by STOP ALL, until resumed
        self._rearm = False  # after a resume: the deadman must be released once first
        self._driving = False
        self._yielded_until = -math.inf
        self._running = False
        self.state = "idle"
        self.reason = "not started"
        self.deadman_held = False
        self.clamped = False
        self.last_output: DeviceCommand | None = None
        self._published_at = -math.inf
        self._published: tuple[object, ...] = ()
        self.ticks = 0
        #: Called with a binding set's name when an action switches sets (the binding set's manager).
        self.on_switch_set: Callable[[str], None] | None = None
        #: Why the binding is held off by its set ("" while its set is active).
        self.set_inactive = ""
        arbiter = router.arbiter
        arbiter.register(
            settings.holder, settings.priority, settings.timeout_s + 2 * settings.period_s, settings.target_priorities
        )
        arbiter.on_stop_all.append(self.on_stop_all)

    # -- the task --------------------------------------------------------------------------

    async def run(self) -> None:
        """Watch the source and output on the timer until cancelled."""
        loop = asyncio.get_running_loop()
        period = self.settings.period_s
        self.source.attach(self._bus)
        self._running = True
        self.reason = "no source sample yet"
        try:
            due = loop.time()
            while True:
                now = loop.time()
                if now >= due:
                    self.tick(self._clock())
                    due += period
                    if due <= now:  # late (a busy loop): skip the missed ticks, never catch up in a burst
                        due = now + period - (now - due) % period
                else:  # woken early (the source was lost): the safety part of a tick only
                    self.tick(self._clock(), timed=False)
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout_at(due):
                        await self._wake.wait()
        finally:
            self._running = False
            self.source.detach()

    def tick(self, now: float, timed: bool = True) -> None:
        """One output tick at `now` (clock s): drive from the newest input, or owe and pump the safe output.

        An untimed tick (a wake-up between two timed ones) only stops driving when it must: the
        outputs keep their fixed rate.
        """
        self.ticks += timed
        if self.stopped:
            self._stand("stopped", "STOP ALL", now)
            return
        reason, result = self._judge(now)
        if reason:
            self._stop_driving()
            self.delivery.pump()
            settled = "paused" if self.paused else "idle"
            self._stand("safing" if self.delivery.safe_pending else settled, reason, now)
            return
        assert result is not None
        if not timed:
            return
        if not self._driving:
            self.delivery.cancel_safe()  # driving again supersedes a safe output not yet confirmed
            self._driving = True
        self.clamped = result.clamped
        for command in result.commands:
            if self.delivery.drive(command):
                self.last_output = command
        self._fire(self.evaluator.actions(self.source.latest, self.source.age(now), now))
        yielded = now < self._yielded_until
        self._stand("yielded" if yielded else "active", "a source of higher priority drives" if yielded else "", now)

    def _judge(self, now: float) -> tuple[str, TickResult | None]:
        """Why the binding must not drive now ("" when it may), and this tick's evaluation when it may."""
        if self.paused:
            return "paused", None
        if self.set_inactive:
            return self.set_inactive, None
        if not self.source.latest:
            return "no source sample yet", None
        if not self.source.connected():
            return f"source {self.source.device} lost", None
        age = self.source.age(now)
        if age is not None and age > self.settings.timeout_s:
            return f"source silent for {age:.3f} s (timeout {self.settings.timeout_s:g} s)", None
        try:
            result = self.evaluator.output(self.source.latest, age, now)
        except Exception as error:  # a bug must end in the safe output, not in a task that never sends it
            log.exception("binding %s: evaluating its inputs failed", self.settings.name)
            return f"evaluation failed: {type(error).__name__}", None
        self.deadman_held = result.deadman_held
        if self._rearm:
            if result.deadman_held:
                return "resumed: release and press the deadman", None
            self._rearm = False
        if result.stop_reason or not result.deadman_held:
            return result.stop_reason or "deadman released", None
        return "", result

    def _stop_driving(self) -> None:
        """Owe the safe output if the binding drove; the slew limiters start from it next time."""
        if self._driving:
            self._driving = False
            safe = list(self.evaluator.safe_output())
            self.delivery.begin_safe(safe)
            if safe:
                self.last_output = safe[-1]  # the status's last output from now: no driving value stays shown

    def _on_sample(self, stream: str, message: Any) -> None:
        """A new source sample: its button actions go out now (not when halted or paused)."""
        if self.stopped or self.paused or not self._running:
            return
        if self._rearm and not self.evaluator.deadman_held(self.source.latest):
            # A release counts in any sample after the resume, not only in the one a tick reads:
            # a release shorter than an output period is still a release.
            self._rearm = False
        now = self._clock()
        try:
            fired = self.evaluator.actions(self.source.latest, self.source.age(now), now)
        except Exception:  # a bug in one binding's actions must not stop the bus's delivery
            log.exception("binding %s: its actions failed on a sample", self.settings.name)
            return
        self._fire(fired)

    def _fire(self, fired: Sequence[Fired]) -> None:
        for action in fired:
            if action.command is not None:
                self.delivery.drive(action.command)
            elif action.switch_set and self.on_switch_set is not None:
                self.on_switch_set(action.switch_set)

    def _on_refused(self, command: DeviceCommand, error: GatewayError) -> None:
        """A driving command was refused: by a source of higher priority (yield), or by the device."""
        if isinstance(error, Locked):
            # Another holder owns the output now: the safe output is its business, not ours.
            self._yielded_until = self._clock() + 2 * self.settings.period_s
            if self._driving:
                self._driving = False
                self.evaluator.safe_output()  # only to restart the slew limiters from the safe values
        elif not self.stopped:
            log.debug("binding %s: %s on %s refused: %s", self.settings.name, command.type, command.device, error)

    # -- control ----------------------------------------------------------------------------

    def on_stop_all(self) -> None:
        """STOP ALL: halt at once (synchronous); the estop was the safe output, nothing follows it."""
        self.stopped = True
        self._driving = False
        self.delivery.cancel_safe()
        self.evaluator.safe_output()  # only to restart the slew limiters from the safe values
        self._stand("stopped", "STOP ALL", self._clock())

    def hold_off(self, reason: str) -> None:
        """Keep the binding from driving for `reason` (its binding set is not active); "" lets it drive again."""
        if reason != self.set_inactive:
            self.set_inactive = reason
            self._wake.set()

    def pause(self) -> None:
        """Pause from the API: the safe output at the next tick (now), then nothing until `resume`."""
        self.paused = True
        self._wake.set()

    def resume(self) -> None:
        """Resume after `pause` or STOP ALL; a binding with a deadman waits for it to be released and pressed."""
        was_halted = self.stopped or self.paused
        self.paused = False
        self.stopped = False
        self._router.arbiter.resume(self.settings.holder)
        if was_halted and self.settings.deadman:
            self._rearm = True
        self._wake.set()

    async def finish(self) -> bool:
        """Removed or reloaded: the safe output, confirmed within `FINISH_DEADLINE_S` s; then the claims go.

        Call after `run` was cancelled. True when the safe output was confirmed (or nothing was owed).
        """
        self._stop_driving()
        confirmed = True
        if not self.stopped:
            confirmed = await self.delivery.settle(FINISH_DEADLINE_S, self.settings.period_s)
            if not confirmed:
                log.warning(
                    "binding %s: safe output not confirmed on removal (%s); its leases are released",
                    self.settings.name,
                    self.delivery.safe_problem or "no answer",
                )
        self.delivery.cancel()
        arbiter = self._router.arbiter
        with contextlib.suppress(ValueError):
            arbiter.on_stop_all.remove(self.on_stop_all)
        arbiter.unregister(self.settings.holder)
        return confirmed

    # -- status -----------------------------------------------------------------------------

    def status(self, now: float | None = None) -> BindingStatus:
        """The binding's status now."""
        now = self._clock() if now is None else now
        age = self.source.age(now)
        output = self.last_output
        fields = tuple(k for k, v in output.data.items() if _number(v)) if output else ()
        return BindingStatus(
            state=self.state,
            reason=self.reason,
            paused=self.paused,
            deadman_held=self.deadman_held,
            input_age_s=-1.0 if age is None else round(age, 6),
            clamped=self.clamped,
            source=self.source.device,
            target=output.device if output else "",
            command=output.type if output else "",
            fields=fields,
            values=tuple(float(output.data[k]) for k in fields) if output else (),
            priority=self.settings.priority,
            outputs_sent=self.delivery.sent,
            safe_outputs_sent=self.delivery.safe_sent,
        )

    def _stand(self, state: str, reason: str, now: float) -> None:
        """Record the state; publish the status on a change, else every `STATUS_PERIOD_S`."""
        if state != "active":
            self.clamped = False
        self.state, self.reason = state, reason
        shown = (state, reason, self.paused, self.deadman_held, self.clamped)
        if shown != self._published or now - self._published_at >= STATUS_PERIOD_S:
            self._published, self._published_at = shown, now
            self._publish(self.status(now))


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
