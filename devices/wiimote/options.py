"""Config of a `kind = "wiimote"` device."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from protocols.wiimote.connection import ConnectionSettings
from protocols.wiimote.reports import DATA_LAYOUTS

_ADDRESS = re.compile(r"([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}")


@dataclass(frozen=True, slots=True)
class WiimoteOptions:
    """Config of a `kind = "wiimote"` device (a Wii Remote, RVL-CNT-01 or -TR, or a Wii U Pro Controller).

    `transport`: "hidraw" (after BlueZ pairing; found through `sysfs_root`, opened under `dev_root`),
    "l2cap" (raw HID channels PSM 0x11/0x13 to `address`; needs Python with AF_BLUETOOTH and no
    BlueZ input session on the remote), or "sim" (a simulated remote inside the daemon).
    `address`: the remote's Bluetooth address (aa:bb:cc:dd:ee:ff); with hidraw, empty takes the first
    remote no other device has taken. `report_mode`: a data reporting mode (0x30-0x3E; 0 chooses
    0x33/0x37 with `ir`, 0x31/0x35 without, by extension). `motionplus`: probe for and activate a
    MotionPlus. `leds`: LED mask at connect (bit 0 = LED1). `status_interval_s`: status polls
    (battery, extension, liveness); `timeout_s`: silence after which the remote counts as lost.
    `discovery_interval_s`: how often sysfs is scanned while waiting. `calibrate_on_connect`: zero
    the gyro at rest once connected (as the ROS node does at start).
    `sim_*`: the simulated remote's extension, MotionPlus, motion script ("rest", "demo") and rate;
    `sim_device = "pro_controller"` simulates a Wii U Pro Controller instead.
    """

    transport: Literal["hidraw", "l2cap", "sim"] = "hidraw"
    address: str = ""
    sysfs_root: str = "/sys"
    dev_root: str = "/dev"
    report_mode: int = field(default=0, metadata={"min": 0, "max": 0x3F})
    ir: bool = True
    motionplus: bool = True
    leds: int = field(default=1, metadata={"min": 0, "max": 15})
    status_interval_s: float = field(default=2.0, metadata={"min": 0.1, "max": 60.0})
    timeout_s: float = field(default=3.0, metadata={"min": 0.2, "max": 120.0})
    discovery_interval_s: float = field(default=1.0, metadata={"min": 0.05, "max": 60.0})
    calibrate_on_connect: bool = True
    sim_device: Literal["remote", "pro_controller"] = "remote"
    sim_extension: Literal["none", "nunchuk", "classic", "classic_pro"] = "none"
    sim_motionplus: bool = False
    sim_motion: Literal["rest", "demo"] = "rest"
    sim_rate_hz: float = field(default=100.0, metadata={"min": 1.0, "max": 1000.0})

    def __post_init__(self) -> None:
        # Every cross-field problem in one error, like the config loader's per-key errors.
        problems = []
        if self.address and not _ADDRESS.fullmatch(self.address):
            problems.append(f"address {self.address!r} is not a Bluetooth address like 00:1f:32:aa:bb:cc")
        elif self.transport == "l2cap" and not self.address:
            problems.append('transport = "l2cap" needs the remote\'s address')
        if self.report_mode and self.report_mode not in DATA_LAYOUTS:
            problems.append(f"report_mode {self.report_mode:#04x} is not a data reporting mode (0x30-0x37, 0x3D, 0x3E)")
        if self.timeout_s <= self.status_interval_s:
            problems.append("timeout_s must exceed status_interval_s, or a quiet remote counts as lost")
        if problems:
            raise ValueError("; ".join(problems))

    def exclusive_resource(self) -> str | None:
        """The remote this device takes (two devices cannot share one); None when any free one will do."""
        if self.transport == "sim" or not self.address:
            return None
        return f"Wii Remote {self.address.lower()}"

    def settings(self) -> ConnectionSettings:
        """The protocol state machine's settings."""
        return ConnectionSettings(
            report_mode=self.report_mode,
            ir=self.ir,
            motionplus=self.motionplus,
            leds=self.leds,
            status_interval_s=self.status_interval_s,
            timeout_s=self.timeout_s,
        )
