"""`sensor_msgs/msg/Joy` for every controller: what ROS 2 teleop nodes read, from a `ControllerState`.

The mapping (`joy_of_controller_state`): `header.stamp` = the state's `timestamp`, `header.frame_id`
empty, `axes` = its axes as they are (float32, -1..1 or 0..1, creos order), `buttons` = its button
states as int32 (1 pressed, 0 released, 2 long press, -1/0/1 switches), same order. The Joy topic of
a controller state's ROS topic is its sibling `joy` (`joy_topic`: `/pad/state` -> `/pad/joy`), where
the ROS `joy` node publishes.
"""

from __future__ import annotations

from typing import Annotated, Any

from gateway.messages.common import Header
from gateway.messages.schema import Array, Float, Int, Nested, structure

#: The bus type whose samples also become Joy messages.
CONTROLLER_TYPE = "creos_messages/ControllerState"


@structure
class Joy:
    """sensor_msgs/Joy: `axes` (unitless, -1..1 or 0..1) and `buttons` (integer states) of a joystick."""

    header: Annotated[Header, Nested(Header)] = Header()
    axes: Annotated[tuple[float, ...], Array(Float(32))] = ()
    buttons: Annotated[tuple[int, ...], Array(Int(32))] = ()


def joy_of_controller_state(state: dict[str, Any]) -> dict[str, Any]:
    """The plain Joy message (a dict) of a `creos_messages/ControllerState` in its plain form."""
    return {"header": {"stamp": state["timestamp"], "frame_id": ""}, "axes": state["axes"], "buttons": state["buttons"]}


def joy_topic(controller_topic: str) -> str:
    """The ROS name of the Joy topic beside a controller state's ROS topic (`/pad/state` -> `/pad/joy`)."""
    parent = controller_topic.rpartition("/")[0]
    return parent + "/joy"
