"""A real ROS 2 node (rclpy, Fast DDS) driven over JSON lines: the ROS 2 face's test peer and bench subscriber.

Run with the peer venv's Python (`.venv-ros2/bin/python tests/ros2_peer/peer.py NAME`), never the
gateway's: rclpy and the classes rosidl built for the gateway's packages live there. Each request on
stdin is one JSON object with an `id`; the answer is `{"id": ..., "ok": ...}` on stdout. Messages
received on subscribed topics are events `{"event": "message", "topic", "data", "source_ns", "received_ns"}`.

Requests: `graph` (nodes, topics with types, each topic's publishers and subscribers with node,
type and type hash, as `ros2 topic info -v` shows them, and each node's own topics, as `ros2 node
info` does), `subscribe` (topic, type: `pkg/msg/Type`),
`subscribe_timed` (topic, type, stamp_field: count and time without reporting each message),
`create_publisher` (topic, type), `publish` (topic, type, data by ROS field names), `publish_raw`
(topic, type, hex CDR: rclpy sends the bytes as they are), `matched` (topic: the subscriptions our
publisher is matched with), `destroy_publisher` (topic), `count` (messages received per topic and
their latencies, without sending them: the bench), `quit`.
"""

import importlib
import json
import sys
import threading
import time
from typing import Any

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile


def message_class(type_name: str) -> Any:
    """rclpy's class of `pkg/msg/Type`."""
    package, _, name = type_name.split("/")
    return getattr(importlib.import_module(f"{package}.msg"), name)


def plain(value: Any) -> Any:
    """A message (or field value) as JSON-able data keyed by ROS field names."""
    if hasattr(value, "get_fields_and_field_types"):
        return {name: plain(getattr(value, name)) for name in value.get_fields_and_field_types()}
    if hasattr(value, "tolist"):  # numpy arrays (fixed-size) and numpy scalars
        return plain(value.tolist())
    if isinstance(value, (bytes, bytearray)):
        return list(value)
    if isinstance(value, (list, tuple)) or type(value).__name__ == "array":
        return [plain(item) for item in value]
    return value


def build(cls: Any, data: dict[str, Any]) -> Any:
    """A message of `cls` from data keyed by ROS field names (nested messages from nested dicts)."""
    message = cls()
    types = cls.get_fields_and_field_types()
    for name, value in data.items():
        field_type = types[name]
        if isinstance(value, dict):
            value = build(message_class(_nested(field_type)), value)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            value = [build(message_class(_nested(field_type)), item) for item in value]
        setattr(message, name, value)
    return message


def _nested(field_type: str) -> str:
    base = field_type.split("[")[0].removeprefix("sequence<").rstrip(">")
    package, name = base.split("/")
    return f"{package}/msg/{name}"


class Peer:
    """The node, its subscriptions and publishers; rclpy spins on a thread of its own."""

    def __init__(self, name: str) -> None:
        rclpy.init()
        self.node = Node(name)
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self.lock = threading.Lock()
        self.publishers: dict[str, Any] = {}
        self.subscriptions: dict[str, Any] = {}
        self.counts: dict[str, int] = {}
        self.latencies: dict[str, list[int]] = {}
        self.report = True
        self.out = threading.Lock()
        self.spinner = threading.Thread(target=self.executor.spin, daemon=True)
        self.spinner.start()

    def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message)
        with self.out:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def graph(self) -> dict[str, Any]:
        node = self.node
        topics = node.get_topic_names_and_types()
        endpoints: dict[str, Any] = {}
        for topic, _types in topics:
            endpoints[topic] = {
                kind: [
                    {
                        "node": info.node_name,
                        "namespace": info.node_namespace,
                        "type": info.topic_type,
                        "hash": str(info.topic_type_hash),
                        "reliability": int(info.qos_profile.reliability),
                        "durability": int(info.qos_profile.durability),
                    }
                    for info in getter(topic)
                ]
                for kind, getter in (
                    ("publishers", node.get_publishers_info_by_topic),
                    ("subscribers", node.get_subscriptions_info_by_topic),
                )
            }
        nodes = node.get_node_names_and_namespaces()
        return {
            "nodes": [[name, namespace] for name, namespace in nodes],
            "topics": {topic: types for topic, types in topics},
            "endpoints": endpoints,
            # What `ros2 node info` lists: each node's own publishers and subscriptions, by topic.
            "node_info": {
                namespace.rstrip("/") + "/" + name: {
                    "publishers": dict(node.get_publisher_names_and_types_by_node(name, namespace)),
                    "subscribers": dict(node.get_subscriber_names_and_types_by_node(name, namespace)),
                }
                for name, namespace in nodes
            },
        }

    def subscribe(self, topic: str, type_name: str) -> bool:
        def received(message: Any, topic: str = topic) -> None:
            now = time.time_ns()
            with self.lock:
                self.counts[topic] = self.counts.get(topic, 0) + 1
            if self.report:
                self.send({"event": "message", "topic": topic, "data": plain(message), "received_ns": now})

        if topic not in self.subscriptions:
            self.subscriptions[topic] = self.node.create_subscription(
                message_class(type_name), topic, received, self.qos_for(topic)
            )
        return True

    def qos_for(self, topic: str) -> QoSProfile:
        """rclpy's default profile, transient local when every publisher is (as `ros2 topic echo` adapts)."""
        profile = QoSProfile(depth=10)
        publishers = self.node.get_publishers_info_by_topic(topic)
        if publishers and all(p.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for p in publishers):
            profile.durability = DurabilityPolicy.TRANSIENT_LOCAL
        return profile

    def subscribe_timed(self, topic: str, type_name: str, stamp_field: str) -> bool:
        """Count and time messages without reporting each: latency from a `builtin_interfaces/Time` field (ns)."""

        def received(message: Any, topic: str = topic) -> None:
            now = time.time_ns()
            stamp = getattr(message, stamp_field)
            with self.lock:
                self.counts[topic] = self.counts.get(topic, 0) + 1
                self.latencies.setdefault(topic, []).append(now - (stamp.sec * 1_000_000_000 + stamp.nanosec))

        self.subscriptions[topic] = self.node.create_subscription(message_class(type_name), topic, received, 10)
        return True

    def publisher(self, topic: str, type_name: str) -> Any:
        if topic not in self.publishers:
            self.publishers[topic] = self.node.create_publisher(message_class(type_name), topic, 10)
        return self.publishers[topic]

    def handle(self, request: dict[str, Any]) -> Any:
        op = request["op"]
        if op == "graph":
            return self.graph()
        if op == "subscribe":
            return self.subscribe(request["topic"], request["type"])
        if op == "subscribe_timed":
            self.report = False
            return self.subscribe_timed(request["topic"], request["type"], request["stamp_field"])
        if op == "publish":
            cls = message_class(request["type"])
            self.publisher(request["topic"], request["type"]).publish(build(cls, request["data"]))
            return True
        if op == "create_publisher":
            self.publisher(request["topic"], request["type"])
            return True
        if op == "publish_raw":
            self.publisher(request["topic"], request["type"]).publish(bytes.fromhex(request["cdr"]))
            return True
        if op == "matched":
            publisher = self.publishers.get(request["topic"])
            return 0 if publisher is None else publisher.get_subscription_count()
        if op == "destroy_publisher":
            publisher = self.publishers.pop(request["topic"], None)
            if publisher is not None:
                self.node.destroy_publisher(publisher)
            return publisher is not None
        if op == "count":
            with self.lock:
                result = {"counts": dict(self.counts), "latencies_ns": self.latencies}
                self.latencies = {}
            return result
        raise ValueError(f"unknown op {op!r}")


def main() -> None:
    peer = Peer(sys.argv[1] if len(sys.argv) > 1 else "hwgateway_test_peer")
    peer.send({"event": "ready"})
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "quit":
            break
        try:
            peer.send({"id": request["id"], "ok": peer.handle(request)})
        except Exception as error:
            peer.send({"id": request["id"], "error": f"{type(error).__name__}: {error}"})
    # The spinning thread ends before the process does (a thread still in rclpy's C++ at exit aborts it).
    peer.executor.shutdown()
    peer.spinner.join(timeout=5.0)
    peer.node.destroy_node()
    rclpy.try_shutdown()


if __name__ == "__main__":
    main()
