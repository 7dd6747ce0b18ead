from . import ActuatorCyclic_pb2 as _ActuatorCyclic_pb2
from . import BaseCyclic_pb2 as _BaseCyclic_pb2
from . import WristCyclicGeneric_pb2 as _WristCyclicGeneric_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Command(_message.Message):
    __slots__ = ("frame_id", "actuators", "wrist")
    FRAME_ID_FIELD_NUMBER: _ClassVar[int]
    ACTUATORS_FIELD_NUMBER: _ClassVar[int]
    WRIST_FIELD_NUMBER: _ClassVar[int]
    frame_id: int
    actuators: _containers.RepeatedCompositeFieldContainer[_ActuatorCyclic_pb2.Command]
    wrist: _WristCyclicGeneric_pb2.Command
    def __init__(self, frame_id: _Optional[int] = ..., actuators: _Optional[_Iterable[_Union[_ActuatorCyclic_pb2.Command, _Mapping]]] = ..., wrist: _Optional[_Union[_WristCyclicGeneric_pb2.Command, _Mapping]] = ...) -> None: ...

class Feedback(_message.Message):
    __slots__ = ("frame_id", "base", "actuators", "wrist")
    FRAME_ID_FIELD_NUMBER: _ClassVar[int]
    BASE_FIELD_NUMBER: _ClassVar[int]
    ACTUATORS_FIELD_NUMBER: _ClassVar[int]
    WRIST_FIELD_NUMBER: _ClassVar[int]
    frame_id: int
    base: _BaseCyclic_pb2.BaseFeedback
    actuators: _containers.RepeatedCompositeFieldContainer[_ActuatorCyclic_pb2.Feedback]
    wrist: _WristCyclicGeneric_pb2.Feedback
    def __init__(self, frame_id: _Optional[int] = ..., base: _Optional[_Union[_BaseCyclic_pb2.BaseFeedback, _Mapping]] = ..., actuators: _Optional[_Iterable[_Union[_ActuatorCyclic_pb2.Feedback, _Mapping]]] = ..., wrist: _Optional[_Union[_WristCyclicGeneric_pb2.Feedback, _Mapping]] = ...) -> None: ...

class CustomData(_message.Message):
    __slots__ = ("frame_id", "wrist_custom_data")
    FRAME_ID_FIELD_NUMBER: _ClassVar[int]
    WRIST_CUSTOM_DATA_FIELD_NUMBER: _ClassVar[int]
    frame_id: int
    wrist_custom_data: _WristCyclicGeneric_pb2.CustomData
    def __init__(self, frame_id: _Optional[int] = ..., wrist_custom_data: _Optional[_Union[_WristCyclicGeneric_pb2.CustomData, _Mapping]] = ...) -> None: ...
