"""Who may drive what: the one priority rule between clients and bindings, applied by the command router.

Every command the router carries out passes `Arbiter.admit` first, whatever face or binding sent it,
so the rule lives in one place. A command on a device *claims* its channel (the device and the
command's message type: a binding's `hwgateway/ThymioMotors` does not keep a client from the LEDs)
for its holder (`Command.client_id`), at the holder's priority:

- a holder registered with `register` (a binding) has its own priority, optionally per target
  device; every other holder (a client of any face) has `client_priority`;
- a command is admitted when nobody holds the channel, when its holder holds it already, when the
  holder's claim has lapsed (no command within its `hold_s`), or when its priority is higher than
  the holder's; at equal priority a client takes over from a client (the last command wins, as
  before arbitration), but never from a binding, which keeps its claim until it yields;
- otherwise it is refused with `Locked`, naming who drives the channel and at which priority;
- a *safe* command (`admit(..., safe=True)`: a binding's safe output after a deadman release, a
  timeout, a lost source) never takes a channel that another holder claims, whatever the
  priorities: a binding's timeout must never clobber another source's commands; it is then refused
  with `Locked` and the binding's duty is done (the other holder's own leases keep it safe);
- `release(holder)` ends a holder's claims at once (a client left, a binding yielded).

STOP ALL: `stop_all()` (the router's estop calls it first, synchronously, before any adapter's
estop) halts every registered holder: their commands are refused with `DeviceUnavailable` until
each is `resume`d. Clients are not halted: an estop stops the actuators, and a client may command
them again as before.

Time comes from an injected `clock` (s, `time.monotonic` by default).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from gateway.errors import DeviceUnavailable, Locked

log = logging.getLogger(__name__)

#: The priority of a client's commands (a binding's priority is its own; higher wins).
DEFAULT_CLIENT_PRIORITY = 50
#: Seconds a client's claim on a channel lasts after its last command there.
CLIENT_HOLD_S = 0.5


@dataclass(frozen=True, slots=True)
class Claim:
    """A channel held by `holder` at `priority`, last renewed at `renewed` (clock s), lapsing `hold_s` later."""

    holder: str
    priority: int
    renewed: float
    hold_s: float
    binding: bool

    def live(self, now: float) -> bool:
        """True while the claim holds (renewed within `hold_s` of `now`)."""
        return now - self.renewed <= self.hold_s


@dataclass(slots=True)
class _Holder:
    """A registered holder (a binding): its priority, per-target priorities and claim term."""

    priority: int
    per_target: dict[str, int] = field(default_factory=dict)
    hold_s: float = CLIENT_HOLD_S


class Arbiter:
    """The claims on every device's channels, and the STOP ALL latch of the registered holders."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        client_priority: int = DEFAULT_CLIENT_PRIORITY,
        client_hold_s: float = CLIENT_HOLD_S,
    ) -> None:
        self._clock = clock
        self.client_priority = client_priority
        self.client_hold_s = client_hold_s
        self._holders: dict[str, _Holder] = {}
        self._claims: dict[tuple[str, str], Claim] = {}
        self._halted: set[str] = set()
        #: Called with no argument after `stop_all` latched (the bindings stop their outputs).
        self.on_stop_all: list[Callable[[], None]] = []

    # -- holders -----------------------------------------------------------------------------

    def register(self, holder: str, priority: int, hold_s: float, per_target: Mapping[str, int] | None = None) -> None:
        """Give `holder` (a binding) `priority` (per device in `per_target`); its claims last `hold_s` s."""
        self._holders[holder] = _Holder(priority, dict(per_target or {}), hold_s)

    def unregister(self, holder: str) -> None:
        """Forget a registered holder and end its claims."""
        self._holders.pop(holder, None)
        self._halted.discard(holder)
        self.release(holder)

    def priority_of(self, holder: str, device: str) -> int:
        """The priority `holder`'s commands have on `device`."""
        registered = self._holders.get(holder)
        if registered is None:
            return self.client_priority
        return registered.per_target.get(device, registered.priority)

    # -- the rule ----------------------------------------------------------------------------

    def admit(self, device: str, channel: str, holder: str, safe: bool = False) -> None:
        """Let `holder`'s command of type `channel` on `device` through and claim it, or raise.

        `Locked` when another holder's claim wins (see the module's rule), `DeviceUnavailable` when
        `holder` is a binding halted by STOP ALL. A `safe` command claims nothing: it only goes
        through when no other live claim holds the channel, and then ends `holder`'s claim.
        """
        registered = self._holders.get(holder)
        if holder in self._halted:
            raise DeviceUnavailable(f"binding {holder!r} is stopped by STOP ALL until it is resumed")
        now = self._clock()
        key = (device, channel)
        claim = self._claims.get(key)
        if safe:
            if claim is not None and claim.holder != holder and claim.live(now):
                raise Locked(self._refusal(device, channel, claim, holder, "its safe output yields"))
            if claim is not None and claim.holder == holder:
                del self._claims[key]
            return
        priority = self.priority_of(holder, device)
        if claim is not None and claim.holder != holder and claim.live(now):
            wins = priority > claim.priority or (
                priority == claim.priority and not claim.binding and registered is None
            )
            if not wins:
                raise Locked(self._refusal(device, channel, claim, holder, f"priority {priority}"))
        hold_s = self.client_hold_s if registered is None else registered.hold_s
        self._claims[key] = Claim(holder, priority, now, hold_s, registered is not None)

    def _refusal(self, device: str, channel: str, claim: Claim, holder: str, why: str) -> str:
        who = claim.holder if claim.binding else f"client {claim.holder}"  # a binding's id says so: binding:<name>
        return f"device {device!r}: {channel} is driven by {who} at priority {claim.priority} ({holder}: {why})"

    def release(self, holder: str, device: str | None = None) -> None:
        """End `holder`'s claims (on `device` only, when given)."""
        for key in [k for k, c in self._claims.items() if c.holder == holder and device in (None, k[0])]:
            del self._claims[key]

    def holder_of(self, device: str, channel: str) -> Claim | None:
        """The live claim on a channel, or None."""
        claim = self._claims.get((device, channel))
        return claim if claim is not None and claim.live(self._clock()) else None

    # -- STOP ALL ----------------------------------------------------------------------------

    def stop_all(self) -> None:
        """Halt every registered holder until it is resumed (synchronous: it waits behind nothing)."""
        self._halted.update(self._holders)
        for key in [k for k, c in self._claims.items() if c.binding]:
            del self._claims[key]
        for listener in list(self.on_stop_all):
            try:
                listener()
            except Exception:  # one listener's bug must not keep the others from stopping
                log.exception("STOP ALL listener failed")

    def halted(self, holder: str) -> bool:
        """True while `holder` is halted by STOP ALL."""
        return holder in self._halted

    def resume(self, holder: str) -> None:
        """Clear STOP ALL for `holder` (its commands are arbitrated again)."""
        self._halted.discard(holder)
