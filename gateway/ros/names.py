"""ROS graph names for the bus: state topics, command topics, services and message types.

The one rule, shared by every ROS face and the ros2 recordings (docs/rosbridge.md):

- A device's namespace is its `ros_namespace` when configured, else `/` + its id made a ROS token.
- A stream `<device>/<a>/<b>...` becomes `<namespace>/<a>/<b>...`, each segment made a ROS token:
  a character other than a letter, a digit or `_` becomes `_`, and a segment that starts with a digit
  joins the one before it with `_` (`node/1/buttons` → `node_1/buttons`; a first one gets a `_`).
- What a device accepts is reachable at `<namespace>/cmd/<type as segments>` (`led` → `cmd/led`),
  as a command topic (publish) and as a service (call_service, answered with the command's result);
  service types (asebaros_msgs/Get...) only as a service.
- Where a device's ROS ecosystem has its own names (the ROS wiimote node, asebaros, ros-thymio),
  those replace the rule for that stream or type (`STREAM_NAMES`, `ACCEPT_NAMES`).

Message types keep their names (`wiimote/State`, `thymio_msgs/Led`), except those that are no valid
ROS type: generic commands become `hwgateway/Led|Sound|Rumble`, Kortex types take ros_kortex's
`kortex_driver` names (`kortex/InterconnectCyclic/Feedback` → `kortex_driver/InterconnectCyclic_Feedback`,
Base's messages unprefixed). Types are accepted as `pkg/Type` and `pkg/msg/Type` (`pkg/srv/Type`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from gateway.core.adapter import DeviceKinds
from gateway.messages import REGISTRY

log = logging.getLogger(__name__)

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NOT_IN_TOKEN = re.compile(r"[^A-Za-z0-9_]")
MAX_NAME_LENGTH = 256

#: Streams whose ROS ecosystem names them (relative to the device's namespace), per device kind.
STREAM_NAMES: Mapping[str, Mapping[str, str]] = {
    # The ROS wiimote node: /wiimote/state, /wiimote/classic.
    "wiimote": {"state": "wiimote/state", "classic": "wiimote/classic"},
    # asebaros: aseba/nodes and aseba/anonymous_events.
    "aseba": {"nodes": "aseba/nodes", "anonymous_events": "aseba/anonymous_events"},
}
#: Accepted types whose ROS ecosystem names their topic or service, per device kind.
ACCEPT_NAMES: Mapping[str, Mapping[str, str]] = {
    "wiimote": {"hwgateway/Calibrate": "imu/calibrate"},  # the wiimote node's calibration service
    "aseba": {
        # asebaros's services and topics
        "asebaros_msgs/GetNodeList": "aseba/get_node_list",
        "asebaros_msgs/GetDescription": "aseba/get_description",
        "asebaros_msgs/GetVariable": "aseba/get_variable",
        "asebaros_msgs/SetVariable": "aseba/set_variable",
        "asebaros_msgs/LoadScript": "aseba/load_script",
        "asebaros_msgs/AnonymousEvent": "aseba/anonymous_events",
        # ros-thymio's thymio_driver subscriptions
        "thymio_msgs/Led": "led",
        "thymio_msgs/LedGesture": "led/gesture",
        "thymio_msgs/Sound": "sound/play",
        "thymio_msgs/SystemSound": "sound/play/system",
        "thymio_msgs/Comm": "comm/tx",
    },
}
_GENERIC_TYPES = {"led": "hwgateway/Led", "sound": "hwgateway/Sound", "rumble": "hwgateway/Rumble"}
#: Nested structures by class name (they are no bus types of their own).
_STRUCTURE_TYPES = {
    "Time": "builtin_interfaces/Time",
    "Duration": "builtin_interfaces/Duration",
    "Header": "std_msgs/Header",
    "Vector3": "geometry_msgs/Vector3",
    "Joy": "sensor_msgs/Joy",  # gateway.ros.joy: every controller's state as ROS 2 tools read it
}


class NameCollision(ValueError):
    """Two things would get the same ROS name; the message names both."""


def check_ros_namespace(namespace: str) -> str:
    """Return `namespace` if it is `/` or an absolute ROS name (`/a/b`), else raise `ValueError`."""
    tokens = namespace.split("/")
    if namespace == "/" or (
        len(namespace) <= MAX_NAME_LENGTH and tokens[0] == "" and all(_TOKEN.fullmatch(t) for t in tokens[1:])
    ):
        return namespace
    raise ValueError(
        f"{namespace!r} is no ROS namespace: '/' or '/name[/name...]' with names of letters, digits and _"
        " not starting with a digit"
    )


def ros_path(segments: Iterable[str]) -> str:
    """Bus name segments as a relative ROS name, by the module's rule."""
    tokens: list[str] = []
    for segment in segments:
        token = _NOT_IN_TOKEN.sub("_", segment) or "_"
        if token[0].isdigit():
            if tokens:
                tokens[-1] += "_" + token
                continue
            token = "_" + token
        tokens.append(token)
    return "/".join(tokens)


def join(namespace: str, relative: str) -> str:
    """`relative` under `namespace`."""
    return ("" if namespace == "/" else namespace) + "/" + relative


def normalize(name: str) -> str:
    """A client's ROS name made absolute (ROS resolves relative names in the root namespace here)."""
    name = name.strip()
    if not name.startswith("/"):
        name = "/" + name
    return name.rstrip("/") or "/"


def ros_type(bus_type: str) -> str:
    """The ROS name of a bus message type."""
    generic = _GENERIC_TYPES.get(bus_type)
    if generic is not None:
        return generic
    parts = bus_type.split("/")
    if parts[0] == "kortex" and len(parts) == 3:
        package, name = parts[1], parts[2]
        return f"kortex_driver/{name}" if package == "Base" else f"kortex_driver/{package}_{name}"
    return bus_type


def ros_type_of_class(cls: type[Any], name: str) -> str:
    """The ROS type of a message class registered as `name` (bus types and nested structures)."""
    if name in REGISTRY:
        return ros_type(name)
    if name in _STRUCTURE_TYPES:
        return _STRUCTURE_TYPES[name]
    package = "kortex_driver" if cls.__module__.endswith(".kortex") else "hwgateway"
    return f"{package}/{name}"


_BUS_TYPES = {ros_type(name): name for name in REGISTRY}


def bus_type(name: str) -> str | None:
    """The bus type a client's ROS type names (`pkg/Type`, `pkg/msg/Type`, `pkg/srv/Type`), or None."""
    parts = name.strip("/").split("/")
    if len(parts) == 3 and parts[1] in ("msg", "srv"):
        parts = [parts[0], parts[2]]
    return _BUS_TYPES.get("/".join(parts))


def same_type(requested: str, bus: str) -> bool:
    """True when a client's type names bus type `bus` (an empty type matches anything)."""
    return not requested.strip() or bus_type(requested) == bus


@dataclass(frozen=True, slots=True)
class DeviceNaming:
    """What names a device's ROS graph: its id, kind, configured namespace ("" derives it) and accepts."""

    id: str
    kind: str
    ros_namespace: str
    accepts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A device's command topic or service: its ROS name, the device and the bus type it carries."""

    name: str
    device: str
    type: str
    kind: Literal["command", "service"]

    @property
    def ros_type(self) -> str:
        """The type as ROS names it."""
        return ros_type(self.type)


class RosNames:
    """Every ROS name of one gateway, built from its devices; raises `NameCollision` on a clash."""

    def __init__(self, devices: Iterable[DeviceNaming]) -> None:
        self.namespaces: dict[str, str] = {}
        self.kinds: dict[str, str] = {}
        self.command_topics: dict[str, Endpoint] = {}
        self.services: dict[str, Endpoint] = {}
        self._topics: dict[str, str] = {}
        self._owners: dict[str, str] = {}
        by_namespace: dict[str, str] = {}
        for device in devices:
            namespace = device.ros_namespace or "/" + ros_path([device.id])
            if namespace in by_namespace:
                raise NameCollision(
                    f"devices {by_namespace[namespace]!r} and {device.id!r} both get the ROS namespace "
                    f"{namespace!r}; set ros_namespace on one of them"
                )
            by_namespace[namespace] = device.id
            self.namespaces[device.id] = namespace
            self.kinds[device.id] = device.kind
            for accepted in device.accepts:
                self._add_endpoint(device, namespace, accepted)

    def rebuild(self, devices: Iterable[DeviceNaming]) -> None:
        """Take the names of another set of devices in place (a reload): every session holds this object.

        Raises `NameCollision` and changes nothing on a clash (the config check refuses one first).
        """
        fresh = RosNames(devices)
        self.namespaces, self.kinds = fresh.namespaces, fresh.kinds
        self.command_topics, self.services = fresh.command_topics, fresh.services
        self._topics, self._owners = fresh._topics, fresh._owners

    def _add_endpoint(self, device: DeviceNaming, namespace: str, accepted: str) -> None:
        relative = ACCEPT_NAMES.get(device.kind, {}).get(accepted) or "cmd/" + ros_path(accepted.split("/"))
        name = join(namespace, relative)
        info = REGISTRY[accepted]
        kinds: tuple[Literal["command", "service"], ...] = (
            ("service",) if info.kind == "service" else ("command", "service")
        )
        for kind in kinds:
            table = self.command_topics if kind == "command" else self.services
            other = table.get(name)
            if other is not None:
                raise NameCollision(
                    f"{device.id!r} ({accepted}) and {other.device!r} ({other.type}) both get the ROS {kind} "
                    f"name {name!r}; set ros_namespace on one of them"
                )
            table[name] = Endpoint(name, device.id, accepted, kind)

    # -- state topics ------------------------------------------------------------------------

    def topic(self, bus_topic: str) -> str | None:
        """The ROS name of a bus topic; None when it clashes with another topic's (the first one keeps it)."""
        name = self._topics.get(bus_topic)
        if name is None:
            name = self._name_of(bus_topic)
            if self._owners.setdefault(name, bus_topic) != bus_topic:
                log.warning("bus topic %s gets no ROS name: %s is %s's", bus_topic, name, self._owners[name])
                name = ""
            self._topics[bus_topic] = name
        return name or None

    def _name_of(self, bus_topic: str) -> str:
        device, _, stream = bus_topic.partition("/")
        namespace = self.namespaces.get(device) or "/" + ros_path([device])
        relative = STREAM_NAMES.get(self.kinds.get(device, ""), {}).get(stream) or ros_path(stream.split("/"))
        return join(namespace, relative)

    def clashes(self, bus_topic: str) -> str | None:
        """The bus topic that holds the ROS name `bus_topic` would get, when it is another one."""
        name = self.topic(bus_topic)
        if name is not None:
            return None
        return self._owners.get(self._name_of(bus_topic))

    def device_of(self, name: str) -> str | None:
        """The device whose namespace holds the ROS name `name` (the longest namespace wins)."""
        best: tuple[int, str] | None = None
        for device, namespace in self.namespaces.items():
            prefix = "" if namespace == "/" else namespace
            if name.startswith(prefix + "/") and (best is None or len(prefix) > best[0]):
                best = (len(prefix), device)
        return None if best is None else best[1]


def namings_of(devices: Iterable[Any], kinds: DeviceKinds) -> list[DeviceNaming]:
    """`DeviceNaming`s of configured devices (`gateway.core.config.DeviceConfig`), enabled ones only."""
    return [
        DeviceNaming(device.id, device.kind, device.ros_namespace, tuple(kinds.adapter_class(device.kind).accepts))
        for device in devices
        if device.enabled
    ]
