"""The rosapi services (rosapi_msgs/srv/*), answered by the gateway itself from its names and schemas.

Both `rosapi/x` (roslib) and `/rosapi/x` (roslibpy) reach them. Typedefs (`message_details`, ...) are
built from the message classes' field specs, so a tool can render any of our types.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from gateway import __version__
from gateway.core.client import Client
from gateway.errors import InvalidArgument
from gateway.messages import REGISTRY, MessageInfo, info_of
from gateway.messages.schema import Array, Bool, Float, Int, Nested, Spec, Str
from gateway.ros import names as ros

PREFIX = "/rosapi/"
NODE = "/hwgateway"

Handler = Callable[[Client, ros.RosNames, Mapping[str, Any]], dict[str, Any]]


def _string_arg(args: Mapping[str, Any], key: str) -> str:
    value = args.get(key, "")
    if not isinstance(value, str):
        raise InvalidArgument(f"args.{key}: expected a string, got {type(value).__name__}")
    return value


def state_topics(client: Client, names: ros.RosNames) -> dict[str, str]:
    """The ROS names of the bus's known topics and their ROS types."""
    topics: dict[str, str] = {}
    for topic, type_name in client.topics():
        name = names.topic(topic)
        if name is not None:
            topics[name] = ros.ros_type(type_name)
    return topics


def all_topics(client: Client, names: ros.RosNames) -> dict[str, str]:
    """State topics and command topics with their ROS types."""
    topics = state_topics(client, names)
    for name, endpoint in names.command_topics.items():
        topics.setdefault(name, endpoint.ros_type)
    return dict(sorted(topics.items()))


def _topics(client: Client, names: ros.RosNames, args: Mapping[str, Any]) -> dict[str, Any]:
    topics = all_topics(client, names)
    return {"topics": list(topics), "types": list(topics.values())}


def _topic_type(client: Client, names: ros.RosNames, args: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": all_topics(client, names).get(ros.normalize(_string_arg(args, "topic")), "")}


def _topics_for_type(client: Client, names: ros.RosNames, args: Mapping[str, Any]) -> dict[str, Any]:
    wanted = ros.bus_type(_string_arg(args, "type"))
    wanted_ros = "" if wanted is None else ros.ros_type(wanted)
    return {"topics": [name for name, kind in all_topics(client, names).items() if kind == wanted_ros]}


def _services(client: Client, names: ros.RosNames, args: Mapping[str, Any]) -> dict[str, Any]:
    return {"services": sorted([*names.services, *(PREFIX + name for name in HANDLERS)])}


def _service_type(client: Client, names: ros.RosNames, args: Mapping[str, Any]) -> dict[str, Any]:
    service = ros.normalize(_string_arg(args, "service"))
    endpoint = names.services.get(service)
    if endpoint is not None:
        return {"type": endpoint.ros_type}
    if service.startswith(PREFIX) and service[len(PREFIX) :] in HANDLERS:
        return {"type": "rosapi_msgs/" + "".join(part.title() for part in service[len(PREFIX) :].split("_"))}
    return {"type": ""}


def _nodes(client: Client, names: ros.RosNames, args: Mapping[str, Any]) -> dict[str, Any]:
    namespaces = sorted(ns for ns in names.namespaces.values() if ns != "/")
    return {"nodes": [NODE, "/rosapi", "/rosbridge_websocket", *namespaces]}


def _in_namespace(name: str, namespace: str) -> bool:
    return namespace == "/" or name == namespace or name.startswith(namespace + "/")


def _node_details(client: Client, names: ros.RosNames, args: Mapping[str, Any]) -> dict[str, Any]:
    """What a node publishes, subscribes and serves: `/hwgateway` all of the devices', a device's namespace its own."""
    node = ros.normalize(_string_arg(args, "node"))
    if node == "/rosapi":
        return {"subscribing": [], "publishing": [], "services": sorted(PREFIX + name for name in HANDLERS)}
    namespaces = set(names.namespaces.values())
    if node != NODE and node not in namespaces:
        return {"subscribing": [], "publishing": [], "services": []}
    namespace = "/" if node == NODE else node
    return {
        "subscribing": sorted(name for name in names.command_topics if _in_namespace(name, namespace)),
        "publishing": sorted(name for name in state_topics(client, names) if _in_namespace(name, namespace)),
        "services": sorted(name for name in names.services if _in_namespace(name, namespace)),
    }


def _publishers(client: Client, names: ros.RosNames, args: Mapping[str, Any]) -> dict[str, Any]:
    topic = ros.normalize(_string_arg(args, "topic"))
    return {"publishers": [NODE] if topic in state_topics(client, names) else []}


def _subscribers(client: Client, names: ros.RosNames, args: Mapping[str, Any]) -> dict[str, Any]:
    topic = ros.normalize(_string_arg(args, "topic"))
    return {"subscribers": [NODE] if topic in names.command_topics else []}


def _services_for_type(client: Client, names: ros.RosNames, args: Mapping[str, Any]) -> dict[str, Any]:
    wanted = ros.bus_type(_string_arg(args, "type"))
    return {"services": sorted(name for name, endpoint in names.services.items() if endpoint.type == wanted)}


def _service_node(client: Client, names: ros.RosNames, args: Mapping[str, Any]) -> dict[str, Any]:
    service = ros.normalize(_string_arg(args, "service"))
    if service in names.services:
        return {"node": NODE}
    return {"node": "/rosapi" if handler(service) is not None else ""}


def _service_providers(client: Client, names: ros.RosNames, args: Mapping[str, Any]) -> dict[str, Any]:
    node = _service_node(client, names, args)["node"]
    return {"providers": [node] if node else []}


def _action_servers(client: Client, names: ros.RosNames, args: Mapping[str, Any]) -> dict[str, Any]:
    return {"action_servers": []}  # the gateway serves no ROS actions


def _topics_and_raw_types(client: Client, names: ros.RosNames, args: Mapping[str, Any]) -> dict[str, Any]:
    """Every topic with its type and the type's full definition, ROS 1 `.msg` text with its dependencies.

    Foxglove's and Lichtblick's Rosbridge sources list topics only from this service, and read the
    messages with the definitions.
    """
    topics = all_topics(client, names)
    texts: dict[str, str] = {}
    for ros_name in topics.values():
        if ros_name not in texts:
            name = ros.bus_type(ros_name)
            texts[ros_name] = "" if name is None else full_text(REGISTRY[name].cls, ros_name)
    return {
        "topics": list(topics),
        "types": list(topics.values()),
        "typedefs_full_text": [texts[kind] for kind in topics.values()],
    }


def _get_time(client: Client, names: ros.RosNames, args: Mapping[str, Any]) -> dict[str, Any]:
    now = time.time_ns()
    sec, nanosec = divmod(now, 1_000_000_000)
    # roslibpy reads ROS 1's secs/nsecs, ROS 2 tools sec/nanosec: send both.
    return {"time": {"secs": sec, "nsecs": nanosec, "sec": sec, "nanosec": nanosec}}


def parameters(client: Client, names: ros.RosNames) -> dict[str, Any]:
    """The gateway's read-only parameters."""
    return {
        f"{NODE}/version": __version__,
        f"{NODE}/devices": sorted(names.namespaces),
        **{f"{NODE}/namespaces/{ros.ros_path([device])}": ns for device, ns in sorted(names.namespaces.items())},
    }


def _get_param(client: Client, names: ros.RosNames, args: Mapping[str, Any]) -> dict[str, Any]:
    name = ros.normalize(_string_arg(args, "name"))
    params = parameters(client, names)
    if name in params:
        return {"value": orjson.dumps(params[name]).decode()}
    default = args.get("default", "")
    return {"value": default if isinstance(default, str) else orjson.dumps(default).decode()}


def _has_param(client: Client, names: ros.RosNames, args: Mapping[str, Any]) -> dict[str, Any]:
    return {"exists": ros.normalize(_string_arg(args, "name")) in parameters(client, names)}


def _get_param_names(client: Client, names: ros.RosNames, args: Mapping[str, Any]) -> dict[str, Any]:
    return {"names": sorted(parameters(client, names))}


def _set_param(client: Client, names: ros.RosNames, args: Mapping[str, Any]) -> dict[str, Any]:
    raise InvalidArgument("the gateway's parameters are read-only (configure the gateway instead)")


# -- typedefs ---------------------------------------------------------------------------------

_EXAMPLES = {"bool": "False", "string": "", "float32": "0.0", "float64": "0.0"}


def _field_type(spec: Spec) -> tuple[str, int, type[Any] | None]:
    """(ROS field type, array length: -1 none / 0 unbounded / n, nested class) of one field spec."""
    if isinstance(spec, Array):
        item_type, _, nested = _field_type(spec.item)
        if isinstance(spec.item, Array):  # ROS has no arrays of arrays: described (and sent raw) flattened
            return item_type, 0, nested
        return item_type, spec.length if spec.length is not None else 0, nested
    if isinstance(spec, Int):
        return f"{'' if spec.signed else 'u'}int{spec.bits}", -1, None
    if isinstance(spec, Float):
        return f"float{spec.bits}", -1, None
    if isinstance(spec, Bool):
        return "bool", -1, None
    if isinstance(spec, Str):
        return "string", -1, None
    if isinstance(spec, Nested):
        info = info_of(spec.cls)
        return ros.ros_type_of_class(spec.cls, info.name), -1, spec.cls
    raise TypeError(f"no ROS type for field spec {spec!r}")


def typedefs(cls: type[Any], root_type: str | None = None) -> list[dict[str, Any]]:
    """The rosapi TypeDefs of `cls` and every type nested in it, the root first."""
    found: list[dict[str, Any]] = []
    seen: set[str] = set()

    def visit(cls: type[Any], type_name: str) -> None:
        if type_name in seen:
            return
        seen.add(type_name)
        info: MessageInfo = info_of(cls)
        typedef: dict[str, Any] = {
            "type": type_name,
            "fieldnames": [],
            "fieldtypes": [],
            "fieldarraylen": [],
            "examples": [],
            "constnames": list(info.constants),
            "constvalues": [str(value) for value in info.constants.values()],
        }
        found.append(typedef)
        nested_types = []
        for field_name, spec in info.fields:
            field_type, array_length, nested = _field_type(spec)
            typedef["fieldnames"].append(field_name)
            typedef["fieldtypes"].append(field_type)
            typedef["fieldarraylen"].append(array_length)
            if array_length >= 0:
                typedef["examples"].append("[]")
            elif nested is not None:
                typedef["examples"].append("{}")
            else:
                typedef["examples"].append(_EXAMPLES.get(field_type, "0"))
            if nested is not None:
                nested_types.append((nested, field_type))
        for nested, field_type in nested_types:
            visit(nested, field_type)

    visit(cls, root_type or ros.ros_type_of_class(cls, info_of(cls).name))
    return found


#: What separates a definition from the next one in a full text (ROS 1's `gendeps --cat`, as in bags).
SEPARATOR = "=" * 80


def _constant_type(value: int | float) -> str:
    if isinstance(value, float):
        return "float64"
    return "int32" if -(2**31) <= value < 2**31 else "int64"


def msg_text(typedef: Mapping[str, Any], constants: Mapping[str, int | float]) -> str:
    """One TypeDef as ROS `.msg` text: its `constants` (typed by value), then one `type name` per field."""
    lines = [f"{_constant_type(value)} {name}={value}" for name, value in constants.items()]
    for name, kind, length in zip(typedef["fieldnames"], typedef["fieldtypes"], typedef["fieldarraylen"], strict=True):
        suffix = "" if length < 0 else "[]" if length == 0 else f"[{length}]"
        lines.append(f"{kind}{suffix} {name}")
    return "\n".join(lines)


def _classes(cls: type[Any]) -> dict[str, type[Any]]:
    """`cls` and every type nested in it, by ROS type."""
    found: dict[str, type[Any]] = {}
    pending = [cls]
    while pending:
        current = pending.pop()
        name = ros.ros_type_of_class(current, info_of(current).name)
        if name not in found:
            found[name] = current
            pending.extend(nested for _, spec in info_of(current).fields if (nested := _field_type(spec)[2]))
    return found


def full_text(cls: type[Any], root_type: str) -> str:
    """The full definition of `cls` as `topics_and_raw_types` gives it.

    Its `.msg` text, then each nested type's after a line of `=` and `MSG: pkg/Type`, as ROS 1's
    `gendeps --cat` and bag files write it.
    """
    classes = _classes(cls)
    root, *nested = typedefs(cls, root_type)
    parts = [msg_text(root, info_of(cls).constants)]
    for typedef in nested:
        constants = info_of(classes[typedef["type"]]).constants
        parts.append(f"{SEPARATOR}\nMSG: {typedef['type']}\n{msg_text(typedef, constants)}")
    return "\n".join(parts)


def _info_for(args: Mapping[str, Any]) -> MessageInfo:
    requested = _string_arg(args, "type")
    name = ros.bus_type(requested)
    if name is None:
        raise InvalidArgument(f"args.type: no message type {requested!r} (rosapi/topics lists the types)")
    return REGISTRY[name]


def _message_details(client: Client, names: ros.RosNames, args: Mapping[str, Any]) -> dict[str, Any]:
    info = _info_for(args)
    return {"typedefs": typedefs(info.cls, ros.ros_type(info.name))}


def _service_request_details(client: Client, names: ros.RosNames, args: Mapping[str, Any]) -> dict[str, Any]:
    info = _info_for(args)
    return {"typedefs": typedefs(info.cls, ros.ros_type(info.name) + "Request")}


def _service_response_details(client: Client, names: ros.RosNames, args: Mapping[str, Any]) -> dict[str, Any]:
    info = _info_for(args)
    root = ros.ros_type(info.name) + "Response"
    if info.response is None:  # a command: its result has no declared fields
        return {"typedefs": [{"type": root, **{key: [] for key in _TYPEDEF_LISTS}}]}
    return {"typedefs": typedefs(info.response, root)}


_TYPEDEF_LISTS = ("fieldnames", "fieldtypes", "fieldarraylen", "examples", "constnames", "constvalues")

HANDLERS: dict[str, Handler] = {
    "topics": _topics,
    "topic_type": _topic_type,
    "topics_for_type": _topics_for_type,
    "services": _services,
    "service_type": _service_type,
    "nodes": _nodes,
    "node_details": _node_details,
    "publishers": _publishers,
    "subscribers": _subscribers,
    "services_for_type": _services_for_type,
    "service_node": _service_node,
    "service_providers": _service_providers,
    "action_servers": _action_servers,
    "topics_and_raw_types": _topics_and_raw_types,
    "message_details": _message_details,
    "service_request_details": _service_request_details,
    "service_response_details": _service_response_details,
    "get_time": _get_time,
    "get_param": _get_param,
    "has_param": _has_param,
    "get_param_names": _get_param_names,
    "set_param": _set_param,
    "delete_param": _set_param,
}


def handler(service: str) -> Handler | None:
    """The rosapi handler of a normalized service name, or None when it is no rosapi service."""
    if not service.startswith(PREFIX):
        return None
    return HANDLERS.get(service[len(PREFIX) :])
