"""Kortex service ids and the function UIDs the gateway calls (spec kortex.md §2.1, §3.1-3.2, §4.2).

A function UID is ``service_id << 16 | rpc_id``; it fills the low 28 bits of service_info.
"""

from __future__ import annotations

from enum import IntEnum


class ServiceId(IntEnum):
    """Service ids (the .proto files' ``@PROXY_ID``)."""

    SESSION = 1
    BASE = 2
    BASE_CYCLIC = 3
    ACTUATOR_CYCLIC = 11
    INTERCONNECT_CYCLIC = 15
    GRIPPER_CYCLIC = 17
    DEVICE_MANAGER = 23
    WRIST_CYCLIC = 39
    WRIST_CONFIG_C61 = 44


class Function(IntEnum):
    """Function UIDs, named ``<SERVICE>_<RPC>``."""

    SESSION_CREATE_SESSION = 0x10001
    SESSION_CLOSE_SESSION = 0x10002
    SESSION_KEEP_ALIVE = 0x10003
    SESSION_GET_CONNECTIONS = 0x10004
    BASE_UNSUBSCRIBE = 0x20061
    #: RPC_ID 145 in the vendor's Kortex 2 Base.proto ([PROTO]); not in the notes' tables, unverified on Kortex 3.
    BASE_APPLY_EMERGENCY_STOP = 0x20091
    BASE_SET_SERVOING_MODE = 0x20098
    BASE_ARM_STATE_TOPIC = 0x200B0
    BASE_CYCLIC_REFRESH = 0x30001
    BASE_CYCLIC_REFRESH_COMMAND = 0x30002
    BASE_CYCLIC_REFRESH_FEEDBACK = 0x30003
    BASE_CYCLIC_REFRESH_CUSTOM_DATA = 0x30004

    @property
    def service_id(self) -> int:
        """The service this function belongs to."""
        return self.value >> 16

    @property
    def function_id(self) -> int:
        """The function's id within its service (the RPC_ID)."""
        return self.value & 0xFFFF
