"""The rosbridge face's check of a config: every `ros_namespace` valid, and no ROS name twice.

The naming rule itself is shared by every ROS face and the ros2 recordings: `gateway.ros.names`.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any

from gateway.core.adapter import DeviceKinds
from gateway.errors import ConfigError
from gateway.ros.names import NameCollision, RosNames, check_ros_namespace, namings_of


def check_config(built: Mapping[str, Any], reported: Set[str], kinds: DeviceKinds) -> list[ConfigError]:
    """The face's check of a config (`gateway.core.config.Extensions`): every `ros_namespace`, and no ROS name twice.

    Names can only clash while the face is enabled; a namespace must be valid either way (turning the
    face on must not make a file invalid). `reported` paths are skipped.
    """
    devices = built.get("devices") or ()
    problems = []
    for device in devices:
        path = f"devices.{device.id}.ros_namespace"
        if device.ros_namespace and path not in reported:
            try:
                check_ros_namespace(device.ros_namespace)
            except ValueError as error:
                problems.append(ConfigError(path, str(error)))
    rosbridge = built.get("rosbridge")
    if rosbridge is not None and rosbridge.enabled and not problems and "devices" not in reported:
        try:
            RosNames(namings_of(devices, kinds))
        except NameCollision as error:
            problems.append(ConfigError("devices", str(error)))
    return problems
