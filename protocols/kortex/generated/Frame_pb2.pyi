from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class HeaderVersion(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RESERVED_0: _ClassVar[HeaderVersion]
    CURRENT_VERSION: _ClassVar[HeaderVersion]

class FrameTypes(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RESERVED: _ClassVar[FrameTypes]
    MSG_FRAME_REQUEST: _ClassVar[FrameTypes]
    MSG_FRAME_RAW: _ClassVar[FrameTypes]
    MSG_FRAME_RESPONSE: _ClassVar[FrameTypes]
    MSG_FRAME_NOTIFICATION: _ClassVar[FrameTypes]
    MSG_FRAME_PING: _ClassVar[FrameTypes]
    MSG_FRAME_PONG: _ClassVar[FrameTypes]

class ErrorCodes(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ERROR_NONE: _ClassVar[ErrorCodes]
    ERROR_PROTOCOL_SERVER: _ClassVar[ErrorCodes]
    ERROR_PROTOCOL_CLIENT: _ClassVar[ErrorCodes]
    ERROR_DEVICE: _ClassVar[ErrorCodes]
    ERROR_INTERNAL: _ClassVar[ErrorCodes]

class SubErrorCodes(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SUB_ERROR_NONE: _ClassVar[SubErrorCodes]
    METHOD_FAILED: _ClassVar[SubErrorCodes]
    UNIMPLEMENTED: _ClassVar[SubErrorCodes]
    INVALID_PARAM: _ClassVar[SubErrorCodes]
    UNSUPPORTED_SERVICE: _ClassVar[SubErrorCodes]
    UNSUPPORTED_METHOD: _ClassVar[SubErrorCodes]
    TOO_LARGE_ENCODED_FRAME_BUFFER: _ClassVar[SubErrorCodes]
    FRAME_ENCODING_ERR: _ClassVar[SubErrorCodes]
    FRAME_DECODING_ERR: _ClassVar[SubErrorCodes]
    INCOMPATIBLE_HEADER_VERSION: _ClassVar[SubErrorCodes]
    UNSUPPORTED_FRAME_TYPE: _ClassVar[SubErrorCodes]
    UNREGISTERED_NOTIFICATION_RECEIVED: _ClassVar[SubErrorCodes]
    INVALID_SESSION: _ClassVar[SubErrorCodes]
    PAYLOAD_DECODING_ERR: _ClassVar[SubErrorCodes]
    UNREGISTERED_FRAME_RECEIVED: _ClassVar[SubErrorCodes]
    INVALID_PASSWORD: _ClassVar[SubErrorCodes]
    USER_NOT_FOUND: _ClassVar[SubErrorCodes]
    ENTITY_NOT_FOUND: _ClassVar[SubErrorCodes]
    ROBOT_MOVEMENT_IN_PROGRESS: _ClassVar[SubErrorCodes]
    ROBOT_NOT_MOVING: _ClassVar[SubErrorCodes]
    NO_MORE_STORAGE_SPACE: _ClassVar[SubErrorCodes]
    ROBOT_NOT_READY: _ClassVar[SubErrorCodes]
    ROBOT_IN_FAULT: _ClassVar[SubErrorCodes]
    ROBOT_IN_MAINTENANCE: _ClassVar[SubErrorCodes]
    ROBOT_IN_UPDATE_MODE: _ClassVar[SubErrorCodes]
    ROBOT_IN_EMERGENCY_STOP: _ClassVar[SubErrorCodes]
    SINGLE_LEVEL_SERVOING: _ClassVar[SubErrorCodes]
    LOW_LEVEL_SERVOING: _ClassVar[SubErrorCodes]
    MAPPING_GROUP_NON_ROOT: _ClassVar[SubErrorCodes]
    MAPPING_INVALID_GROUP: _ClassVar[SubErrorCodes]
    MAPPING_INVALID_MAP: _ClassVar[SubErrorCodes]
    MAP_GROUP_INVALID_MAP: _ClassVar[SubErrorCodes]
    MAP_GROUP_INVALID_PARENT: _ClassVar[SubErrorCodes]
    MAP_GROUP_INVALID_CHILD: _ClassVar[SubErrorCodes]
    MAP_GROUP_INVALID_MOVE: _ClassVar[SubErrorCodes]
    MAP_IN_USE: _ClassVar[SubErrorCodes]
    WIFI_CONNECT_ERROR: _ClassVar[SubErrorCodes]
    UNSUPPORTED_NETWORK_TYPE: _ClassVar[SubErrorCodes]
    TOO_LARGE_ENCODED_PAYLOAD_BUFFER: _ClassVar[SubErrorCodes]
    UPDATE_PERMISSION_DENIED: _ClassVar[SubErrorCodes]
    DELETE_PERMISSION_DENIED: _ClassVar[SubErrorCodes]
    DATABASE_ERROR: _ClassVar[SubErrorCodes]
    UNSUPPORTED_OPTION: _ClassVar[SubErrorCodes]
    UNSUPPORTED_RESOLUTION: _ClassVar[SubErrorCodes]
    UNSUPPORTED_FRAME_RATE: _ClassVar[SubErrorCodes]
    UNSUPPORTED_BIT_RATE: _ClassVar[SubErrorCodes]
    UNSUPPORTED_ACTION: _ClassVar[SubErrorCodes]
    UNSUPPORTED_FOCUS_ACTION: _ClassVar[SubErrorCodes]
    VALUE_IS_ABOVE_MAXIMUM: _ClassVar[SubErrorCodes]
    VALUE_IS_BELOW_MINIMUM: _ClassVar[SubErrorCodes]
    DEVICE_DISCONNECTED: _ClassVar[SubErrorCodes]
    DEVICE_NOT_READY: _ClassVar[SubErrorCodes]
    INVALID_DEVICE: _ClassVar[SubErrorCodes]
    SAFETY_THRESHOLD_REACHED: _ClassVar[SubErrorCodes]
    INVALID_USER_SESSION_ACCESS: _ClassVar[SubErrorCodes]
    CONTROL_MANUAL_STOP: _ClassVar[SubErrorCodes]
    CONTROL_OUTSIDE_WORKSPACE: _ClassVar[SubErrorCodes]
    CONTROL_ACTUATOR_COUNT_MISMATCH: _ClassVar[SubErrorCodes]
    CONTROL_INVALID_DURATION: _ClassVar[SubErrorCodes]
    CONTROL_INVALID_SPEED: _ClassVar[SubErrorCodes]
    CONTROL_LARGE_SPEED: _ClassVar[SubErrorCodes]
    CONTROL_INVALID_ACCELERATION: _ClassVar[SubErrorCodes]
    CONTROL_INVALID_TIME_STEP: _ClassVar[SubErrorCodes]
    CONTROL_LARGE_SIZE: _ClassVar[SubErrorCodes]
    CONTROL_WRONG_MODE: _ClassVar[SubErrorCodes]
    CONTROL_JOINT_POSITION_LIMIT: _ClassVar[SubErrorCodes]
    CONTROL_NO_FILE_IN_MEMORY: _ClassVar[SubErrorCodes]
    CONTROL_INDEX_OUT_OF_TRAJECTORY: _ClassVar[SubErrorCodes]
    CONTROL_ALREADY_RUNNING: _ClassVar[SubErrorCodes]
    CONTROL_WRONG_STARTING_POINT: _ClassVar[SubErrorCodes]
    CONTROL_CARTESIAN_CANNOT_START: _ClassVar[SubErrorCodes]
    CONTROL_UNDEFINED_CONSTRAINT: _ClassVar[SubErrorCodes]
    CONTROL_UNINITIALIZED: _ClassVar[SubErrorCodes]
    CONTROL_NO_ACTION: _ClassVar[SubErrorCodes]
    CONTROL_UNDEFINED: _ClassVar[SubErrorCodes]
    WRONG_SERVOING_MODE: _ClassVar[SubErrorCodes]
    CONTROL_WRONG_STARTING_SPEED: _ClassVar[SubErrorCodes]
    USERNAME_LENGTH_EXCEEDED: _ClassVar[SubErrorCodes]
    FIRSTNAME_LENGTH_EXCEEDED: _ClassVar[SubErrorCodes]
    LASTNAME_LENGTH_EXCEEDED: _ClassVar[SubErrorCodes]
    PASSWORD_LENGTH_EXCEEDED: _ClassVar[SubErrorCodes]
    USERNAME_ALREADY_EXISTS: _ClassVar[SubErrorCodes]
    USERNAME_EMPTY: _ClassVar[SubErrorCodes]
    PASSWORD_NOT_CHANGED: _ClassVar[SubErrorCodes]
    MAXIMUM_USER_PROFILES_USED: _ClassVar[SubErrorCodes]
    ROUTER_UNVAILABLE: _ClassVar[SubErrorCodes]
    ADDRESS_NOT_IN_VALID_RANGE: _ClassVar[SubErrorCodes]
    ADDRESS_NOT_CONFIGURABLE: _ClassVar[SubErrorCodes]
    SESSION_NOT_IN_CONTROL: _ClassVar[SubErrorCodes]
    METHOD_TIMEOUT: _ClassVar[SubErrorCodes]
    UNSUPPORTED_ROBOT_CONFIGURATION: _ClassVar[SubErrorCodes]
    NVRAM_READ_FAIL: _ClassVar[SubErrorCodes]
    NVRAM_WRITE_FAIL: _ClassVar[SubErrorCodes]
    NETWORK_NO_ADDRESS_ASSIGNED: _ClassVar[SubErrorCodes]
    READ_PERMISSION_DENIED: _ClassVar[SubErrorCodes]
    CONTROLLER_INVALID_MAPPING: _ClassVar[SubErrorCodes]
    ACTION_IN_USE: _ClassVar[SubErrorCodes]
    SEND_FAILED: _ClassVar[SubErrorCodes]
    CONTROL_WAYPOINT_TRAJECTORY_ABORTED: _ClassVar[SubErrorCodes]
    CONTROL_PERMISSION_DENIED: _ClassVar[SubErrorCodes]
    COLLISION_DETECTED: _ClassVar[SubErrorCodes]
    WRONG_MODE: _ClassVar[SubErrorCodes]
RESERVED_0: HeaderVersion
CURRENT_VERSION: HeaderVersion
RESERVED: FrameTypes
MSG_FRAME_REQUEST: FrameTypes
MSG_FRAME_RAW: FrameTypes
MSG_FRAME_RESPONSE: FrameTypes
MSG_FRAME_NOTIFICATION: FrameTypes
MSG_FRAME_PING: FrameTypes
MSG_FRAME_PONG: FrameTypes
ERROR_NONE: ErrorCodes
ERROR_PROTOCOL_SERVER: ErrorCodes
ERROR_PROTOCOL_CLIENT: ErrorCodes
ERROR_DEVICE: ErrorCodes
ERROR_INTERNAL: ErrorCodes
SUB_ERROR_NONE: SubErrorCodes
METHOD_FAILED: SubErrorCodes
UNIMPLEMENTED: SubErrorCodes
INVALID_PARAM: SubErrorCodes
UNSUPPORTED_SERVICE: SubErrorCodes
UNSUPPORTED_METHOD: SubErrorCodes
TOO_LARGE_ENCODED_FRAME_BUFFER: SubErrorCodes
FRAME_ENCODING_ERR: SubErrorCodes
FRAME_DECODING_ERR: SubErrorCodes
INCOMPATIBLE_HEADER_VERSION: SubErrorCodes
UNSUPPORTED_FRAME_TYPE: SubErrorCodes
UNREGISTERED_NOTIFICATION_RECEIVED: SubErrorCodes
INVALID_SESSION: SubErrorCodes
PAYLOAD_DECODING_ERR: SubErrorCodes
UNREGISTERED_FRAME_RECEIVED: SubErrorCodes
INVALID_PASSWORD: SubErrorCodes
USER_NOT_FOUND: SubErrorCodes
ENTITY_NOT_FOUND: SubErrorCodes
ROBOT_MOVEMENT_IN_PROGRESS: SubErrorCodes
ROBOT_NOT_MOVING: SubErrorCodes
NO_MORE_STORAGE_SPACE: SubErrorCodes
ROBOT_NOT_READY: SubErrorCodes
ROBOT_IN_FAULT: SubErrorCodes
ROBOT_IN_MAINTENANCE: SubErrorCodes
ROBOT_IN_UPDATE_MODE: SubErrorCodes
ROBOT_IN_EMERGENCY_STOP: SubErrorCodes
SINGLE_LEVEL_SERVOING: SubErrorCodes
LOW_LEVEL_SERVOING: SubErrorCodes
MAPPING_GROUP_NON_ROOT: SubErrorCodes
MAPPING_INVALID_GROUP: SubErrorCodes
MAPPING_INVALID_MAP: SubErrorCodes
MAP_GROUP_INVALID_MAP: SubErrorCodes
MAP_GROUP_INVALID_PARENT: SubErrorCodes
MAP_GROUP_INVALID_CHILD: SubErrorCodes
MAP_GROUP_INVALID_MOVE: SubErrorCodes
MAP_IN_USE: SubErrorCodes
WIFI_CONNECT_ERROR: SubErrorCodes
UNSUPPORTED_NETWORK_TYPE: SubErrorCodes
TOO_LARGE_ENCODED_PAYLOAD_BUFFER: SubErrorCodes
UPDATE_PERMISSION_DENIED: SubErrorCodes
DELETE_PERMISSION_DENIED: SubErrorCodes
DATABASE_ERROR: SubErrorCodes
UNSUPPORTED_OPTION: SubErrorCodes
UNSUPPORTED_RESOLUTION: SubErrorCodes
UNSUPPORTED_FRAME_RATE: SubErrorCodes
UNSUPPORTED_BIT_RATE: SubErrorCodes
UNSUPPORTED_ACTION: SubErrorCodes
UNSUPPORTED_FOCUS_ACTION: SubErrorCodes
VALUE_IS_ABOVE_MAXIMUM: SubErrorCodes
VALUE_IS_BELOW_MINIMUM: SubErrorCodes
DEVICE_DISCONNECTED: SubErrorCodes
DEVICE_NOT_READY: SubErrorCodes
INVALID_DEVICE: SubErrorCodes
SAFETY_THRESHOLD_REACHED: SubErrorCodes
INVALID_USER_SESSION_ACCESS: SubErrorCodes
CONTROL_MANUAL_STOP: SubErrorCodes
CONTROL_OUTSIDE_WORKSPACE: SubErrorCodes
CONTROL_ACTUATOR_COUNT_MISMATCH: SubErrorCodes
CONTROL_INVALID_DURATION: SubErrorCodes
CONTROL_INVALID_SPEED: SubErrorCodes
CONTROL_LARGE_SPEED: SubErrorCodes
CONTROL_INVALID_ACCELERATION: SubErrorCodes
CONTROL_INVALID_TIME_STEP: SubErrorCodes
CONTROL_LARGE_SIZE: SubErrorCodes
CONTROL_WRONG_MODE: SubErrorCodes
CONTROL_JOINT_POSITION_LIMIT: SubErrorCodes
CONTROL_NO_FILE_IN_MEMORY: SubErrorCodes
CONTROL_INDEX_OUT_OF_TRAJECTORY: SubErrorCodes
CONTROL_ALREADY_RUNNING: SubErrorCodes
CONTROL_WRONG_STARTING_POINT: SubErrorCodes
CONTROL_CARTESIAN_CANNOT_START: SubErrorCodes
CONTROL_UNDEFINED_CONSTRAINT: SubErrorCodes
CONTROL_UNINITIALIZED: SubErrorCodes
CONTROL_NO_ACTION: SubErrorCodes
CONTROL_UNDEFINED: SubErrorCodes
WRONG_SERVOING_MODE: SubErrorCodes
CONTROL_WRONG_STARTING_SPEED: SubErrorCodes
USERNAME_LENGTH_EXCEEDED: SubErrorCodes
FIRSTNAME_LENGTH_EXCEEDED: SubErrorCodes
LASTNAME_LENGTH_EXCEEDED: SubErrorCodes
PASSWORD_LENGTH_EXCEEDED: SubErrorCodes
USERNAME_ALREADY_EXISTS: SubErrorCodes
USERNAME_EMPTY: SubErrorCodes
PASSWORD_NOT_CHANGED: SubErrorCodes
MAXIMUM_USER_PROFILES_USED: SubErrorCodes
ROUTER_UNVAILABLE: SubErrorCodes
ADDRESS_NOT_IN_VALID_RANGE: SubErrorCodes
ADDRESS_NOT_CONFIGURABLE: SubErrorCodes
SESSION_NOT_IN_CONTROL: SubErrorCodes
METHOD_TIMEOUT: SubErrorCodes
UNSUPPORTED_ROBOT_CONFIGURATION: SubErrorCodes
NVRAM_READ_FAIL: SubErrorCodes
NVRAM_WRITE_FAIL: SubErrorCodes
NETWORK_NO_ADDRESS_ASSIGNED: SubErrorCodes
READ_PERMISSION_DENIED: SubErrorCodes
CONTROLLER_INVALID_MAPPING: SubErrorCodes
ACTION_IN_USE: SubErrorCodes
SEND_FAILED: SubErrorCodes
CONTROL_WAYPOINT_TRAJECTORY_ABORTED: SubErrorCodes
CONTROL_PERMISSION_DENIED: SubErrorCodes
COLLISION_DETECTED: SubErrorCodes
WRONG_MODE: SubErrorCodes

class Frame(_message.Message):
    __slots__ = ("header", "payload")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    header: Header
    payload: bytes
    def __init__(self, header: _Optional[_Union[Header, _Mapping]] = ..., payload: _Optional[bytes] = ...) -> None: ...

class Header(_message.Message):
    __slots__ = ("frame_info", "message_info", "service_info", "payload_info")
    FRAME_INFO_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_INFO_FIELD_NUMBER: _ClassVar[int]
    SERVICE_INFO_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_INFO_FIELD_NUMBER: _ClassVar[int]
    frame_info: int
    message_info: int
    service_info: int
    payload_info: int
    def __init__(self, frame_info: _Optional[int] = ..., message_info: _Optional[int] = ..., service_info: _Optional[int] = ..., payload_info: _Optional[int] = ...) -> None: ...

class Error(_message.Message):
    __slots__ = ("error_code", "error_sub_code", "error_sub_string")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_SUB_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_SUB_STRING_FIELD_NUMBER: _ClassVar[int]
    error_code: ErrorCodes
    error_sub_code: int
    error_sub_string: str
    def __init__(self, error_code: _Optional[_Union[ErrorCodes, str]] = ..., error_sub_code: _Optional[int] = ..., error_sub_string: _Optional[str] = ...) -> None: ...

class PayloadFrameTypeRaw(_message.Message):
    __slots__ = ("topic", "payload")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    topic: str
    payload: bytes
    def __init__(self, topic: _Optional[str] = ..., payload: _Optional[bytes] = ...) -> None: ...
