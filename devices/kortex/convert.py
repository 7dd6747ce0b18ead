"""Protobuf messages from the robot to bus messages, and the bus's wrist command to protobuf.

Fields are copied by name: the bus types carry the vendor's field names, so a renamed or missing
field fails loudly in the tests rather than silently reading zero.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, TypeVar

from google.protobuf.message import Message

from gateway.messages import kortex as bus
from protocols.kortex.generated import (
    ActuatorCyclic_pb2,
    Base_pb2,
    BaseCyclic_pb2,
    BaseCyclicKortex3_pb2,
    BaseKortex3_pb2,
    WristCyclicC61_pb2,
)

T = TypeVar("T")

#: Fields that are embedded MessageId messages on the wire and `kortex.MessageId` on the bus.
_ID_FIELDS = frozenset({"command_id", "feedback_id", "custom_data_id"})


def _copy(cls: type[T], source: Message, **overrides: Any) -> T:
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        if field.name in overrides:
            continue
        value = getattr(source, field.name)
        if field.name in _ID_FIELDS and isinstance(value, Message):
            value = bus.MessageId(value.identifier)  # type: ignore[attr-defined]
        values[field.name] = value
    return cls(**values, **overrides)


def c61_feedback(feedback: WristCyclicC61_pb2.Feedback) -> bus.Feedback:
    """The bus `kortex/WristCyclicC61/Feedback` of a C61 wrist feedback."""
    return _copy(bus.Feedback, feedback)


def actuators(
    frame_id: int, feedback: Iterable[BaseCyclic_pb2.ActuatorFeedback | ActuatorCyclic_pb2.Feedback]
) -> bus.Actuators:
    """The bus `kortex/BaseCyclic/Actuators` of a cycle's actuator feedback (either API's layout)."""
    converted = []
    for actuator in feedback:
        if isinstance(actuator, ActuatorCyclic_pb2.Feedback):
            # Kortex 3 embeds a MessageId where Kortex 2 has a bare fixed32.
            converted.append(_copy(bus.ActuatorFeedback, actuator, command_id=actuator.feedback_id.identifier))
        else:
            converted.append(_copy(bus.ActuatorFeedback, actuator))
    return bus.Actuators(frame_id=frame_id, actuators=tuple(converted))


def interconnect(feedback: Message) -> bus.InterconnectFeedback:
    """The bus `kortex/InterconnectCyclic/Feedback` of a Kortex 2 interconnect feedback."""
    return _copy(bus.InterconnectFeedback, feedback)


def base_feedback(base: BaseCyclic_pb2.BaseFeedback | BaseCyclicKortex3_pb2.BaseFeedback) -> bus.BaseFeedback:
    """The bus `kortex/BaseCyclic/BaseFeedback` of either API's BaseFeedback (Kortex 2 has no e-stop field)."""
    state = _arm_state_value(base.active_state)
    if isinstance(base, BaseCyclicKortex3_pb2.BaseFeedback):
        return _copy(bus.BaseFeedback, base, active_state=state)
    return _copy(bus.BaseFeedback, base, active_state=state, is_emergency_stop_activated=False)


def _arm_state_value(value: int) -> int:
    # Protobuf enums are open int32s: a negative state from the arm is no ARMSTATE_* value the bus can carry.
    return int(value) if value >= 0 else bus.ArmStateNotification.ARMSTATE_UNSPECIFIED


def arm_state(
    notification: Base_pb2.ArmStateNotification | BaseKortex3_pb2.ArmStateNotification,
) -> bus.ArmStateNotification:
    """The bus `kortex/Base/ArmStateNotification` of either API's notification.

    Kortex 2 carries the timestamp at field 2; Kortex 3 inside generic_info (field 4), at its field 2.
    """
    if isinstance(notification, BaseKortex3_pb2.ArmStateNotification):
        stamp = notification.generic_info.timestamp
    else:
        stamp = notification.timestamp
    return bus.ArmStateNotification(
        active_state=_arm_state_value(notification.active_state),
        timestamp=bus.Timestamp(sec=stamp.sec, usec=min(stamp.usec, 999_999)),
    )


def c61_command(command: bus.Command) -> WristCyclicC61_pb2.Command:
    """The protobuf C61 command of a bus command (its `command_id` is set per cycle by the loop)."""
    wire = WristCyclicC61_pb2.Command()
    for field in dataclasses.fields(bus.Command):
        if field.name not in _ID_FIELDS:
            setattr(wire, field.name, getattr(command, field.name))
    return wire
