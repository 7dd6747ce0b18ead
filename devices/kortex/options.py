"""Config of a `kind = "kortex"` device."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

from gateway.hostnames import check_host
from protocols.kortex.mqtt import MQTT_PORT, check_client_id

Api = Literal["kortex2", "kortex3"]
Transport = Literal["auto", "tcp", "mqtt"]
AnalogMode = Literal["voltage", "current"]

#: Analog output ranges of the C61 wrist by channel mode (seed 003): V in voltage mode, mA in current mode.
ANALOG_OUTPUT_MAX = {"voltage": 10.0, "current": 25.0}
#: The C61 analog output channels, in `analog_output_modes` order.
ANALOG_CHANNELS = ("a_channel_1", "a_channel_2", "b_channel_1", "b_channel_2")


@dataclass(frozen=True, slots=True)
class KortexOptions:
    """Config of a Kortex arm.

    `host`: the arm's address (an arm comes set to 192.168.1.10). `tcp_port` / `udp_port`: 10000 for
    sessions and configuration, 10001 for BaseCyclic. `username` / `password`: used for the
    CreateSession of both links. The three are required unless `simulate`: a robot arm is never
    reached at an address or with credentials nobody wrote down (the factory admin/admin included).
    `api`: "kortex2" (Gen3, Gen3 lite: BaseCyclic with InterconnectCyclic, read with RefreshFeedback)
    or "kortex3" (Link 6: read with RefreshFeedback;
    a WristCyclic C61 command puts the arm in low-level servoing, where BaseCyclic.Refresh holds the
    joints and carries it). `cyclic_rate_hz`: BaseCyclic requests per second over UDP.
    `cyclic_reply_timeout_ms`: a cycle whose reply is later than this is dropped (counted).
    `publish_rate_hz`: bus samples per second of the cyclic feedback (0: every reply).
    `session_inactivity_timeout_ms` / `connection_inactivity_timeout_ms`: sent in CreateSession
    (the robot closes an idle session, and stops an idle connection's motion, after these).
    `rpc_timeout_ms`: wait for an RPC reply (CreateSession, SetServoingMode, Unsubscribe ...).
    `link_timeout_ms`: a link from which nothing arrives for this long is lost (reconnect); time the
    gateway itself was stalled (a paused process, a starved host) is not counted (`gateway.silence`).
    `analog_output_modes`: the mode each C61 analog output is configured in on the arm (channels
    A1, A2, B1, B2), which sets its range: [0, 10] V or [0, 25] mA. The gateway cannot read it
    (WristConfigC61.GetAnalogIOConfiguration's layout is not known), so it must be told.
    `estop_calls_arm_stop`: the gateway's estop also calls the Base's stop RPC at 0x20091,
    ApplyEmergencyStop on Kortex 2 and ApplyQuickStop on Kortex 3 (API 3.4).
    `arm_state_notifications`: subscribe to Base.ArmStateTopic and publish the arm's state.
    `transport`: how sessions and RPCs reach the arm: "tcp" (port `tcp_port`, Kortex 2's way),
    "mqtt" (the arm's MQTT broker on `mqtt_port`, Kinova's Link 6 clients' way, Kortex 3 only), or
    "auto": mqtt for api = "kortex3", tcp for "kortex2". The cyclic link is UDP `udp_port` either way.
    `mqtt_client_id`: our MQTT client id, also in our response topic `res/<id>` (letters, digits,
    _ . : -; empty: "hwgw-<device id>"). `mqtt_qos`: QoS of every request, pong and subscription
    (0: a lost request times out like on UDP; the vendor's is not public). `mqtt_keepalive_s`: MQTT
    keep-alive, a silent broker is lost after 1.5 times this. `mqtt_broker`: with `simulate`, where
    the simulated arm's broker comes from: "embedded" (a pure-Python broker in the gateway, so the
    demo needs none installed) or "external" (the broker at `host`:`mqtt_port`, e.g. mosquitto).
    The cyclic loop runs in a process of its own (devices/kortex/cyclic_process.py), one per arm.
    `cyclic_priority`: SCHED_FIFO priority (1-99) of that process, applied when the gateway may
    (CAP_SYS_NICE; the systemd unit grants it), else logged once at info; 0 keeps normal
    scheduling. `cyclic_cpus`: CPUs the cyclic process is pinned to (empty: any; each must exist);
    the daemon's own threads then keep off them (unless that would leave it none).
    `cyclic_spin_us`: the end of each period the loop spends polling the clock instead of
    sleeping (µs; the kernel wakes a sleeper 50-100 µs late): steadier periods for that much CPU.
    `simulate`: ignore host and ports and start a simulated arm of `api` on loopback (demo).
    """

    host: str = ""
    tcp_port: int = field(default=10000, metadata={"min": 1, "max": 65535})
    udp_port: int = field(default=10001, metadata={"min": 1, "max": 65535})
    username: str = ""
    password: str = ""
    api: Api = "kortex2"
    cyclic_rate_hz: float = field(default=1000.0, metadata={"min": 1.0, "max": 2000.0})
    cyclic_reply_timeout_ms: float = field(default=10.0, metadata={"min": 0.5, "max": 1000.0})
    publish_rate_hz: float = field(default=100.0, metadata={"min": 0.0, "max": 2000.0})
    session_inactivity_timeout_ms: int = field(default=35000, metadata={"min": 1000, "max": 3_600_000})
    connection_inactivity_timeout_ms: int = field(default=2000, metadata={"min": 100, "max": 3_600_000})
    rpc_timeout_ms: int = field(default=2000, metadata={"min": 10, "max": 60000})
    link_timeout_ms: int = field(default=3000, metadata={"min": 200, "max": 600_000})
    analog_output_modes: tuple[AnalogMode, ...] = ("voltage", "voltage", "voltage", "voltage")
    cyclic_priority: int = field(default=10, metadata={"min": 0, "max": 99})
    cyclic_cpus: tuple[int, ...] = ()
    cyclic_spin_us: float = field(default=100.0, metadata={"min": 0.0, "max": 1000.0})
    estop_calls_arm_stop: bool = True
    arm_state_notifications: bool = True
    transport: Transport = "auto"
    mqtt_port: int = field(default=MQTT_PORT, metadata={"min": 1, "max": 65535})
    mqtt_client_id: str = ""
    mqtt_qos: int = field(default=0, metadata={"min": 0, "max": 2})
    mqtt_keepalive_s: int = field(default=10, metadata={"min": 1, "max": 3600})
    mqtt_broker: Literal["embedded", "external"] = "embedded"
    simulate: bool = False

    def __post_init__(self) -> None:
        # Every cross-field problem in one error, like the config loader's per-key errors.
        problems = []
        if not self.simulate:
            missing = [key for key in ("host", "username", "password") if not getattr(self, key)]
            if missing:
                problems.append(
                    f"{', '.join(missing)}: required for a real arm (its address and the credentials of its "
                    "sessions; set simulate = true for a simulated arm)"
                )
        elif self.uses_mqtt and self.mqtt_broker == "external" and not self.host:
            problems.append('host: required with mqtt_broker = "external" (the broker\'s address)')
        if self.host:
            try:
                check_host(self.host)
            except ValueError as error:
                problems.append(f"host: {error}")
        if len(self.analog_output_modes) != len(ANALOG_CHANNELS):
            problems.append(
                f"analog_output_modes needs {len(ANALOG_CHANNELS)} entries (channels A1, A2, B1, B2), "
                f"got {len(self.analog_output_modes)}"
            )
        if self.transport == "mqtt" and self.api == "kortex2":
            problems.append(
                'transport = "mqtt" needs api = "kortex3" (Link 6): Gen3 and Gen3 lite serve sessions on TCP 10000 only'
            )
        if self.simulate and self.uses_mqtt and self.mqtt_broker == "embedded" and self.mqtt_qos:
            problems.append(
                f'mqtt_qos = {self.mqtt_qos} with simulate and mqtt_broker = "embedded": the embedded broker '
                'serves QoS 0 only (use mqtt_broker = "external" with mosquitto for QoS 1 or 2)'
            )
        cpus = os.cpu_count() or 1
        if any(cpu < 0 or cpu >= cpus for cpu in self.cyclic_cpus):
            problems.append(
                f"cyclic_cpus: {list(self.cyclic_cpus)} names a CPU this machine lacks (it has 0-{cpus - 1})"
            )
        if self.mqtt_client_id:
            try:
                check_client_id(self.mqtt_client_id)
            except ValueError as error:
                problems.append(f"mqtt_client_id: {error}")
        if problems:
            raise ValueError("; ".join(problems))

    @property
    def uses_mqtt(self) -> bool:
        """Whether sessions and RPCs go over the arm's MQTT broker (else TCP 10000)."""
        return self.transport == "mqtt" or (self.transport == "auto" and self.api == "kortex3")
