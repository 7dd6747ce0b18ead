"""The contract every device adapter fulfils, what the gateway hands each adapter, and the table of kinds.

The core defines the contract; the adapters (`devices/`) fulfil it. The core never imports an
adapter: the composition root (`gateway.config`, `gateway.app`) hands it the `DeviceKinds` table
that names them (`devices.registry.KINDS`).
"""

from __future__ import annotations

import abc
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from gateway.bus import Bus, DeviceStatus

OptionsT = TypeVar("OptionsT")


@dataclass(frozen=True, slots=True)
class Command:
    """A validated command for one device.

    `type` is a bus message type or a generic command (`led`, `sound`, `rumble`); `message` is its
    dataclass; `client_id` names the commanding client (the holder of any lease the command takes);
    `deadline` is the `time.monotonic()` by which the command must be answered.
    """

    type: str
    message: Any
    client_id: str
    deadline: float


class DeviceContext:
    """The adapter's handle on the gateway: publish samples under its id and report availability."""

    def __init__(
        self,
        device_id: str,
        bus: Bus,
        on_status: Callable[[DeviceStatus, str], None],
        on_identity: Callable[[str | None], None] | None = None,
    ) -> None:
        self.device_id = device_id
        self._bus = bus
        self._on_status = on_status
        self._on_identity = on_identity
        self._prefix = device_id + "/"
        #: Adds a device at run time (`add_device(config, factory)`, the supervisor's `add`): the replay
        #: device lists the recorded devices with it. None outside a supervisor.
        self.add_device: Callable[..., Any] | None = None

    def publish(self, stream: str, message: Any, stamp: float | None = None) -> None:
        """Publish `message` on `<device_id>/<stream>`; `stamp` is device time in s since the epoch."""
        self._bus.publish(self._prefix + stream, message, stamp)

    def publish_topic(self, topic: str, message: Any, stamp: float | None = None) -> None:
        """Publish `message` on a full topic name (the replay device keeps the recorded device ids)."""
        self._bus.publish(topic, message, stamp)

    def set_status(self, status: DeviceStatus, detail: str = "") -> None:
        """Report availability: call with "connected" once the device answers."""
        self._on_status(status, detail)

    def set_identity(self, identity: str | None) -> None:
        """Report the hardware's own identity (a Thymio's UUID as text), None when unknown.

        Two devices that reach the same hardware over two links (a Thymio on USB and on a radio
        dongle) report the same identity, so a face can show it once. Call it before
        `set_status("connected")` when it is known by then.
        """
        if self._on_identity is not None:
            self._on_identity(identity)


class Adapter(abc.ABC, Generic[OptionsT]):
    """One device: connect, publish its state, carry out its commands, report its health.

    Subclasses set `kind` (the config's `kind`), `options_class` (a frozen dataclass of its config
    keys), and the message types they `publishes` and `accepts`: as class attributes when every
    device of the kind has the same, or per instance (in `__init__`) when each device says its own
    (a replayed or an imported device). The supervisor calls `run` and restarts it with backoff
    when it raises; `run` must call `ctx.set_status("connected")` once the device is ready and
    should raise (not return) when the device is lost.

    Commands: an adapter lists its handlers once, in a `gateway.core.dispatch.CommandTable` from
    message type to handler (`commands`), its `accepts` derives from that table, and
    `handle_command` runs the command's handler.

    Leases, the one rule for every output a client drives (`gateway.core.lease.Leases`, held in
    `leases`): a command that sets an output to anything but its safe value leases the output to
    the commanding client (`Command.client_id`), with the commanded value and, where the device
    has one, a deadline (a Thymio's `motor_lease_ms`, a rumble's duration); a new command renews
    it, and commanding the safe value ends it. The lease ends, and the adapter puts the output to
    the safe value it declares (`apply_safe`, at once, never behind a queue), when:
    the client leaves (`release`), it runs out, on `estop` (every output, leased or not), at
    shutdown (`run` cancelled, then `close`), and when the device is lost (`run` raising; outputs
    a device keeps across a lost link are set safe again when it returns, `Leases.restore_safe`).
    The device reports its leased outputs on the streams it already publishes.
    """

    kind: ClassVar[str]
    options_class: ClassVar[type[Any]]
    #: The bus message types this device publishes (the class's, unless an instance sets its own).
    publishes: tuple[str, ...] = ()
    #: The message types (and generic commands) this device carries out; the router refuses others.
    accepts: tuple[str, ...] = ()
    #: Stream name (or a glob of them, `node/*/state`) -> the message type published on it, declared by
    #: kinds whose streams are known before they run, so `[bindings]` input paths are checked at load
    #: (`gateway.bindings.spec.check_bindings`); empty: known only at run time (a replay, an import).
    streams: ClassVar[Mapping[str, str]] = {}

    def __init__(self, ctx: DeviceContext, options: OptionsT) -> None:
        self.ctx = ctx
        self.options = options

    def capabilities(self) -> Mapping[str, Any]:
        """What this device can do beyond its message types (shown by `list_devices`)."""
        return {}

    @abc.abstractmethod
    async def run(self) -> None:
        """Connect and serve the device until cancelled; raise when it fails or goes away."""

    @abc.abstractmethod
    async def handle_command(self, command: Command) -> Mapping[str, Any] | None:
        """Carry out a command of a type in `accepts`; return result data, or None for none.

        Raise `gateway.errors.GatewayError` subclasses (`InvalidArgument`, `DeviceError`) to refuse.
        """

    async def estop(self) -> None:
        """Stop every actuator now; must not wait on queues. Devices without actuators do nothing.

        The leases end with `LeaseEnd.ESTOP`; outputs no client holds are stopped too.
        """

    def release(self, client_id: str) -> None:
        """The client `client_id` is gone: end its leases and put what it drove into a safe state."""

    async def close(self) -> None:
        """Put the device in its safe state before the gateway stops (called after `run` is cancelled).

        `run`, cancelled, has ended the leases with `LeaseEnd.SHUTDOWN`.
        """

    def outputs(self) -> Mapping[str, Any]:
        """What the actuators output now, as plain values (logged with the safe state at shutdown).

        Where the device does not report its outputs back, these are the values last sent to it;
        `unconfirmed_safe_state` then says when the device never acknowledged the safe ones.
        """
        return {}

    def unconfirmed_safe_state(self) -> str | None:
        """Why the device may not be in its safe state although the adapter sent it; None when it is (default).

        Asked at shutdown after `close`: an adapter returns a reason when the device did not
        acknowledge the safe values in time (an unanswered request, a link lost on the way), and
        the supervisor then logs the safe state as "unconfirmed" with it, never "ok". Adapters whose
        device cannot acknowledge anything keep the default.
        """
        return None


class DeviceKinds:
    """The adapter kinds a configuration may name, each imported only when a device of the kind is used.

    `classes` maps a kind to its adapter as "package.module:Class"; `extras` maps a kind to the
    optional dependency ("extra") it needs and a module that extra provides, so that a kind whose
    extra is missing is refused by the config check rather than retried for ever at start.
    """

    def __init__(self, classes: Mapping[str, str] | None = None, extras: Mapping[str, tuple[str, str]] | None = None):
        self._classes = dict(classes or {})
        self._extras = dict(extras or {})

    def kinds(self) -> list[str]:
        """Every adapter kind the configuration accepts."""
        return sorted(self._classes)

    def adapter_class(self, kind: str) -> type[Adapter[Any]]:
        """The adapter class of `kind`; raise `KeyError` with a readable message for an unknown kind."""
        try:
            module_name, class_name = self._classes[kind].split(":")
        except KeyError:
            known = ", ".join(self.kinds()) or "none"
            raise KeyError(f"unknown device kind {kind!r} (known kinds: {known})") from None
        cls: type[Adapter[Any]] = getattr(importlib.import_module(module_name), class_name)
        return cls

    def options_class(self, kind: str) -> type[Any]:
        """The options dataclass that `[devices.<id>]` tables of `kind` are read into."""
        return self.adapter_class(kind).options_class

    def missing_extra(self, kind: str) -> str | None:
        """Why `kind` cannot run here when its extra is not installed (importing the extra's module); None when it can.

        The module is really imported, not just found: PySDL2 installed without an SDL2 library fails here too.
        """
        if kind not in self._extras:
            return None
        extra, module = self._extras[kind]
        try:
            importlib.import_module(module)
        except ImportError as error:  # also what PySDL2 raises when it finds no SDL2 library
            return (
                f"kind {kind!r} needs the {extra!r} extra, which is not installed here ({error}): "
                f"pip install 'hwgateway[{extra}]' in the gateway's environment "
                f"(the service: sudo EXTRAS={extra} make install, or the default, which installs every extra)"
            )
        return None


#: No kinds at all: what a supervisor knows when it is given none (a gateway without configured devices).
NO_KINDS = DeviceKinds()
