"""Write the ROS 2 message packages of every bus type, so that rosidl builds rclpy's own classes of them.

Run with the gateway's venv: `python -m tests.ros2_peer.msg_packages OUT`. Each package the PyPI
wheels do not ship (`hwgateway`, `wiimote`, `thymio_msgs`, ...) becomes `OUT/<package>/` with its
`.msg` files (the layer's `.msg` text, `gateway.ros.definitions.msg_text`), a `package.xml` and a
`CMakeLists.txt`; `OUT/order.txt` lists them in build order (dependencies first). rosidl then
generates the Python classes and computes the RIHS01 hashes itself: the tests compare both with ours.
Services and their responses are left out: the ROS 2 face serves none (docs/ros2.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

from gateway.messages import REGISTRY
from gateway.ros import definitions, typesupport
from gateway.ros.types import MsgType

#: Packages whose messages the PyPI wheels ship (ros-jazzy-*): not built again.
SHIPPED = frozenset({"builtin_interfaces", "std_msgs", "geometry_msgs", "sensor_msgs"})

_PACKAGE_XML = """<?xml version="1.0"?>
<package format="3">
  <name>{name}</name>
  <version>0.0.0</version>
  <description>hwgateway test peer: {name} messages as the gateway's ROS 2 face sends them</description>
  <maintainer email="maintainers@example.com">hwgateway</maintainer>
  <license>MIT</license>
  <buildtool_depend>ament_cmake</buildtool_depend>
  <buildtool_depend>rosidl_default_generators</buildtool_depend>
{depends}  <exec_depend>rosidl_default_runtime</exec_depend>
  <member_of_group>rosidl_interface_packages</member_of_group>
  <export><build_type>ament_cmake</build_type></export>
</package>
"""

_CMAKE = """cmake_minimum_required(VERSION 3.8)
project({name})
find_package(ament_cmake REQUIRED)
find_package(rosidl_default_generators REQUIRED)
{finds}rosidl_generate_interfaces(${{PROJECT_NAME}}
{files}{dependencies})
ament_package()
"""


def message_types() -> dict[str, MsgType]:
    """Every ROS 2 message type of the bus (not the services'), with what they nest, by `pkg/msg/Type`."""
    found: dict[str, MsgType] = {}
    for name, info in REGISTRY.items():
        if info.kind == "service":
            continue
        msg = typesupport.for_bus_type(name).msg
        for each in (msg, *msg.dependencies()):
            if "/msg/" in each.name:  # a service's response (`pkg/srv/X_Response`) is no topic type
                found[each.name] = each
    return found


def write_packages(out: Path) -> list[str]:
    """Write every package not in `SHIPPED` under `out`; return their names in build order."""
    by_package: dict[str, list[MsgType]] = {}
    for msg in message_types().values():
        by_package.setdefault(msg.package, []).append(msg)
    needs = {
        package: sorted({dep.package for msg in msgs for dep in msg.dependencies()} - {package})
        for package, msgs in by_package.items()
    }
    order: list[str] = []

    def visit(package: str) -> None:
        if package in order or package in SHIPPED:
            return
        for dependency in needs.get(package, []):
            visit(dependency)
        order.append(package)

    for package in sorted(by_package):
        visit(package)
    for package in order:
        root = out / package
        (root / "msg").mkdir(parents=True, exist_ok=True)
        files = []
        for msg in sorted(by_package[package], key=lambda m: m.name):
            file = f"msg/{msg.name.split('/')[2]}.msg"
            (root / file).write_text(definitions.msg_text(msg), encoding="utf-8")
            files.append(file)
        depends = "".join(f"  <depend>{dep}</depend>\n" for dep in needs[package])
        (root / "package.xml").write_text(_PACKAGE_XML.format(name=package, depends=depends), encoding="utf-8")
        finds = "".join(f"find_package({dep} REQUIRED)\n" for dep in needs[package])
        dependencies = f"  DEPENDENCIES {' '.join(needs[package])}\n" if needs[package] else ""
        listed = "".join(f'  "{file}"\n' for file in files)
        (root / "CMakeLists.txt").write_text(
            _CMAKE.format(name=package, finds=finds, files=listed, dependencies=dependencies), encoding="utf-8"
        )
    (out / "order.txt").write_text("".join(p + "\n" for p in order), encoding="utf-8")
    return order


if __name__ == "__main__":
    print(" ".join(write_packages(Path(sys.argv[1]))))
