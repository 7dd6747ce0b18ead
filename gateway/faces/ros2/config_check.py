"""The ROS 2 face's check of a config (`gateway.core.config.Extensions`): no ROS name twice while it is enabled.

The naming rule is the rosbridge face's (`gateway.ros.names`), whose own check covers the
`ros_namespace` values; this one reports a clash when only the ROS 2 face is on.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any

from gateway.core.adapter import DeviceKinds
from gateway.errors import ConfigError
from gateway.ros.names import NameCollision, RosNames, check_ros_namespace, namings_of


def check_config(built: Mapping[str, Any], reported: Set[str], kinds: DeviceKinds) -> list[ConfigError]:
    """A clash of ROS names while `[ros2]` is enabled (and `[rosbridge]`, which reports it itself, is not)."""
    ros2 = built.get("ros2")
    rosbridge = built.get("rosbridge")
    if ros2 is None or not ros2.enabled or (rosbridge is not None and rosbridge.enabled) or "devices" in reported:
        return []
    devices = built.get("devices") or ()
    for device in devices:
        if device.ros_namespace:
            try:
                check_ros_namespace(device.ros_namespace)
            except ValueError:
                return []  # reported by the rosbridge face's check, with its path
    try:
        RosNames(namings_of(devices, kinds))
    except NameCollision as error:
        return [ConfigError("devices", str(error))]
    return []
