"""roslibpy, unchanged, against the gateway's rosbridge endpoint; run as a program by tests/test_rosbridge_clients.py.

Usage: python tests/roslibpy_client.py <ws url>   (ROSLIBPY_TRANSPORT=asyncio picks the asyncio transport)
Prints one JSON object with what it saw. It leaves the Thymio's motors running when it closes: the
test checks that closing ended that lease.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

import roslibpy

TIMEOUT_S = 8.0


def collect(ros: roslibpy.Ros, name: str, type_name: str, seconds: float, **options: Any) -> list[dict[str, Any]]:
    topic = roslibpy.Topic(ros, name, type_name, **options)
    messages: list[dict[str, Any]] = []
    topic.subscribe(messages.append)
    time.sleep(seconds)
    topic.unsubscribe()
    return messages


def get_variable(ros: roslibpy.Ros, variable: str) -> dict[str, Any]:
    service = roslibpy.Service(ros, "/thymio/aseba/get_variable", "asebaros_msgs/GetVariable")
    try:
        return {
            "ok": True,
            "values": dict(service.call(roslibpy.ServiceRequest({"variable": variable}), timeout=TIMEOUT_S)),
        }
    except roslibpy.core.ServiceException as error:
        return {"ok": False, "error": str(error)}


def until(ros: roslibpy.Ros, variable: str, check: Any, send: Any = None) -> dict[str, Any]:
    """Read `variable` until `check` accepts it; `send()`, if given, is called before each read."""
    answer: dict[str, Any] = {}
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        if send is not None:
            send()
        answer = get_variable(ros, variable)
        if answer["ok"] and check(answer["values"]["data"]):
            break
        time.sleep(0.1)
    return answer


def main(url: str) -> dict[str, Any]:
    result: dict[str, Any] = {}
    ros = roslibpy.Ros(host=url, port=None)
    ros.run(timeout=TIMEOUT_S)
    result["connected"] = ros.is_connected
    result["topics"] = ros.get_topics()
    result["topic_type"] = ros.get_topic_type("/wiimote/state")
    result["services"] = ros.get_services()
    result["typedefs"] = [typedef["type"] for typedef in ros.get_message_details("wiimote/State")["typedefs"]]
    now = ros.get_time()
    result["time"] = [now.secs, now.nsecs]

    wiimote = collect(ros, "/wiimote/state", "wiimote/State", 1.5)
    result["wiimote_count"] = len(wiimote)
    result["wiimote_last"] = wiimote[-1] if wiimote else None
    thymio = collect(ros, "/thymio/node_1/events/state", "asebaros_msgs/Event", 1.5)
    result["thymio_count"] = len(thymio)

    # Two subscriptions to one topic: each callback must see each message once (one publish per topic).
    first, second = (
        roslibpy.Topic(ros, "/sim_pad/state", "creos_messages/ControllerState"),
        roslibpy.Topic(ros, "/sim_pad/state", "creos_messages/msg/ControllerState"),
    )
    seen_first: list[Any] = []
    seen_second: list[Any] = []
    first.subscribe(lambda message: seen_first.append(json.dumps(message["timestamp"])))
    second.subscribe(lambda message: seen_second.append(json.dumps(message["timestamp"])))
    time.sleep(1.0)
    first.unsubscribe()
    second.unsubscribe()
    result["twice_first"] = len(seen_first)
    result["twice_first_unique"] = len(set(seen_first))
    result["twice_second"] = len(seen_second)
    result["twice_second_unique"] = len(set(seen_second))

    result["throttled_count"] = len(
        collect(ros, "/sim_lamp/state", "creos_messages/ControllerState", 2.0, throttle_rate=500)
    )
    result["unthrottled_count"] = len(collect(ros, "/sim_lamp/state", "creos_messages/ControllerState", 2.0))

    led = roslibpy.Topic(ros, "/thymio/led", "thymio_msgs/Led")
    led.publish(roslibpy.Message({"id": 0, "values": [1.0] * 8}))
    result["leds"] = until(ros, "gw.led", lambda data: data[:8] == [32] * 8)
    result["missing_variable"] = get_variable(ros, "nope")

    motors = roslibpy.Topic(ros, "/thymio/cmd/hwgateway/ThymioMotors", "hwgateway/ThymioMotors")
    # Published until read back, as a teleop node publishes: the demo's binding drives this Thymio
    # while the scripted pad holds L1, and its release stops the motors, a one-shot command with them.
    result["motors_running"] = until(
        ros,
        "motor.left.target",
        lambda data: data == [200],
        lambda: motors.publish(roslibpy.Message({"left": 200, "right": -200})),
    )

    done = threading.Event()
    ros.on("close", lambda *_: done.set())
    ros.close()
    done.wait(TIMEOUT_S)
    return result


if __name__ == "__main__":
    outcome = main(sys.argv[1])
    print("RESULT " + json.dumps(outcome), flush=True)
    # roslibpy's reactor thread may linger; the result is out, so leave now.
    sys.stdout.flush()
    import os

    os._exit(0)
