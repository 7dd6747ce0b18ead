"""ROS names of the bus (the one rule, ecosystem names, overrides, collisions) and rosapi typedefs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from devices.registry import KINDS
from gateway.config import loads
from gateway.errors import ConfigError
from gateway.faces.rosbridge import ros1
from gateway.faces.rosbridge.rosapi import typedefs
from gateway.messages import REGISTRY
from gateway.ros import names as ros

ROSBRIDGE = "[rosbridge]\nenabled = true\n"


def names_of(text: str) -> ros.RosNames:
    return ros.RosNames(ros.namings_of(loads(ROSBRIDGE + text).devices, KINDS))


@pytest.mark.parametrize(
    ("segments", "name"),
    [
        (["wiimote-00:1f:32:aa:bb:cc", "state"], "wiimote_00_1f_32_aa_bb_cc/state"),
        (["node", "1", "events", "state"], "node_1/events/state"),
        (["1up", "x.y"], "_1up/x_y"),
        (["a", "b", "2", "3"], "a/b_2_3"),
    ],
)
def test_the_rule(segments: list[str], name: str) -> None:
    assert ros.ros_path(segments) == name


def test_ecosystem_names_and_overrides() -> None:
    names = names_of(
        '[devices.wii-1]\nkind = "wiimote"\ntransport = "sim"\nros_namespace = "/"\n'
        '[devices.thymio-2]\nkind = "aseba"\nsimulate = true\n'
        '[devices.arm]\nkind = "kortex"\nsimulate = true\nros_namespace = "/my_arm"\n'
    )
    assert names.namespaces == {"wii-1": "/", "thymio-2": "/thymio_2", "arm": "/my_arm"}
    # The ROS wiimote node, asebaros and ros-thymio names.
    assert names.topic("wii-1/state") == "/wiimote/state"
    assert names.services["/imu/calibrate"].type == "hwgateway/Calibrate"
    assert names.topic("thymio-2/nodes") == "/thymio_2/aseba/nodes"
    assert names.topic("thymio-2/node/1/buttons") == "/thymio_2/node_1/buttons"
    assert names.services["/thymio_2/aseba/get_variable"].type == "asebaros_msgs/GetVariable"
    assert "/thymio_2/aseba/get_variable" not in names.command_topics  # a service type is only a service
    assert names.command_topics["/thymio_2/led"].type == "thymio_msgs/Led"
    assert names.command_topics["/thymio_2/sound/play/system"].type == "thymio_msgs/SystemSound"
    # The rule for the rest: cmd/<type>.
    assert names.command_topics["/thymio_2/cmd/led"].type == "led"
    assert names.command_topics["/my_arm/cmd/kortex/WristCyclicC61/Command"].device == "arm"
    assert names.device_of("/thymio_2/anything") == "thymio-2"
    assert names.device_of("/elsewhere") == "wii-1"  # "/" holds every name, the longest namespace wins


def test_types() -> None:
    assert ros.ros_type("wiimote/State") == "wiimote/State"
    assert ros.ros_type("led") == "hwgateway/Led"
    assert ros.ros_type("kortex/InterconnectCyclic/Feedback") == "kortex_driver/InterconnectCyclic_Feedback"
    assert ros.ros_type("kortex/Base/ArmStateNotification") == "kortex_driver/ArmStateNotification"
    for accepted in ("thymio_msgs/Led", "thymio_msgs/msg/Led", "/thymio_msgs/Led"):
        assert ros.bus_type(accepted) == "thymio_msgs/Led"
    assert ros.bus_type("asebaros_msgs/srv/GetVariable") == "asebaros_msgs/GetVariable"
    assert ros.bus_type("kortex_driver/msg/WristCyclicC61_Command") == "kortex/WristCyclicC61/Command"
    assert ros.bus_type("std_msgs/String") is None
    # Every bus type has a ROS type of the form pkg/Type, and no two share one.
    ros_types = [ros.ros_type(name) for name in REGISTRY]
    assert len(set(ros_types)) == len(ros_types)
    assert all(len(t.split("/")) == 2 for t in ros_types)


def test_a_topic_clash_keeps_the_first_topic() -> None:
    names = names_of('[devices.sim-1]\nkind = "sim"\n')
    assert names.topic("sim-1/a-b") == "/sim_1/a_b"
    assert names.topic("sim-1/a.b") is None
    assert names.clashes("sim-1/a.b") == "sim-1/a-b"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[devices.pad-1]\nkind = "sim"\n[devices.pad_1]\nkind = "sim"\n',
            "devices 'pad-1' and 'pad_1' both get the ROS namespace '/pad_1'",
        ),
        (
            '[devices.a]\nkind = "sim"\nros_namespace = "/x"\n[devices.b]\nkind = "sim"\nros_namespace = "/x"\n',
            "devices 'a' and 'b' both get the ROS namespace '/x'",
        ),
        (
            # The Thymio's thymio_msgs/Led topic (<ns>/led) lands on the sim's generic <ns>/cmd/led.
            '[devices.a]\nkind = "sim"\nros_namespace = "/r"\n'
            '[devices.t]\nkind = "aseba"\nsimulate = true\nros_namespace = "/r/cmd"\n',
            "'t' (thymio_msgs/Led) and 'a' (led) both get the ROS command name '/r/cmd/led'",
        ),
    ],
)
def test_collisions_stop_start_up_naming_both(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        loads(ROSBRIDGE + text)
    assert error.value.path == "devices"
    assert message in error.value.message
    loads(text)  # without rosbridge there is nothing to collide


def test_check_config_exits_2_on_a_collision(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(ROSBRIDGE + '[devices.pad-1]\nkind = "sim"\n[devices.pad_1]\nkind = "sim"\n')
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "check-config", str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "'pad-1' and 'pad_1'" in done.stderr


@pytest.mark.parametrize("namespace", ["thymio", "/thy-mio", "/1x", "/a//b", "/a/", ""])
def test_bad_ros_namespaces_are_refused(namespace: str) -> None:
    if not namespace:
        assert loads(f'[devices.a]\nkind = "sim"\nros_namespace = "{namespace}"\n').devices[0].ros_namespace == ""
        return
    with pytest.raises(ConfigError) as error:
        loads(f'[devices.a]\nkind = "sim"\nros_namespace = "{namespace}"\n')
    assert error.value.path == "devices.a.ros_namespace"


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("[rosbridge]\nport = 70000\n", "rosbridge.port"),
        ('[rosbridge]\nenabled = "yes"\n', "rosbridge.enabled"),
        ("[rosbridge]\npath = '/'\n", "rosbridge.path"),
    ],
)
def test_rosbridge_config_is_validated(text: str, path: str) -> None:
    with pytest.raises(ConfigError) as error:
        loads(text)
    assert error.value.path == path


def test_typedefs_from_the_schemas() -> None:
    defs = {d["type"]: d for d in typedefs(REGISTRY["wiimote/State"].cls, "wiimote/State")}
    state = defs["wiimote/State"]
    fields = dict(zip(state["fieldnames"], zip(state["fieldtypes"], state["fieldarraylen"], strict=True), strict=True))
    assert fields["header"] == ("std_msgs/Header", -1)
    assert fields["angular_velocity_covariance"] == ("float64", 9)
    assert fields["buttons"] == ("bool", 11)
    assert fields["ir_tracking"] == ("wiimote/IrSourceInfo", 0)
    assert fields["errors"] == ("uint64", -1)
    assert dict(zip(state["constnames"], state["constvalues"], strict=True))["MSG_BTN_HOME"] == "10"
    assert defs["builtin_interfaces/Time"]["fieldtypes"] == ["int32", "uint32"]
    assert set(defs) == {
        "wiimote/State",
        "std_msgs/Header",
        "builtin_interfaces/Time",
        "geometry_msgs/Vector3",
        "wiimote/IrSourceInfo",
    }
    for info in REGISTRY.values():  # every type can be described
        assert typedefs(info.cls)[0]["fieldnames"] == [name for name, _ in info.fields]


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_bus_type_has_a_ros1_layout_for_cbor_raw(name: str) -> None:
    # A field spec with no ROS 1 layout raises TypeError when the writer is built: no type may have one,
    # or a `cbor-raw` subscriber (the viewer apps' Rosbridge source) would get an internal error.
    assert callable(ros1.message_writer(REGISTRY[name].cls))
