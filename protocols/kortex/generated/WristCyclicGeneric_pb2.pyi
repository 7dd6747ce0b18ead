from . import WristCyclicC61_pb2 as _WristCyclicC61_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Command(_message.Message):
    __slots__ = ("c61",)
    C61_FIELD_NUMBER: _ClassVar[int]
    c61: _WristCyclicC61_pb2.Command
    def __init__(self, c61: _Optional[_Union[_WristCyclicC61_pb2.Command, _Mapping]] = ...) -> None: ...

class Feedback(_message.Message):
    __slots__ = ("c61",)
    C61_FIELD_NUMBER: _ClassVar[int]
    c61: _WristCyclicC61_pb2.Feedback
    def __init__(self, c61: _Optional[_Union[_WristCyclicC61_pb2.Feedback, _Mapping]] = ...) -> None: ...

class CustomData(_message.Message):
    __slots__ = ("c61",)
    C61_FIELD_NUMBER: _ClassVar[int]
    c61: _WristCyclicC61_pb2.CustomData
    def __init__(self, c61: _Optional[_Union[_WristCyclicC61_pb2.CustomData, _Mapping]] = ...) -> None: ...
