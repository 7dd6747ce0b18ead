"""A gateway stopping while the arm is slow: the wrist's outputs still reach 0, and the log says so only if the arm did.

The supervisor runs in-process, as the daemon runs it at SIGTERM (`Supervisor.stop`), against the
simulated arm made slow (`ArmFaults.udp_request_delay_s`): the arm acts on each BaseCyclic request
later than the adapter's RPC timeout, while it handles TCP requests (SetServoingMode) at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from devices.kortex.options import KortexOptions
from devices.registry import KINDS
from devices.sim.kortex_arm import SimulatedArm
from gateway.bus import Bus
from gateway.core.adapter import Command
from gateway.core.config import DeviceConfig, SupervisorConfig
from gateway.messages.kortex import Command as C61Command
from gateway.supervisor import ESTOP_AT_STOP_S, Supervisor
from protocols.kortex.generated import Base_pb2
from tests.harness import until


@pytest.fixture
async def arm() -> AsyncIterator[SimulatedArm]:
    simulated = SimulatedArm("kortex3")
    await simulated.start()
    yield simulated
    await simulated.stop()


async def _supervised_arm_with_outputs_on(arm: SimulatedArm) -> Supervisor:
    """A supervisor running arm-1 on `arm`, with a client's wrist outputs on at the arm."""
    options = KortexOptions(
        host="127.0.0.1",
        tcp_port=arm.tcp_port,
        udp_port=arm.udp_port,
        username="admin",
        password="admin",
        api="kortex3",
        transport="tcp",
    )
    supervisor = Supervisor(Bus(), SupervisorConfig(), [DeviceConfig("arm-1", "kortex", True, options)], KINDS)
    supervisor.start()
    handle = supervisor.devices["arm-1"]
    await until(lambda: handle.status == "connected", "arm-1 connected")
    outputs = C61Command(digital_outputs_state=0b0110, analog_output_a_channel_1_value=2.0)
    command = Command("kortex/WristCyclicC61/Command", outputs, "client-1", time.monotonic() + 5)
    await handle.adapter.handle_command(command)
    await until(lambda: arm.wrist.digital_outputs_state == 0b0110, "wrist outputs on at the arm")
    return supervisor


def _safe_state_lines(caplog: pytest.LogCaptureFixture) -> dict[str, Any]:
    """The supervisor's safe-state record of each device (its `extra` fields are attributes)."""
    return {record.__dict__["device"]: record for record in caplog.records if hasattr(record, "safe_state")}


#: Slower than the 0.5 s an RPC may take at shutdown; the second also outlasts the e-stop's 1 s bound.
@pytest.mark.parametrize("delay_s", [0.8, 1.3])
async def test_a_slow_arm_still_gets_its_outputs_to_0_before_the_gateway_leaves_low_level(
    arm: SimulatedArm, caplog: pytest.LogCaptureFixture, delay_s: float
) -> None:
    caplog.set_level(logging.INFO)
    supervisor = await _supervised_arm_with_outputs_on(arm)
    arm.faults.udp_request_delay_s = delay_s
    await supervisor.stop()
    assert arm.wrist.digital_outputs_state == 0
    assert arm.wrist.analog_output_a_channel_1_value == 0.0
    # Low level was left after the zeroing Refresh was handled, not before (it would have been refused).
    assert arm.servoing_modes == [Base_pb2.LOW_LEVEL_SERVOING, Base_pb2.SINGLE_LEVEL_SERVOING]
    if delay_s > ESTOP_AT_STOP_S:  # the supervisor cut the e-stop short: the leave it began went on
        assert any("e-stop at shutdown failed" in record.getMessage() for record in caplog.records)
    line = _safe_state_lines(caplog)["arm-1"]
    assert line.safe_state == "ok", line.getMessage()
    assert line.outputs["digital_outputs_state"] == 0


async def test_an_arm_that_never_acts_on_the_zeroing_is_logged_as_unconfirmed_and_the_stop_stays_bounded(
    arm: SimulatedArm, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    supervisor = await _supervised_arm_with_outputs_on(arm)
    arm.faults.udp_request_delay_s = 3600.0  # the arm handles no more BaseCyclic request
    started = time.monotonic()
    await supervisor.stop()
    took = time.monotonic() - started
    # The gateway could not zero them: the outputs are still on at the arm, and the log must not say otherwise.
    assert arm.wrist.digital_outputs_state == 0b0110
    line = _safe_state_lines(caplog)["arm-1"]
    assert line.safe_state == "unconfirmed", line.getMessage()
    assert "unconfirmed" in line.getMessage()
    # The e-stop, the cancelled task and the close each have their bound (1 + 1 + 3 s); a hang guard.
    assert took < 8.0
