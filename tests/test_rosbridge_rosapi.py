"""The rosapi services the viewer apps' Rosbridge sources and roslib's helpers call, with those clients unchanged.

Lichtblick's (and Foxglove Studio's) Rosbridge source lists topics only through
`rosapi/topics_and_raw_types` and parses each `typedefs_full_text` with `@lichtblick/rosmsg` into a
`@lichtblick/rosmsg-serialization` reader; without it the app shows no topic ("Failed to fetch
topics from rosbridge"). tests/node/rosbridge/rosapi_client.mjs makes those calls with
@lichtblick/roslibjs 1.0.0, and roslib 2.1.0's helpers, against the demo.
"""

from __future__ import annotations

import json

import pytest

from tests.harness import RunningGateway
from tests.rosbridge_rig import rosbridge_url
from tests.test_rosbridge_clients import ROSLIB_DIR, demo, node, run_program

__all__ = ["demo"]  # the fixture, shared

TOPIC = "/wiimote/state"
TYPE = "wiimote/State"
SERVICE = "/thymio/aseba/get_variable"
SERVICE_TYPE = "asebaros_msgs/GetVariable"
#: Read as the apps read messages (`cbor-raw`): a rich type with nested messages, fixed arrays and
#: constants, and one whose field is an array of arrays (sent flattened).
RAW_TOPICS = (TOPIC, "/sim_lamp/outputs")


async def test_rosapi_as_lichtblick_and_roslib_call_it(demo: RunningGateway) -> None:
    code, out, err = await run_program(
        node(),
        str(ROSLIB_DIR / "rosapi_client.mjs"),
        rosbridge_url(demo),
        TOPIC,
        SERVICE,
        TYPE,
        SERVICE_TYPE,
        *RAW_TOPICS,
    )
    assert code == 0, f"{out}\n{err}"
    report = json.loads(out.strip().splitlines()[-1])
    assert report["errors"] == [], report["errors"]
    lichtblick, roslib = report["lichtblick"], report["roslib"]

    # Lichtblick: every topic with its type and a definition its parser and reader take.
    listed = lichtblick["topicsAndRawTypes"]
    assert len(listed["topics"]) == len(listed["types"]) == len(listed["typedefs_full_text"])
    assert dict(zip(listed["topics"], listed["types"], strict=True))[TOPIC] == TYPE
    assert set(lichtblick["definitions"]) == set(listed["types"])
    wiimote = {field["name"]: field for field in lichtblick["definitions"][TYPE][0]["definitions"]}
    assert wiimote["angular_velocity_covariance"]["type"] == "float64"
    assert wiimote["angular_velocity_covariance"]["arrayLength"] == 9
    assert wiimote["header"]["isComplex"]
    assert wiimote["MSG_BTN_HOME"]["isConstant"]
    assert wiimote["MSG_BTN_HOME"]["value"] == 10
    nested = {definition["name"] for definition in lichtblick["definitions"][TYPE][1:]}
    assert {"std_msgs/Header", "geometry_msgs/Vector3"} <= nested
    # Its graph: who publishes, subscribes and serves what.
    assert "/hwgateway" in lichtblick["nodes"]
    gateway_node = lichtblick["nodeDetails"]["/hwgateway"]
    assert TOPIC in gateway_node["publications"]
    assert SERVICE in gateway_node["services"]
    assert any(topic.startswith("/thymio/") for topic in gateway_node["subscriptions"])
    assert "/rosapi/topics_and_raw_types" in lichtblick["nodeDetails"]["/rosapi"]["services"]
    thymio = lichtblick["nodeDetails"]["/thymio"]
    assert thymio["services"]
    assert all(name.startswith("/thymio/") for name in thymio["services"] + thymio["publications"])
    assert lichtblick["serviceType"] == SERVICE_TYPE

    # roslib's helpers.
    assert TOPIC in roslib["topics"]["topics"]
    assert roslib["topicType"] == TYPE
    assert TOPIC in roslib["topicsForType"]
    assert SERVICE in roslib["services"]
    assert roslib["serviceType"] == SERVICE_TYPE
    assert SERVICE in roslib["servicesForType"]
    assert roslib["nodes"] == lichtblick["nodes"]
    assert TOPIC in roslib["nodeDetails"]["publishing"]
    assert "/hwgateway/version" in roslib["params"]
    assert roslib["actionServers"] == []
    # (Topics come as devices first publish them: the two lists agree on the topics both have.)
    again = roslib["topicsAndRawTypes"]
    first = dict(zip(listed["topics"], zip(listed["types"], listed["typedefs_full_text"], strict=True), strict=True))
    second = dict(zip(again["topics"], zip(again["types"], again["typedefs_full_text"], strict=True), strict=True))
    assert TOPIC in second
    assert all(first[name] == second[name] for name in set(first) & set(second))
    assert roslib["messageDetails"][0]["type"] == TYPE
    assert roslib["publishers"] == ["/hwgateway"]

    # Messages as the apps read them: ROS 1 bytes that their reader takes whole, same as the JSON.
    for name in RAW_TOPICS:
        raw = lichtblick["raw"][name]
        assert raw["byteLength"] > 0
        assert raw["secs"] > 1_600_000_000
        assert set(raw["message"]) == set(roslib["json"][name])
    wiimote = lichtblick["raw"][TOPIC]["message"]
    assert len(wiimote["angular_velocity_covariance"]) == 9
    assert isinstance(wiimote["header"]["frame_id"], str)
    lamp, lamp_json = lichtblick["raw"]["/sim_lamp/outputs"]["message"], roslib["json"]["/sim_lamp/outputs"]
    assert lamp["leds"] == pytest.approx([value for led in lamp_json["leds"] for value in led])
    assert lamp["leds"]
    assert lamp["commands_received"] == lamp_json["commands_received"]
