"""Config of a `kind = "aseba"` device: one Aseba link (serial port or TCP connection)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Literal

from devices.aseba.transport import parse_target


@dataclass(frozen=True, slots=True)
class AsebaOptions:
    """Config of one Aseba link, which may carry several nodes.

    `target`: where the link goes, in Dashel style: ``tcp:HOST;PORT`` (also ``tcp:host=H;port=P``),
    ``ser:device=/dev/ttyACM0`` (also ``ser:/dev/ttyACM0`` or a bare device path); empty: the
    first Thymio II (USB 0617:000A) or wireless dongle (0617:000C) found on USB.
    `node_id`: the node the asebaros services (GetDescription, GetVariable, SetVariable) and sent
    events address, and the device is connected only while it is on the link; 0: the node with the
    lowest id (connected while any described node is).
    `list_nodes_period_ms`: how often ListNodes is broadcast (discovery and keep-alive).
    `node_timeout_ms`: a node silent for this long is reported disconnected (time the gateway itself was
    stalled is not counted: `gateway.silence`).
    `request_timeout_ms`: wait for a description or a Variables reply.
    `connect_timeout_ms`: wait for the TCP connection or the serial port to open.
    `thymio_program`: load the gateway's Thymio program (`devices.aseba.thymio_program`) on every
    `thymio-II` node when it connects; it replaces the robot's running program and enables the
    thymio_msgs commands. `state_period_ms`: how often that program reports the robot's state.
    `motor_lease_ms`: a client that sets `motor.left.target` or `motor.right.target` (SetVariable)
    holds the motors for this long; they stop when it runs out, when the client disconnects, on
    estop and at shutdown. Every new non-zero setting renews it.
    `script_folders`: the folders LoadScript may read .aesl files from (`file_name` is resolved
    inside them; any other file is refused). Empty: LoadScript is refused.
    `simulate`: ignore `target` and start a simulated Thymio II (`devices.sim.thymio`, the Python
    Aseba VM behind a TCP server on 127.0.0.1) in the gateway (demo); it accepts `hwgateway/SimButton`.
    `sim_motion`: "rest", or "demo": the simulated Thymio presses one touch button after another.
    `sim_uuid`: the UUID the simulated Thymio answers GetDeviceInfo with (text, e.g.
    ``"2b9e1c3a-0d4f-4e8b-9a6c-5f7e2d1b3c4a"``); empty: one derived from the device id, the same on
    every run. Two simulated devices with the same `sim_uuid` are one robot on two links.
    """

    target: str = ""
    node_id: int = field(default=0, metadata={"min": 0, "max": 65535})
    list_nodes_period_ms: int = field(default=1000, metadata={"min": 100, "max": 60000})
    node_timeout_ms: int = field(default=3000, metadata={"min": 500, "max": 600_000})
    request_timeout_ms: int = field(default=2000, metadata={"min": 50, "max": 60000})
    connect_timeout_ms: int = field(default=5000, metadata={"min": 100, "max": 60000})
    thymio_program: bool = True
    state_period_ms: int = field(default=100, metadata={"min": 20, "max": 10000})
    motor_lease_ms: int = field(default=1000, metadata={"min": 100, "max": 600_000})
    script_folders: tuple[str, ...] = ()
    simulate: bool = False
    sim_motion: Literal["rest", "demo"] = "rest"
    sim_uuid: str = ""

    def __post_init__(self) -> None:
        if self.target and not self.simulate:
            parse_target(self.target)  # a ValueError names what is wrong, at load instead of on every retry
        if self.sim_uuid:
            try:
                parsed = uuid.UUID(self.sim_uuid)
            except ValueError:
                raise ValueError(f"sim_uuid: {self.sim_uuid!r} is not a UUID") from None
            if parsed.int == 0:
                raise ValueError("sim_uuid: the nil UUID names no robot")
