"""The one lease rule every device adapter follows for the outputs a client drives.

An actuator that moves, shines, buzzes or drives a load is *leased* to the client that last set it
to a value other than its safe value. A `Lease` holds:

- `holder`: the commanding client's id (`Command.client_id`);
- `value`: what the client commanded (the adapter's own type: a motor speed, a pin mode and value);
- `deadline`: the `clock()` time (s, `time.monotonic` by default) at which it runs out, or None for
  a lease held until one of the other endings below.

Renewal: a new command for the same output takes the lease again, with a new value and a new
deadline (from the command's holder: the last client to command an output holds it). Commanding
the safe value ends the lease without anything more to do (the device already has it).

A lease ends, and the adapter puts the output to its safe value at once, when:

- its holder leaves (`release(client_id)`, `LeaseEnd.CLIENT_GONE`);
- it runs out without renewal (`LeaseEnd.EXPIRED`, from the timer or from `expire()`);
- an emergency stop (`end_all(LeaseEnd.ESTOP)`): synchronous, it waits behind nothing;
- the gateway stops the device (`end_all(LeaseEnd.SHUTDOWN)`);
- the device is lost (`end_all(LeaseEnd.DEVICE_LOST)`: the safe value is written if the link can
  still take it; a device that keeps its outputs across a lost link gets it again when it returns,
  from `restore_safe()` once the adapter is connected again);
- the output disappears (`drop(key)`: an unplugged motor, nothing to write).

The safe value is the adapter's declaration (`is_safe` recognises it, `apply_safe` writes it). How a
device reports its leases is the adapter's business: the leased outputs are visible on the bus in
the streams the device already publishes (a Wii Remote's `state.rumble`, a Kortex arm's
`wrist/command`), and `capabilities()` may name the lease terms (`lease_renewal_ms`).

Time comes from an injected `clock`, and expiry from an injected `schedule` (`loop.call_later` by
default): a test drives both, and fires expiry with `expire()` instead of sleeping.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LeaseEnd(enum.Enum):
    """Why a lease ended (given to `apply_safe`, and logged)."""

    CLIENT_GONE = "client gone"
    EXPIRED = "expired"
    ESTOP = "estop"
    SHUTDOWN = "shutdown"
    DEVICE_LOST = "device lost"


@dataclass(frozen=True, slots=True)
class Lease(Generic[V]):
    """One output held by one client: what it commanded, until when (`clock()` s, None: no term)."""

    holder: str
    value: V
    deadline: float | None = None


class Cancellable(Protocol):
    """What `schedule` returns (an `asyncio.TimerHandle` is one)."""

    def cancel(self) -> None:
        """Stop the callback from running."""


#: `schedule(delay_s, callback)`: run `callback` after `delay_s` seconds.
Schedule = Callable[[float, Callable[[], None]], Cancellable]


def loop_schedule(delay_s: float, callback: Callable[[], None]) -> Cancellable:
    """The default `Schedule`: the running event loop's `call_later`."""
    return asyncio.get_running_loop().call_later(delay_s, callback)


def _falsy(value: object) -> bool:
    return not value


class Leases(Generic[K, V]):
    """The leased outputs of one device, keyed by output (a port, a pin, a motor, a client).

    `apply_safe(key, lease, why)` puts output `key` back to its safe value; it is called once per
    ending lease, synchronously (an adapter whose write must be awaited starts it there, so that
    an estop never waits for another output's write). It must not raise: an error is logged and
    the other outputs are still made safe. `is_safe(value)` (default: falsy, e.g. speed 0) says
    whether a commanded value is the safe one, which ends the lease instead of taking it.
    `term_s` is the default lease term (s; None: leases last until another ending).
    """

    def __init__(
        self,
        device: str,
        apply_safe: Callable[[K, Lease[V], LeaseEnd], None],
        *,
        is_safe: Callable[[V], bool] = _falsy,
        term_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        schedule: Schedule = loop_schedule,
    ) -> None:
        self.device = device
        self.term_s = term_s
        self._apply_safe = apply_safe
        self._is_safe = is_safe
        self._clock = clock
        self._schedule = schedule
        self._leases: dict[K, Lease[V]] = {}
        #: Leases ended by a lost device: their safe value may not have reached it.
        self._lost: dict[K, Lease[V]] = {}
        self._timer: Cancellable | None = None
        self._timer_due: float | None = None

    # -- reading -----------------------------------------------------------------------------

    def __contains__(self, key: object) -> bool:
        return key in self._leases

    def __len__(self) -> int:
        return len(self._leases)

    def __iter__(self) -> Iterator[K]:
        return iter(list(self._leases))

    def get(self, key: K) -> Lease[V] | None:
        """The lease on `key`, or None when nobody holds it."""
        return self._leases.get(key)

    def held_by(self, holder: str) -> list[K]:
        """The outputs `holder` holds."""
        return [key for key, lease in self._leases.items() if lease.holder == holder]

    def holders(self) -> dict[K, str]:
        """Who holds each leased output (for capabilities and tests)."""
        return {key: lease.holder for key, lease in self._leases.items()}

    # -- commands ----------------------------------------------------------------------------

    def take(self, key: K, holder: str, value: V, term_s: float | None = None) -> Lease[V] | None:
        """`holder` commanded `value` on output `key`: take or renew its lease; None for the safe value.

        `term_s` overrides the default term for this lease (s; None: the default).
        """
        if self._is_safe(value):
            self._leases.pop(key, None)
            self._reschedule()
            return None
        term = self.term_s if term_s is None else term_s
        lease = Lease(holder, value, None if term is None else self._clock() + term)
        self._leases[key] = lease
        self._reschedule()
        return lease

    def drop(self, key: K) -> Lease[V] | None:
        """Forget the lease on `key` without writing anything (the output is gone, or already safe)."""
        lease = self._leases.pop(key, None)
        self._reschedule()
        return lease

    # -- endings -----------------------------------------------------------------------------

    def end(self, key: K, why: LeaseEnd) -> bool:
        """End the lease on `key` and put the output to its safe value; False when it was not leased."""
        lease = self._leases.pop(key, None)
        if lease is None:
            return False
        if why is LeaseEnd.DEVICE_LOST:
            self._lost[key] = lease
        self._reschedule()
        self._safe(key, lease, why)
        return True

    def release(self, holder: str) -> list[K]:
        """`holder` left: end its leases (`CLIENT_GONE`); the outputs it held."""
        keys = self.held_by(holder)
        if keys:
            log.info("%s: client %s left; outputs %s to their safe value", self.device, holder, keys)
        self._end_many(keys, LeaseEnd.CLIENT_GONE)
        return keys

    def end_all(self, why: LeaseEnd) -> list[K]:
        """End every lease (estop, shutdown, device lost): all safe values applied before returning."""
        keys = list(self._leases)
        if why is LeaseEnd.DEVICE_LOST:
            self._lost.update(self._leases)
        self._end_many(keys, why)
        return keys

    def restore_safe(self, where: Callable[[K], bool] | None = None) -> list[K]:
        """The device is back after being lost: the outputs leased then go to their safe value again.

        Call once connected again, before taking commands: a device that kept its outputs while the
        link was down (a micro:bit's pins, a Thymio's motor targets) must not resume what nobody holds.
        `where` picks the outputs that are reachable now (a node that has come back); the others wait.
        """
        keys = [key for key in self._lost if where is None or where(key)]
        for key in keys:
            lease = self._lost.pop(key)
            if key not in self._leases:
                self._safe(key, lease, LeaseEnd.DEVICE_LOST)
        return keys

    def expire(self, now: float | None = None) -> list[K]:
        """End the leases whose deadline is at or before `now` (default `clock()`); the outputs ended."""
        now = self._clock() if now is None else now
        keys = [k for k, lease in self._leases.items() if lease.deadline is not None and lease.deadline <= now]
        if keys:
            log.info("%s: lease ran out on %s: safe value", self.device, keys)
        self._end_many(keys, LeaseEnd.EXPIRED)
        return keys

    def _end_many(self, keys: list[K], why: LeaseEnd) -> None:
        ended = [(key, self._leases.pop(key)) for key in keys if key in self._leases]
        self._reschedule()
        for key, lease in ended:
            self._safe(key, lease, why)

    def _safe(self, key: K, lease: Lease[V], why: LeaseEnd) -> None:
        try:
            self._apply_safe(key, lease, why)
        except Exception:
            # One output that cannot be made safe must not keep the others from it.
            log.exception("%s: could not put %r to its safe value (%s)", self.device, key, why.value)

    # -- the expiry timer --------------------------------------------------------------------

    def _reschedule(self) -> None:
        """One timer, for the earliest deadline (rearmed only when that changes)."""
        deadlines = [lease.deadline for lease in self._leases.values() if lease.deadline is not None]
        due = min(deadlines) if deadlines else None
        if due == self._timer_due:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_due = None, due
        if due is not None:
            self._timer = self._schedule(max(0.0, due - self._clock()), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = self._timer_due = None
        self.expire()
        self._reschedule()
