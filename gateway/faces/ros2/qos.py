"""The QoS of each kind of topic the face offers, matching rclpy's profiles (docs/ros2.md has the table).

rclpy's default profile (`QoSProfile(depth=10)`, what `create_publisher(T, name, 10)` gives) is
reliable, keep last 10, volatile. A reliable writer serves reliable and best-effort readers alike, and
a transient-local writer serves volatile readers alike, so device streams are written reliable and
transient local: `ros2 topic echo`, rclpy's default subscriptions and nodes using
`qos_profile_sensor_data` (best effort, keep last 5) all receive them, and a subscriber asking for
transient local (`ros2 topic echo` does when every publisher offers it) gets the last samples at once,
as `/ws` gives a new subscriber the latest sample: what a device publishes once (its description, an
Aseba node list) reaches a node that starts later. The gateway's status is transient local with depth 1
(as `/robot_description` is): a node that starts later gets the last status at once. Command topics
are read reliable, keep last 10: what rclpy's default publishers and `ros2 topic pub` offer (a
best-effort publisher does not match a reliable reader; docs/ros2.md says so).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TopicQos:
    """One profile: `reliable` (else best effort), `depth` (keep last), `transient_local` (else volatile)."""

    reliable: bool
    depth: int
    transient_local: bool = False


#: Device streams and Joy: rclpy's default (`QoSProfile(depth=10)`), transient local for late joiners.
STREAM = TopicQos(reliable=True, depth=10, transient_local=True)
#: Latched: the gateway's status; a late subscriber gets the last one.
LATCHED = TopicQos(reliable=True, depth=1, transient_local=True)
#: Command topics, read as rclpy's default publishers write.
COMMAND = TopicQos(reliable=True, depth=10)
#: `ros_discovery_info`, as rmw writes it (reliable, keep last 1, transient local).
DISCOVERY = TopicQos(reliable=True, depth=1, transient_local=True)
