"""Kortex behaviour checked against Kinova's public code, not against our own adapter.

Byte tables are written by hand from the vendor's field numbers and bit layouts:
- Kortex API 3.4 C++ headers in Kinovarobotics/ros2_link6, kortex3_hardware/third_party/kortex3/include/
  (messages/Base.pb.h ArmStateNotification, messages/Common.pb.h NotificationInformation and ArmState,
  messages/BaseCyclic.pb.h BaseFeedback, client_stubs/BaseClientRpc.h eUidApplyQuickStop = 0x20091);
- kortex_api 2.6 Python (FrameHandler.manageReceivedFrame: only a non-zero errorCode nibble fails a
  request); ros_kortex kortex_driver/protos/Base.proto (ApplyEmergencyStop, RPC_ID 145 = 0x91);
- Kinovarobotics/ros2_link6 kortex3_hardware/src/kortex3_hardware_interface_low_level.cpp (RefreshFeedback
  unless low-level control is running, where Refresh carries position commands);
- Kinovarobotics/Kinova-Kortex3-Link6 (commit 5885e5a8d783100cf8f1d49ae1fb409653685370)
  api_cpp/300-Low_Level/01-low_level_cyclic_control/main.cpp: SelectOperatingMode(HOLD_TO_RUN), "required
  on some firmware versions before entering LOW_LEVEL_SERVOING", then SetServoingMode(LOW_LEVEL_SERVOING);
  on the way out SetServoingMode(SINGLE_LEVEL_SERVOING). The operating mode the arm had before is
  selected again after that, as ros2_link6's low-level driver selects its resting mode after leaving
  low level (SetServoingMode(SINGLE_LEVEL_SERVOING), then SelectOperatingMode).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from devices.kortex import convert
from devices.kortex.adapter import KortexAdapter
from devices.kortex.connection import KortexConnection
from devices.kortex.errors import KortexRequestError
from devices.kortex.options import KortexOptions
from devices.kortex.transport import open_tcp
from devices.sim.kortex_arm import ArmFaults, SimulatedArm
from gateway.messages.generic import Led
from gateway.messages.kortex import ArmStateNotification, BaseFeedback, Timestamp
from gateway.messages.kortex import Command as C61Command
from gateway.messages.schema import from_plain, to_plain
from protocols.errors import ProtocolError
from protocols.kortex.frame import decode_error, encode_frame, parse_payload
from protocols.kortex.generated import (
    Base_pb2,
    BaseCyclic_pb2,
    BaseCyclicKortex3_pb2,
    BaseKortex3_pb2,
    CommonKortex3_pb2,
)
from protocols.kortex.header import Header
from protocols.kortex.router import ErrorResponse, Response, Router
from protocols.kortex.services import STOP_RPC_NAMES, ApiVersion, Function, function_name
from tests.adapter_rig import AdapterRig
from tests.fuzzing import fuzz_settings
from tests.test_kortex_codec import GOLDEN_CREATE_SESSION_FRAME
from tests.test_kortex_sim import udp_exchange

# -- byte tables ---------------------------------------------------------------------------------------

#: Kortex 3 ArmStateNotification: active_state (1, varint) = 12 ARMSTATE_ARM_OPERATIONAL; generic_info
#: (4, 12 bytes) = {severity (1) = 1 NOTIF_INFO, timestamp (2, 8 bytes) = {sec (1) = 1700000000, usec (2) = 5}}.
ARM_STATE_KORTEX3 = bytes.fromhex("080c220c080112080880e2cfaa061005")
#: Kortex 3 BaseCyclic.Feedback: base (2, 10 bytes) = {active_state (2) = 12, arm_voltage (3, float) = 24.0,
#: is_emergency_stop_activated (48: tag 48 << 3 | 0 = 0x180, varint 80 03) = true}.
FEEDBACK_ESTOP_KORTEX3 = bytes.fromhex("120a100c1d0000c041800301")
#: A KeepAlive response, session 3, message 1: frame_info 0x13000005 (version 1, RESPONSE, error code 0,
#: sub-code 5), message_info 0x00030001, service_info 0x10010003.
RESPONSE_SUB_CODE_ONLY = bytes.fromhex("0a0f0d0500001315010003001d03000110")
#: The same with error code 3 (ERROR_DEVICE) and sub-code 0: frame_info 0x13003000.
RESPONSE_ERROR_CODE_ONLY = bytes.fromhex("0a0f0d0030001315010003001d03000110")
#: The stop request at 0x20091, session 0, message 1, no payload: service_info 0x10020091.
STOP_REQUEST = bytes.fromhex("0a0f0d0000001115010000001d91000210")


def test_kortex3_arm_state_notification_layout() -> None:
    notification = BaseKortex3_pb2.ArmStateNotification.FromString(ARM_STATE_KORTEX3)
    assert convert.arm_state(notification) == ArmStateNotification(
        active_state=12, timestamp=Timestamp(sec=1_700_000_000, usec=5)
    )
    assert CommonKortex3_pb2.ArmState.Name(12) == "ARMSTATE_ARM_OPERATIONAL"
    # Read with the Kortex 2 layout (timestamp at field 2), the same bytes lose the timestamp.
    kortex2 = convert.arm_state(Base_pb2.ArmStateNotification.FromString(ARM_STATE_KORTEX3))
    assert (kortex2.active_state, kortex2.timestamp.sec, kortex2.timestamp.usec) == (12, 0, 0)


def test_arm_states_per_api_version() -> None:
    kortex3 = dict(CommonKortex3_pb2.ArmState.items())
    assert kortex3["ARMSTATE_POSITION_UNKNOWN"] == 11
    assert kortex3["ARMSTATE_IN_UNRECOVERABLE_FAULT"] == 17
    assert "ARMSTATE_RESERVED" not in kortex3  # 255 is Kortex 2 only
    # Every Kortex 3 state has its constant on the bus type, under the vendor's name.
    for name, value in kortex3.items():
        assert getattr(ArmStateNotification, name) == value


def test_kortex3_feedback_emergency_stop_field() -> None:
    feedback = BaseCyclicKortex3_pb2.Feedback.FromString(FEEDBACK_ESTOP_KORTEX3)
    base = convert.base_feedback(feedback.base)
    assert base == BaseFeedback(active_state=12, arm_voltage=24.0, is_emergency_stop_activated=True)
    # Kortex 2's BaseFeedback has no field 48: it is skipped, and the bus says false.
    kortex2 = BaseCyclic_pb2.Feedback.FromString(FEEDBACK_ESTOP_KORTEX3)
    assert convert.base_feedback(kortex2.base).is_emergency_stop_activated is False


def test_error_code_zero_with_a_sub_code_is_success() -> None:
    router = Router()
    event = router.receive(RESPONSE_SUB_CODE_ONLY)
    assert isinstance(event, Response)
    assert (event.message_id, event.frame.header.error_sub_code) == (1, 5)
    assert router.session_id == 3  # a success teaches the session id
    refused = router.receive(RESPONSE_ERROR_CODE_ONLY)
    assert isinstance(refused, ErrorResponse)
    assert (refused.error.error_name, refused.error.sub_code) == ("ERROR_DEVICE", 0)


def test_stop_rpc_named_per_api_version() -> None:
    message_id, frame = Router().request(Function.BASE_APPLY_EMERGENCY_STOP)
    assert (message_id, frame) == (1, STOP_REQUEST)
    assert function_name(0x20091, "kortex2") == "BASE_APPLY_EMERGENCY_STOP"
    assert function_name(0x20091, "kortex3") == "BASE_APPLY_QUICK_STOP"
    assert function_name(0x30003, "kortex3") == "BASE_CYCLIC_REFRESH_FEEDBACK"
    assert function_name(0x2C0003, "kortex3") == "function 0x2c0003"
    assert STOP_RPC_NAMES == {"kortex2": "Base.ApplyEmergencyStop", "kortex3": "Base.ApplyQuickStop"}


@given(st.binary(max_size=300))
@pytest.mark.fuzz
@fuzz_settings(200)
def test_no_payload_crashes_the_kortex3_state_decoders(data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        state = convert.arm_state(parse_payload(BaseKortex3_pb2.ArmStateNotification, data))
        assert from_plain(ArmStateNotification, to_plain(state)) == state
    with contextlib.suppress(ProtocolError):
        base = convert.base_feedback(parse_payload(BaseCyclicKortex3_pb2.Feedback, data).base)
        assert base.active_state >= 0
        assert 0 <= base.fault_bank_a <= 0xFFFFFFFF


# -- the simulated arm, over a raw socket ---------------------------------------------------------------


@pytest.mark.parametrize("api", ["kortex2", "kortex3"])
async def test_sim_refuses_refresh_outside_low_level_and_answers_refresh_feedback(api: Any) -> None:
    arm = SimulatedArm(api)
    await arm.start()
    loop = asyncio.get_running_loop()
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.settimeout(2)
            sock.bind(("127.0.0.1", 0))
            created = await loop.run_in_executor(None, udp_exchange, arm, sock, GOLDEN_CREATE_SESSION_FRAME)
            sid = created.header.session_id

            def request(message: int, function: int, payload: bytes = b"") -> Any:
                header = Header(1, sid, message, function >> 16, function & 0xFFFF)
                return udp_exchange(arm, sock, encode_frame(header, payload))

            refused = await loop.run_in_executor(None, request, 2, Function.BASE_CYCLIC_REFRESH)
            assert decode_error(refused).sub_name == "WRONG_SERVOING_MODE"
            feedback = await loop.run_in_executor(None, request, 3, Function.BASE_CYCLIC_REFRESH_FEEDBACK)
            assert not feedback.is_error
            low = Base_pb2.ServoingModeInformation(servoing_mode=Base_pb2.LOW_LEVEL_SERVOING).SerializeToString()
            if api == "kortex3":
                # Kinova-Kortex3-Link6 api_cpp/300-Low_Level/01-low_level_cyclic_control/main.cpp selects
                # HOLD_TO_RUN first, "required on some firmware versions": the simulated arm is one of those.
                refused_mode = await loop.run_in_executor(None, request, 20, Function.BASE_SET_SERVOING_MODE, low)
                assert decode_error(refused_mode).sub_name == "WRONG_MODE"
                hold = CommonKortex3_pb2.ModeSelection(operating_mode=CommonKortex3_pb2.OPERATING_MODE_HOLD_TO_RUN)
                selected = await loop.run_in_executor(
                    None, request, 21, Function.BASE_SELECT_OPERATING_MODE, hold.SerializeToString()
                )
                assert not selected.is_error
            await loop.run_in_executor(None, request, 4, Function.BASE_SET_SERVOING_MODE, low)
            answered = await loop.run_in_executor(None, request, 5, Function.BASE_CYCLIC_REFRESH)
            assert not answered.is_error
            # RefreshFeedback stays allowed in low level (the vendor's driver uses it there).
            also = await loop.run_in_executor(None, request, 6, Function.BASE_CYCLIC_REFRESH_FEEDBACK)
            assert not also.is_error
    finally:
        await arm.stop()


async def test_refusals_of_the_stop_rpc_name_it_per_api_version() -> None:
    arm = SimulatedArm("kortex3")
    await arm.start()
    try:
        names: dict[ApiVersion, str] = {"kortex2": "BASE_APPLY_EMERGENCY_STOP", "kortex3": "BASE_APPLY_QUICK_STOP"}
        for api, name in names.items():
            connection = KortexConnection("probe", api=api, rpc_timeout_s=1.0)
            await open_tcp(connection, "127.0.0.1", arm.tcp_port, 1.0)
            try:
                with pytest.raises(KortexRequestError, match=f"robot refused {name}: .*INVALID_SESSION"):
                    await connection.call(Function.BASE_APPLY_EMERGENCY_STOP)  # no session yet
            finally:
                connection.close()
    finally:
        await arm.stop()


# -- the adapter against the simulated arm ---------------------------------------------------------------


class Device(AdapterRig[KortexAdapter]):
    def __init__(self, options: KortexOptions) -> None:
        super().__init__(KortexAdapter, "arm-1", options)


def options_for(arm: SimulatedArm, **overrides: Any) -> KortexOptions:
    values: dict[str, Any] = {"host": "127.0.0.1", "tcp_port": arm.tcp_port, "udp_port": arm.udp_port, "api": arm.api}
    values |= {"username": "admin", "password": "admin"}  # the simulated arm's credentials
    return KortexOptions(**{**values, "cyclic_rate_hz": 500.0, "transport": "tcp", **overrides})  # the TCP path


async def started(api: Any, **faults: Any) -> tuple[SimulatedArm, Device]:
    arm = SimulatedArm(api, faults=ArmFaults(**faults))
    await arm.start()
    device = Device(options_for(arm))
    device.start()
    await device.connected()
    return arm, device


SELECT, SET_SERVOING = Function.BASE_SELECT_OPERATING_MODE, Function.BASE_SET_SERVOING_MODE
HOLD_TO_RUN = CommonKortex3_pb2.OPERATING_MODE_HOLD_TO_RUN
MONITORED_STOP = CommonKortex3_pb2.OPERATING_MODE_MONITORED_STOP


async def test_kortex3_restores_whatever_operating_mode_the_arm_was_in() -> None:
    arm, device = await started("kortex3")
    arm.operating_mode = CommonKortex3_pb2.OPERATING_MODE_AUTO  # chosen on the pendant, say
    try:
        await device.until(lambda: device.latest("actuators") is not None)
        await device.command(C61Command(digital_outputs_state=0x1), "kortex/WristCyclicC61/Command", client="c1")
        assert arm.operating_mode == HOLD_TO_RUN
        device.adapter.release("c1")
        await device.until(lambda: arm.operating_mode == CommonKortex3_pb2.OPERATING_MODE_AUTO)
        assert arm.mode_calls[-2:] == [
            (SET_SERVOING, Base_pb2.SINGLE_LEVEL_SERVOING),
            (SELECT, CommonKortex3_pb2.OPERATING_MODE_AUTO),
        ]
    finally:
        await device.stop()
        await arm.stop()


def cyclic_errors(device: Device) -> int:
    cyclic = device.adapter._cyclic
    assert cyclic is not None
    return cyclic.counters.errors


async def test_kortex3_refresh_only_in_low_level_while_the_wrist_is_commanded() -> None:
    arm, device = await started("kortex3")
    try:
        await device.until(lambda: arm.requests[Function.BASE_CYCLIC_REFRESH_FEEDBACK] > 50)
        await device.until(lambda: device.latest("actuators") is not None)
        # No command yet: RefreshFeedback only, single-level servoing untouched.
        assert arm.requests[Function.BASE_CYCLIC_REFRESH] == 0
        assert arm.servoing_modes == []
        held = [actuator.position for actuator in device.latest("actuators").actuators]
        command = C61Command(digital_outputs_state=0b1001, led_ring_rgb=0x0000FF)
        await device.command(command, "kortex/WristCyclicC61/Command", client="c1")
        await device.command(Led(rgb=(0.0, 1.0, 0.0)), "led", client="c2")
        assert arm.servoing_modes == [Base_pb2.LOW_LEVEL_SERVOING]  # entered once, before the first Refresh
        # Kinova's order: HOLD_TO_RUN, then low level.
        assert arm.mode_calls == [(SELECT, HOLD_TO_RUN), (SET_SERVOING, Base_pb2.LOW_LEVEL_SERVOING)]
        await device.until(lambda: arm.requests[Function.BASE_CYCLIC_REFRESH] > 20)
        # Every actuator is commanded to hold where it was (the sim's feedback follows the command).
        assert arm.actuator_targets == pytest.approx(held, abs=1.0)
        assert len(arm.actuator_targets or []) == 7
        assert (arm.wrist.digital_outputs_state, arm.wrist.led_ring_rgb) == (0b1001, 0x00FF00)
        device.adapter.release("c1")  # c2 (the LED) still holds low level
        await device.until(lambda: arm.wrist.digital_outputs_state == 0)
        assert arm.servoing_modes == [Base_pb2.LOW_LEVEL_SERVOING]
        device.adapter.release("c2")
        await device.until(lambda: len(arm.operating_modes) == 2)
        assert arm.servoing_modes[-1] == Base_pb2.SINGLE_LEVEL_SERVOING
        # Undone the other way round: single level, then the operating mode the arm had (MONITORED_STOP).
        assert arm.mode_calls[2:] == [(SET_SERVOING, Base_pb2.SINGLE_LEVEL_SERVOING), (SELECT, MONITORED_STOP)]
        assert arm.operating_mode == MONITORED_STOP
        refreshes = arm.requests[Function.BASE_CYCLIC_REFRESH]
        await asyncio.sleep(0.1)
        assert arm.requests[Function.BASE_CYCLIC_REFRESH] == refreshes
        assert arm.actuator_targets is None
        assert cyclic_errors(device) == 0  # no Refresh was ever refused
    finally:
        await device.stop()
        await arm.stop()


async def test_kortex3_shutdown_leaves_low_level_after_zeroing_the_outputs() -> None:
    arm, device = await started("kortex3")
    try:
        await device.until(lambda: device.latest("actuators") is not None)
        await device.command(C61Command(digital_outputs_state=0xF), "kortex/WristCyclicC61/Command", client="c1")
    finally:
        await device.stop()
    try:
        assert arm.servoing_modes == [Base_pb2.LOW_LEVEL_SERVOING, Base_pb2.SINGLE_LEVEL_SERVOING]
        assert arm.operating_modes == [HOLD_TO_RUN, MONITORED_STOP]
        assert arm.wrist.digital_outputs_state == 0
        assert arm.sessions == {}
    finally:
        await arm.stop()


async def test_kortex3_link_loss_in_low_level_leaves_it_on_reconnecting() -> None:
    arm, device = await started("kortex3")
    try:
        await device.until(lambda: device.latest("actuators") is not None)
        await device.command(C61Command(digital_outputs_state=0x3), "kortex/WristCyclicC61/Command", client="c1")
        arm.close_tcp_connections()  # SetServoingMode travels on TCP: it cannot be sent now
        assert device.task is not None
        with pytest.raises(ConnectionError, match="TCP link lost"):
            async with asyncio.timeout(2):
                await device.task
        assert arm.wrist.digital_outputs_state == 0  # the last Refresh went out on UDP
        assert arm.servoing_modes == [Base_pb2.LOW_LEVEL_SERVOING]
        assert arm.operating_mode == HOLD_TO_RUN  # the link went before it could be undone
        device.start()
        await device.connected()
        assert arm.servoing_modes == [Base_pb2.LOW_LEVEL_SERVOING, Base_pb2.SINGLE_LEVEL_SERVOING]
        assert arm.operating_modes == [HOLD_TO_RUN, MONITORED_STOP]  # undone on reconnecting
        await asyncio.sleep(0.1)
        assert cyclic_errors(device) == 0
    finally:
        await device.stop()
        await arm.stop()


async def test_kortex3_publishes_the_emergency_stop_state_and_the_arm_state_timestamp() -> None:
    arm, device = await started("kortex3")
    try:
        await device.until(lambda: device.latest("base") is not None)
        assert device.latest("base").is_emergency_stop_activated is False
        arm.press_emergency_stop()
        await device.until(lambda: device.latest("base").is_emergency_stop_activated)
        assert device.latest("base").active_state == ArmStateNotification.ARMSTATE_IN_FAULT
        arm.set_arm_state(CommonKortex3_pb2.ARMSTATE_ARM_OPERATIONAL, stamp=1_700_000_000.000005)
        await device.until(lambda: device.latest("arm_state").active_state == 12)
        assert device.latest("arm_state").timestamp == Timestamp(sec=1_700_000_000, usec=5)
    finally:
        await device.stop()
        await arm.stop()


async def test_kortex2_base_feedback_has_no_emergency_stop_field() -> None:
    arm, device = await started("kortex2")
    try:
        await device.until(lambda: device.latest("base") is not None)
        arm.press_emergency_stop()
        await device.until(lambda: device.latest("base").active_state == ArmStateNotification.ARMSTATE_IN_FAULT)
        assert device.latest("base").is_emergency_stop_activated is False
        assert device.latest("base").arm_voltage == pytest.approx(24.0)
    finally:
        await device.stop()
        await arm.stop()


@pytest.mark.parametrize("api", ["kortex2", "kortex3"])
async def test_successes_with_a_sub_code_keep_the_arm_connected(api: Any) -> None:
    arm, device = await started(api, success_sub_code=5)
    try:
        cyclic = device.adapter._cyclic
        assert cyclic is not None
        await device.until(lambda: cyclic.counters.replies > 20)
        assert cyclic.counters.errors == 0
        assert device.adapter._arm_state_handle is not None  # ArmStateTopic's answer was taken too
    finally:
        await device.stop()
        await arm.stop()
