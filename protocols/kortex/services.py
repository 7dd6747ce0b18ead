"""Kortex service ids and the function UIDs the gateway calls (spec kortex.md §2.1, §3.1-3.2, §4.2).

A function UID is ``service_id << 16 | rpc_id``; it fills the low 28 bits of service_info.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Literal

#: The two API generations: Kortex 2 (Gen3, Gen3 lite; kortex_api 2.x) and Kortex 3 (Link 6; API 3.x).
ApiVersion = Literal["kortex2", "kortex3"]


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
    #: Kortex 2: ApplyEmergencyStop, RPC_ID 145 in ros_kortex kortex_driver/protos/Base.proto ("Stops
    #: robot movement and activates emergency stop state ... Use ClearFaults() to clear the stop").
    #: Kortex 3 (API 3.4) gives the same UID to ApplyQuickStop (ros2_link6 kortex3_hardware/third_party/
    #: kortex3/include/client_stubs/BaseClientRpc.h, eUidApplyQuickStop = 0x20091; common/
    #: GeneratedConstants.h names it "Base::ApplyQuickStop"); `function_name` names it per version.
    BASE_APPLY_EMERGENCY_STOP = 0x20091
    BASE_SET_SERVOING_MODE = 0x20098
    #: GetServoingMode (Empty -> ServoingModeInformation): RPC_ID 153 in ros_kortex kortex_driver/
    #: protos/Base.proto; eUidGetServoingMode = 0x20099 in the Kortex 2 and Kortex 3 client stubs.
    BASE_GET_SERVOING_MODE = 0x20099
    BASE_ARM_STATE_TOPIC = 0x200B0
    #: Kortex 3 only: SelectOperatingMode (Common.ModeSelection -> Empty) and GetCurrentOperatingMode
    #: (Empty -> Common.ModeSelection), eUidSelectOperatingMode = 0x200f3 and eUidGetCurrentOperatingMode
    #: = 0x200f6 in ros2_link6 kortex3_hardware/third_party/kortex3/include/client_stubs/BaseClientRpc.h.
    BASE_SELECT_OPERATING_MODE = 0x200F3
    BASE_GET_CURRENT_OPERATING_MODE = 0x200F6
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


#: Function UIDs whose name differs on Kortex 3 (the enum carries the Kortex 2 names).
_KORTEX3_NAMES = {Function.BASE_APPLY_EMERGENCY_STOP.value: "BASE_APPLY_QUICK_STOP"}
#: The vendor's names of the stop RPC at 0x20091, per API version.
STOP_RPC_NAMES: dict[ApiVersion, str] = {"kortex2": "Base.ApplyEmergencyStop", "kortex3": "Base.ApplyQuickStop"}


def function_name(function_uid: int, api: ApiVersion = "kortex2") -> str:
    """The name of a function UID in API `api` (`BASE_APPLY_QUICK_STOP` for 0x20091 on Kortex 3).

    A UID this gateway has no name for is given in hex, e.g. ``function 0x2c0003``.
    """
    if api == "kortex3" and function_uid in _KORTEX3_NAMES:
        return _KORTEX3_NAMES[function_uid]
    try:
        return Function(function_uid).name
    except ValueError:
        return f"function {function_uid:#x}"
