"""The Kortex adapter: two sessions (RPCs, and UDP 10001), the BaseCyclic loop, the wrist's outputs.

The RPC session goes over TCP 10000 on Kortex 2 and over the arm's MQTT broker (1883) on Kortex 3
(Link 6), as Kinova's own clients do (`transport` option; docs/kortex3-mqtt.md).

Published streams (under the device id):

- ``wrist/feedback`` `kortex/WristCyclicC61/Feedback` (Kortex 3), ``wrist/command``
  `kortex/WristCyclicC61/Command` (the outputs the loop sends, on every change);
- ``actuators`` `kortex/BaseCyclic/Actuators` and ``base`` `kortex/BaseCyclic/BaseFeedback` (both
  APIs; the arm's emergency-stop state on Kortex 3), ``interconnect``
  `kortex/InterconnectCyclic/Feedback` (Kortex 2), at `publish_rate_hz`;
- ``arm_state`` `kortex/Base/ArmStateNotification` (Base.ArmStateTopic notifications);
- ``cyclic`` `hwgateway/KortexCyclicStats`, once a second.

Servoing: the loop reads with RefreshFeedback, which the arm answers in any servoing mode. The C61
wrist command travels only in BaseCyclic.Refresh, which Kinova's clients send only in
LOW_LEVEL_SERVOING while they command the actuators. So a wrist command (Kortex 3 only; a Kortex 2
arm has no C61 wrist) first puts the arm in LOW_LEVEL_SERVOING (Base.SetServoingMode on the RPC
session, after selecting the HOLD_TO_RUN operating mode as Kinova's Link 6 low-level example does;
the operating mode found before is selected again after leaving; docs/kortex3-mqtt.md), and
from then on every cycle is a Refresh that holds each actuator at the position of the last feedback
and carries the wrist command (`kortex/WristCyclicC61/Command` replaces the outputs, its analog
values checked against each channel's configured mode; generic `led` sets the LED ring, steady).
Both answer with the `frame_id` of the cycle that carried them. The arm leaves low level
(SINGLE_LEVEL_SERVOING, RefreshFeedback again) when every client that commanded the wrist has
disconnected, on `estop`, when a link drops, and at shutdown. When the Refresh with the outputs at 0
goes unanswered on the way out (a killed cyclic process, a dropped link), the arm may still drive
them: after reconnecting the adapter enters low level for that one Refresh, then leaves it. Each new
RPC session first reads the servoing mode and leaves low level if an earlier session left the arm
there (a killed gateway, another program), then zeroes the outputs the same way.

Safe state: the digital and analog outputs are leased to the client that set them (the core's
`gateway.core.lease` rule, no term; `wrist/command` shows them), and return to 0 when it
disconnects, on `estop`, before leaving low level, when a link drops and before the sessions close
at shutdown (the LED ring keeps its colour: it drives nothing). Low level is left once the arm
answered the Refresh with the outputs at 0 (it refuses one that arrives after), waiting up to
`ZEROING_ANSWER_WAIT_S` for a slow arm; unanswered by then, it is left all the same, and
`unconfirmed_safe_state` says so: the gateway's shutdown log reports the safe state as
unconfirmed, not ok. Low-level servoing itself is not an output but a mode every client that
commanded the wrist holds; the last one's leaving ends it.
`estop` also calls the stop RPC at 0x20091 (`estop_calls_arm_stop`): Base.ApplyEmergencyStop on
Kortex 2, which latches the arm in fault until its faults are cleared; Base.ApplyQuickStop on
Kortex 3 (API 3.4).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

import aiomqtt
from google.protobuf.message import Message

from devices.kortex import convert
from devices.kortex.connection import KortexConnection
from devices.kortex.cyclic import EVENT_LOOP_STALL_S, CyclicCodec, CyclicProcess, Kortex2Codec, Kortex3Codec
from devices.kortex.cyclic_wire import ChildConfig
from devices.kortex.errors import KortexRequestError, KortexTimeout, LinkLost
from devices.kortex.options import ANALOG_CHANNELS, ANALOG_OUTPUT_MAX, KortexOptions
from devices.kortex.transport import MqttSettings, MqttTransport, open_mqtt, open_tcp
from gateway.core.adapter import Adapter, Command
from gateway.core.dispatch import CommandTable
from gateway.core.lease import Lease, LeaseEnd, Leases
from gateway.errors import DeviceUnavailable, InvalidArgument, UnknownCommand
from gateway.messages.generic import Led
from gateway.messages.kortex import Command as C61Command
from gateway.messages.kortex import MessageId
from gateway.silence import SilenceClock
from protocols.errors import ProtocolError
from protocols.kortex.frame import Frame, parse_payload
from protocols.kortex.generated import (
    Base_pb2,
    BaseCyclic_pb2,
    BaseCyclicKortex3_pb2,
    BaseKortex3_pb2,
    Common_pb2,
    CommonKortex3_pb2,
)
from protocols.kortex.services import STOP_RPC_NAMES, Function, ServiceId

if TYPE_CHECKING:  # a simulator is imported only when `simulate` asks for one
    from devices.sim.kortex_arm import SimulatedArm
    from devices.sim.mqtt_broker import EmbeddedBroker

log = logging.getLogger(__name__)

C61_COMMAND = "kortex/WristCyclicC61/Command"
#: How often the watchdog checks the links (s), and how often the loop's statistics are published.
WATCH_PERIOD_S = 0.1
STATS_PERIOD_S = 1.0
#: CloseSession, Unsubscribe, SetServoingMode and the last safe-state cycle must not hold the gateway up.
SHUTDOWN_RPC_TIMEOUT_S = 0.5
#: How long leaving low level waits for the arm to answer the Refresh that zeroes the outputs (s),
#: before SetServoingMode: a loaded arm or host answers late, and an arm that left low level first
#: refuses that Refresh, outputs still on. Inside the gateway's stop budget (supervisor.py: the
#: e-stop's 1 s may cut the wait, the leave goes on as a task of its own, `close` waits for it).
ZEROING_ANSWER_WAIT_S = 1.5
#: How long a wrist command waits for the first feedback after connecting (the joints are held at it).
#: A client may command as soon as the arm is `connected`; on a loaded computer the first cycle's
#: answer has been seen to take over 0.5 s, and the command's own deadline still bounds the wait.
FIRST_FEEDBACK_WAIT_S = 2.0
#: KeepAlive after this much idle time on the MQTT session (s): Kinova's MQTT clients send none, but
#: without it a silent arm behind a live broker could not be told from an idle one.
MQTT_KEEPALIVE_IDLE_S = 1.0
#: Faults that may meet a safe-state step on a link that is going away; each is logged, none stops the rest.
_LINK_FAULTS = (LinkLost, KortexRequestError, KortexTimeout)
#: Kortex 3: the pause between selecting HOLD_TO_RUN and entering low-level servoing (s), Kinova's own
#: (Kinova-Kortex3-Link6 api_cpp/300-Low_Level/01-low_level_cyclic_control/main.cpp sleeps 500 ms).
HOLD_TO_RUN_SETTLE_S = 0.5
_HOLD_TO_RUN = CommonKortex3_pb2.OPERATING_MODE_HOLD_TO_RUN
_NO_OPERATING_MODE = CommonKortex3_pb2.OPERATING_MODE_UNSPECIFIED
#: Who holds low-level servoing while the outputs a dropped link left set are zeroed (no client id).
_RECONNECT_HOLDER = "(zeroing after reconnecting)"


def _rgb_word(rgb: tuple[float, ...]) -> int:
    red, green, blue = (round(channel * 255) for channel in rgb)
    return red << 16 | green << 8 | blue


class KortexAdapter(Adapter[KortexOptions]):
    """A Kinova arm on Kortex 2 (Gen3, Gen3 lite) or Kortex 3 (Link 6), over TCP and UDP."""

    kind = "kortex"
    options_class = KortexOptions
    publishes = (
        "kortex/WristCyclicC61/Feedback",
        C61_COMMAND,
        "kortex/BaseCyclic/Actuators",
        "kortex/BaseCyclic/BaseFeedback",
        "kortex/InterconnectCyclic/Feedback",
        "kortex/Base/ArmStateNotification",
        "hwgateway/KortexCyclicStats",
    )

    def __init__(self, ctx: Any, options: KortexOptions) -> None:
        super().__init__(ctx, options)
        self._codec: CyclicCodec = Kortex3Codec() if options.api == "kortex3" else Kortex2Codec()
        self._wrist = C61Command()
        #: The wrist's digital and analog outputs, leased (one output, "outputs") to the client that set them.
        self.leases: Leases[str, C61Command] = Leases(ctx.device_id, self._on_lease_end, is_safe=_outputs_off)
        #: Clients whose wrist commands keep the arm in low-level servoing.
        self._low_level_clients: set[str] = set()
        #: Low level was entered and a link dropped before it could be left: leave it on reconnecting.
        self._leave_low_level_on_connect = False
        #: Kortex 3: the operating mode the arm was in before this adapter selected HOLD_TO_RUN, to
        #: select again once it has left low level (kept across a dropped link until it is done).
        self._restore_operating_mode: int | None = None
        #: The Refresh that zeroes the outputs went unanswered (the cyclic process died, a link
        #: dropped): the arm may still drive them, so they are zeroed first thing after reconnecting.
        self._outputs_unconfirmed = False
        #: The leaves of low level under way, each a task of its own (an e-stop cut by its deadline
        #: does not abort one between the zeroing Refresh and SetServoingMode).
        self._leaving: set[asyncio.Task[None]] = set()
        #: Set while no `run` is under way: `close` waits for the last one's disconnect (outputs to 0).
        self._run_ended = asyncio.Event()
        self._run_ended.set()
        self._servoing_lock = asyncio.Lock()
        #: The one entry into low level under way (HOLD_TO_RUN, its pause, LOW_LEVEL): shared by the
        #: commands that wait for it, and not ended by one of them timing out.
        self._entering: asyncio.Task[None] | None = None
        self._last_feedback: Message | None = None
        self._feedback_arrived = asyncio.Event()
        self._background: set[asyncio.Task[None]] = set()
        self._tcp: KortexConnection | None = None
        self._mqtt: MqttTransport | None = None
        self._cyclic: CyclicProcess | None = None
        self._arm_state_handle: int | None = None
        self._sim: SimulatedArm | None = None
        self._sim_broker: EmbeddedBroker | None = None
        #: "TCP" or "MQTT": what the RPC session runs on.
        self._rpc_link = "MQTT" if options.uses_mqtt else "TCP"
        self._publish_interval = 1.0 / options.publish_rate_hz if options.publish_rate_hz > 0 else 0.0

    def capabilities(self) -> Mapping[str, Any]:
        """The API version, the loop rate, and whether there is a C61 wrist with its analog modes."""
        capabilities: dict[str, Any] = {
            "api": self.options.api,
            "cyclic_rate_hz": self.options.cyclic_rate_hz,
            "transport": self._rpc_link.lower(),
        }
        if self.options.estop_calls_arm_stop:
            capabilities["estop"] = f"{STOP_RPC_NAMES[self.options.api]} (0x{Function.BASE_APPLY_EMERGENCY_STOP:x})"
        if self.options.api == "kortex3":
            capabilities["wrist"] = "C61"
            modes = zip(ANALOG_CHANNELS, self.options.analog_output_modes, strict=True)
            capabilities["analog_output_modes"] = dict(modes)
        return capabilities

    # -- lifecycle ---------------------------------------------------------------------------------

    async def run(self) -> None:
        """Open both sessions, then cycle until a link fails (raise) or the gateway stops (cancel)."""
        options = self.options
        host, udp_port = options.host, options.udp_port
        rpc_port = options.mqtt_port if options.uses_mqtt else options.tcp_port
        if options.simulate:
            if self._sim is None:
                await self._start_simulated_arm()
            assert self._sim is not None
            host, udp_port = self._sim.host, self._sim.udp_port
            if options.uses_mqtt:
                assert self._sim.mqtt is not None
                rpc_port = self._sim.mqtt[1]
            else:
                rpc_port = self._sim.tcp_port
        self._run_ended.clear()
        try:
            await self._connect(host, rpc_port, udp_port)
            assert self._tcp is not None
            assert self._cyclic is not None
            self.ctx.set_status(
                "connected",
                f"{options.api} at {host}, sessions {self._tcp.session_id} ({self._rpc_link}) "
                f"and {self._cyclic.session_id} (UDP)",
            )
            self.ctx.publish("wrist/command", self._wrist)
            if self._outputs_unconfirmed and isinstance(self._codec, Kortex3Codec):
                task = asyncio.create_task(self._zero_leftover_outputs())
                self._background.add(task)
                task.add_done_callback(self._background.discard)
            await self._serve()
        except asyncio.CancelledError:
            self.leases.end_all(LeaseEnd.SHUTDOWN)
            raise
        finally:
            self.leases.end_all(LeaseEnd.DEVICE_LOST)  # nothing left after a shutdown
            try:
                await self._disconnect()
            finally:
                self._run_ended.set()

    async def handle_command(self, command: Command) -> Mapping[str, Any] | None:
        """Set the C61 wrist outputs or LED ring; answer with the frame id of the cycle carrying them."""
        if self.options.api != "kortex3":
            raise UnknownCommand(
                f"{command.type!r} drives the C61 wrist of a Kortex 3 arm; this device is api = kortex2 "
                "(Gen3 / Gen3 lite), which has none"
            )
        result: Mapping[str, Any] = await self.commands.run(self, command, f"device {self.ctx.device_id!r} (kortex)")
        return result

    async def _wrist_outputs(self, command: Command) -> Mapping[str, Any]:
        message: C61Command = command.message
        self._check_analog(message)
        cyclic = await self._low_level_for(command)
        self.leases.take("outputs", command.client_id, message)
        self._set_wrist(replace(message, command_id=MessageId()))
        return {"frame_id": await cyclic.next_cycle()}

    async def _led_ring(self, command: Command) -> Mapping[str, Any]:
        message: Led = command.message
        if message.index not in (-1, 0):
            raise InvalidArgument(f"data.index: {message.index} is not an LED of this arm (it has one ring, 0)")
        cyclic = await self._low_level_for(command)
        self._set_wrist(replace(self._wrist, led_ring_rgb=_rgb_word(message.rgb), led_ring_blink_frequency=0))
        frame_id = await cyclic.next_cycle()
        rgb = [round(channel * 255) for channel in message.rgb]
        return {
            "frame_id": frame_id,
            "rgb": rgb,
            "applied": "LED ring at #{:02x}{:02x}{:02x}, steady (8 bits per channel)".format(*rgb),
        }

    async def _low_level_for(self, command: Command) -> CyclicProcess:
        """The running cyclic loop, in low level with `command`'s client holding it."""
        cyclic = self._cyclic
        if cyclic is None:
            raise DeviceUnavailable("the arm's cyclic loop is not running")
        await self._enter_low_level(command.client_id)
        return cyclic

    async def estop(self) -> None:
        """Outputs to 0, the stop RPC at 0x20091 when enabled, then out of low-level servoing.

        The RPC is Base.ApplyEmergencyStop on Kortex 2 and Base.ApplyQuickStop on Kortex 3; a refusal
        is raised (the gateway reports it) after low level was left.
        """
        if self.options.api == "kortex3":
            self.leases.end_all(LeaseEnd.ESTOP)
            self._zero_outputs()  # leased or not
            await self._stop_entering()  # no entry into low level goes on after an estop
        tcp = self._tcp
        try:
            if self.options.estop_calls_arm_stop and tcp is not None and tcp.failure is None:
                await tcp.call(Function.BASE_APPLY_EMERGENCY_STOP, timeout_s=SHUTDOWN_RPC_TIMEOUT_S)
        finally:
            self._low_level_clients.clear()
            await self._leave_low_level("estop")

    def release(self, client_id: str) -> None:
        """The outputs are leased to the client that set them: they return to 0 when it leaves.

        Low-level servoing is held by every client that commanded the wrist; the last one's leaving
        ends it.
        """
        self.leases.release(client_id)
        if client_id in self._low_level_clients:
            self._low_level_clients.discard(client_id)
            if not self._low_level_clients:
                task = asyncio.create_task(self._leave_low_level(f"client {client_id} left"))
                self._background.add(task)
                task.add_done_callback(self._background.discard)

    async def close(self) -> None:
        """Wait for the cancelled `run` to disconnect (outputs to 0, low level left), stop the simulated arm if any.

        The supervisor bounds the cancelled task's end (1 s) more tightly than `close` (3 s): the
        disconnect may still be waiting for a slow arm's answer to the zeroing Refresh.
        """
        await self._run_ended.wait()
        await self._stop_entering()
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        await asyncio.gather(*self._leaving, return_exceptions=True)  # shielded: they end on their own
        if self._sim is not None:
            await self._sim.stop()
            self._sim = None
        if self._sim_broker is not None:
            await self._sim_broker.stop()
            self._sim_broker = None

    async def _start_simulated_arm(self) -> None:
        """The `simulate` arm; on the MQTT path also its broker (embedded, or at host:mqtt_port)."""
        from devices.sim.kortex_arm import SimulatedArm
        from devices.sim.mqtt_broker import EmbeddedBroker

        options = self.options
        broker: tuple[str, int] | None = None
        if options.uses_mqtt:
            if options.mqtt_broker == "embedded":
                self._sim_broker = EmbeddedBroker()
                await self._sim_broker.start()
                broker = (self._sim_broker.host, self._sim_broker.port)
            else:
                broker = (options.host, options.mqtt_port)
        self._sim = SimulatedArm(options.api, username=options.username, password=options.password, mqtt=broker)
        await self._sim.start()

    def outputs(self) -> Mapping[str, Any]:
        """The wrist's digital and analog outputs as last commanded (taken by the arm? `unconfirmed_safe_state`)."""
        wrist = self._wrist
        return {
            "digital_outputs_state": wrist.digital_outputs_state,
            "analog_output_a_channel_1_value": wrist.analog_output_a_channel_1_value,
            "analog_output_a_channel_2_value": wrist.analog_output_a_channel_2_value,
            "analog_output_b_channel_1_value": wrist.analog_output_b_channel_1_value,
            "analog_output_b_channel_2_value": wrist.analog_output_b_channel_2_value,
        }

    def unconfirmed_safe_state(self) -> str | None:
        """Why the arm may still drive the wrist's outputs: the Refresh zeroing them went unanswered."""
        if not self._outputs_unconfirmed:
            return None
        return "the arm did not answer the Refresh with the wrist's outputs at 0: they may still be on"

    # -- connecting --------------------------------------------------------------------------------

    async def _connect(self, host: str, rpc_port: int, udp_port: int) -> None:
        options = self.options
        rpc_timeout_s = options.rpc_timeout_ms / 1000
        # `_tcp` is the RPC session's link, on TCP 10000 or (Kortex 3) on MQTT.
        tcp = KortexConnection(f"{self.ctx.device_id} {self._rpc_link}", api=options.api, rpc_timeout_s=rpc_timeout_s)
        self._tcp = tcp
        try:
            if options.uses_mqtt:
                settings = MqttSettings(
                    client_id=options.mqtt_client_id or f"hwgw-{self.ctx.device_id}",
                    qos=options.mqtt_qos,
                    keepalive_s=options.mqtt_keepalive_s,
                    connect_timeout_s=rpc_timeout_s,
                )
                self._mqtt = await open_mqtt(tcp, host, rpc_port, settings)
            else:
                await open_tcp(tcp, host, rpc_port, rpc_timeout_s)
        except (OSError, TimeoutError, aiomqtt.MqttError) as error:
            raise LinkLost(
                f"robot unreachable at {host}:{rpc_port} ({self._rpc_link}): {error or type(error).__name__}"
            ) from None
        try:
            await tcp.create_session(
                options.username,
                options.password,
                options.session_inactivity_timeout_ms,
                options.connection_inactivity_timeout_ms,
            )
        except (KortexRequestError, KortexTimeout) as error:
            raise LinkLost(f"robot unreachable: {tcp.name} session refused: {error}") from None
        # Left in low level by someone else (this adapter knows what its own dropped link left).
        left_over = not self._leave_low_level_on_connect and await self._left_in_low_level(tcp)
        if left_over:
            self._outputs_unconfirmed = True  # whoever left it there may have left the outputs on too
        if self._leave_low_level_on_connect or left_over:
            # Before anything else: in low level the arm answers nothing but low-level commands, and
            # it stays there after the session that entered it is gone (a dropped link, a killed gateway).
            self._leave_low_level_on_connect = False
            try:
                await self._set_servoing_mode(tcp, Base_pb2.SINGLE_LEVEL_SERVOING)
            except (KortexRequestError, KortexTimeout) as error:
                log.warning("%s: could not leave low-level servoing after reconnecting: %s", self.ctx.device_id, error)
            else:
                await self._restore_operating(tcp)
        if options.arm_state_notifications:
            await self._subscribe_arm_state(tcp)
        self._last_feedback = None
        self._feedback_arrived.clear()
        config = ChildConfig(
            name=f"{self.ctx.device_id} UDP",
            host=host,
            port=udp_port,
            username=options.username,
            password=options.password,
            session_inactivity_timeout_ms=options.session_inactivity_timeout_ms,
            connection_inactivity_timeout_ms=options.connection_inactivity_timeout_ms,
            rpc_timeout_s=rpc_timeout_s,
            rate_hz=options.cyclic_rate_hz,
            reply_timeout_s=options.cyclic_reply_timeout_ms / 1000,
            publish_interval_s=self._publish_interval,
            link_timeout_s=options.link_timeout_ms / 1000,
            stall_s=EVENT_LOOP_STALL_S,
            priority=options.cyclic_priority,
            cpus=tuple(options.cyclic_cpus),
            spin_ns=round(options.cyclic_spin_us * 1000),
        )
        self._cyclic = await CyclicProcess.start(config, self._codec, self._on_feedback)

    async def _subscribe_arm_state(self, tcp: KortexConnection) -> None:
        request = Common_pb2.NotificationOptions(type=Common_pb2.NOTIFICATION_TYPE_EVENT)
        try:
            reply = await tcp.call(Function.BASE_ARM_STATE_TOPIC, request.SerializeToString())
            handle = parse_payload(Common_pb2.NotificationHandle, reply.payload).identifier
        except (KortexRequestError, KortexTimeout) as error:
            log.warning("%s: no arm state notifications: %s", self.ctx.device_id, error)
            return
        self._arm_state_handle = handle
        tcp.add_notification_handler(ServiceId.BASE, handle, self._on_arm_state)

    async def _serve(self) -> None:
        tcp, cyclic = self._tcp, self._cyclic
        assert tcp is not None
        assert cyclic is not None
        tasks = [
            asyncio.create_task(cyclic.run(), name=f"{self.ctx.device_id}:cyclic"),
            asyncio.create_task(
                tcp.keep_alive(MQTT_KEEPALIVE_IDLE_S) if self.options.uses_mqtt else tcp.keep_alive(),
                name=f"{self.ctx.device_id}:rpc-keepalive",
            ),
            asyncio.create_task(self._watch(tcp, cyclic), name=f"{self.ctx.device_id}:watch"),
        ]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
            raise LinkLost("a link task ended")  # they only end by failing
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _watch(self, tcp: KortexConnection, cyclic: CyclicProcess) -> None:
        """Raise when the RPC link is lost or silent (the cyclic process watches UDP); publish the loop's statistics."""
        silence_s = self.options.link_timeout_ms / 1000
        next_stats = time.monotonic() + STATS_PERIOD_S
        # Silence counted while the gateway is awake: a stalled gateway (a loaded host, a long pause)
        # wakes to old bytes unread and a keep-alive not yet answered, which says nothing of the link.
        silence = SilenceClock(silence_s, WATCH_PERIOD_S, time.monotonic())
        while True:
            await asyncio.sleep(WATCH_PERIOD_S)
            if tcp.failure is not None:
                raise tcp.failure
            now = time.monotonic()
            if silence.tick(now, tcp.last_received):
                raise LinkLost(f"{tcp.name}: nothing from the robot for {silence_s:g} s")
            if now >= next_stats:
                next_stats += STATS_PERIOD_S
                self.ctx.publish("cyclic", cyclic.stats(self.options.api))

    async def _disconnect(self) -> None:
        """Leave low level if the gateway holds it (outputs to 0 first), unsubscribe, close both sessions."""
        await self._stop_entering()
        # A leave under way (an e-stop's, cut by its deadline) uses the sessions: let it finish first.
        await asyncio.gather(*self._leaving, return_exceptions=True)
        tcp, cyclic = self._tcp, self._cyclic
        self._tcp = self._cyclic = None
        codec = self._codec
        if isinstance(codec, Kortex3Codec) and codec.low_level:
            self._low_level_clients.clear()
            self._zero_outputs()
            codec.release()
            self._outputs_unconfirmed = not await self._last_refresh(cyclic)
            left = False
            if tcp is not None and tcp.failure is None:
                try:
                    await self._set_servoing_mode(tcp, Base_pb2.SINGLE_LEVEL_SERVOING, SHUTDOWN_RPC_TIMEOUT_S)
                    left = True
                except _LINK_FAULTS as error:
                    log.warning("%s: could not leave low-level servoing: %s", self.ctx.device_id, error)
                else:
                    await self._restore_operating(tcp, SHUTDOWN_RPC_TIMEOUT_S)
            self._leave_low_level_on_connect = not left
        closing = []
        if tcp is not None:
            if self._arm_state_handle is not None and tcp.failure is None:
                handle = Common_pb2.NotificationHandle(identifier=self._arm_state_handle)
                with contextlib.suppress(*_LINK_FAULTS):
                    await tcp.call(
                        Function.BASE_UNSUBSCRIBE, handle.SerializeToString(), timeout_s=SHUTDOWN_RPC_TIMEOUT_S
                    )
            closing.append(tcp)
        self._arm_state_handle = None
        # The cyclic process sends CloseSession on UDP itself, while the RPC link closes its own.
        await asyncio.gather(
            *(c.close_session(SHUTDOWN_RPC_TIMEOUT_S) for c in closing), *([cyclic.close()] if cyclic else [])
        )
        for connection in closing:
            connection.close()
        mqtt, self._mqtt = self._mqtt, None
        if mqtt is not None:
            await mqtt.wait_closed()

    # -- servoing ---------------------------------------------------------------------------------

    async def _left_in_low_level(self, tcp: KortexConnection) -> bool:
        """True when a new session finds the arm in LOW_LEVEL_SERVOING (Base.GetServoingMode), and says so."""
        try:
            reply = await tcp.call(Function.BASE_GET_SERVOING_MODE)
            mode = parse_payload(Base_pb2.ServoingModeInformation, reply.payload).servoing_mode
        except (KortexRequestError, KortexTimeout, ProtocolError) as error:
            log.warning("%s: could not read the servoing mode: %s", self.ctx.device_id, error)
            return False
        if mode != Base_pb2.LOW_LEVEL_SERVOING:
            return False
        log.warning(
            "%s: the arm is in low-level servoing, left there by an earlier session (a killed gateway, "
            "or another program); back to single level",
            self.ctx.device_id,
        )
        return True

    async def _set_servoing_mode(self, tcp: KortexConnection, mode: int, timeout_s: float | None = None) -> None:
        request = Base_pb2.ServoingModeInformation(servoing_mode=mode)  # type: ignore[arg-type]
        await tcp.call(Function.BASE_SET_SERVOING_MODE, request.SerializeToString(), timeout_s=timeout_s)
        log.info("%s: servoing mode %s", self.ctx.device_id, Base_pb2.ServoingMode.Name(mode))

    async def _enter_low_level(self, client_id: str) -> None:
        """Put the arm in LOW_LEVEL_SERVOING holding its joints, unless it is there; `client_id` holds it.

        The entry takes over half a second on Kortex 3 (Kinova's pause after HOLD_TO_RUN), longer than
        a short command deadline: it runs as a task of its own, so a command that times out (or whose
        client leaves) does not abort it half-way and the next command finds the arm in low level.
        When it ends with no client holding low level, the arm leaves it again.
        """
        entering = self._entering
        if entering is None or entering.done():
            entering = self._entering = asyncio.create_task(
                self._enter_low_level_once(), name=f"{self.ctx.device_id}-enter-low-level"
            )
        try:
            await asyncio.shield(entering)
        except asyncio.CancelledError:
            entering.add_done_callback(self._leave_if_unheld)
            raise
        self._low_level_clients.add(client_id)

    def _leave_if_unheld(self, entering: asyncio.Task[None]) -> None:
        """After an entry whose command ended first: leave low level unless a client holds it by now."""
        if entering.cancelled() or entering.exception() is not None:
            return
        task = asyncio.create_task(self._leave_low_level("the command that entered it ended first"))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _stop_entering(self) -> None:
        """Cancel an entry into low level under way (estop, disconnect) and wait until it has ended."""
        entering, self._entering = self._entering, None
        if entering is not None and not entering.done():
            entering.cancel()
            await asyncio.wait({entering})

    async def _enter_low_level_once(self) -> None:
        """HOLD_TO_RUN, its pause, then LOW_LEVEL_SERVOING holding the joints where the feedback put them."""
        codec = self._codec
        assert isinstance(codec, Kortex3Codec)
        async with self._servoing_lock:
            if not codec.low_level:
                # The joints are held where the feedback last put them: wait for one just after connecting.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(FIRST_FEEDBACK_WAIT_S):
                        await self._feedback_arrived.wait()
                tcp, feedback = self._tcp, self._last_feedback
                if tcp is None or not isinstance(feedback, BaseCyclicKortex3_pb2.Feedback):
                    raise DeviceUnavailable("no actuator feedback from the arm yet: cannot hold its joints")
                positions = [actuator.position for actuator in feedback.actuators]
                # As Kinova's Link 6 low-level example does, in its order: HOLD_TO_RUN ("required on
                # some firmware versions before entering LOW_LEVEL_SERVOING"), its pause, then low level.
                await self._select_hold_to_run(tcp)
                # LOW_LEVEL first: a Refresh sent before the arm is in it would be refused.
                try:
                    await self._set_servoing_mode(tcp, Base_pb2.LOW_LEVEL_SERVOING)
                except _LINK_FAULTS:
                    await self._restore_operating(tcp, SHUTDOWN_RPC_TIMEOUT_S)
                    raise
                codec.hold(positions)

    async def _leave_low_level(self, reason: str) -> None:
        """Outputs to 0 in one more Refresh, then RefreshFeedback and SINGLE_LEVEL_SERVOING.

        It runs as a task of its own: a caller cancelled (an e-stop past its deadline) does not
        abort it between the zeroing Refresh and SetServoingMode; `_disconnect` waits for it.
        """
        leaving = asyncio.create_task(self._leave_low_level_once(reason), name=f"{self.ctx.device_id}-leave-low-level")
        self._leaving.add(leaving)
        leaving.add_done_callback(self._leaving.discard)
        await asyncio.shield(leaving)

    async def _leave_low_level_once(self, reason: str) -> None:
        codec = self._codec
        if not isinstance(codec, Kortex3Codec):
            return
        async with self._servoing_lock:
            if not codec.low_level or self._low_level_clients:
                return
            log.info("%s: leaving low-level servoing (%s)", self.ctx.device_id, reason)
            self._zero_outputs()
            # RefreshFeedback from now on: it is answered in either mode, Refresh only in low level.
            codec.release()
            self._outputs_unconfirmed = not await self._last_refresh(self._cyclic)
            tcp = self._tcp
            if tcp is None or tcp.failure is not None:
                self._leave_low_level_on_connect = True
                return
            try:
                await self._set_servoing_mode(tcp, Base_pb2.SINGLE_LEVEL_SERVOING, SHUTDOWN_RPC_TIMEOUT_S)
            except _LINK_FAULTS as error:
                log.warning("%s: could not leave low-level servoing: %s", self.ctx.device_id, error)
                self._leave_low_level_on_connect = True
            else:
                await self._restore_operating(tcp, SHUTDOWN_RPC_TIMEOUT_S)

    async def _select_operating_mode(self, tcp: KortexConnection, mode: int, timeout_s: float | None = None) -> None:
        request = CommonKortex3_pb2.ModeSelection(operating_mode=mode)  # type: ignore[arg-type]
        await tcp.call(Function.BASE_SELECT_OPERATING_MODE, request.SerializeToString(), timeout_s=timeout_s)
        log.info("%s: operating mode %s", self.ctx.device_id, CommonKortex3_pb2.OperatingModeType.Name(mode))

    async def _select_hold_to_run(self, tcp: KortexConnection) -> None:
        """Remember the operating mode (GetCurrentOperatingMode), select HOLD_TO_RUN, wait Kinova's pause."""
        try:
            reply = await tcp.call(Function.BASE_GET_CURRENT_OPERATING_MODE)
            current = parse_payload(CommonKortex3_pb2.ModeSelection, reply.payload).operating_mode
        except (KortexRequestError, KortexTimeout, ProtocolError) as error:
            log.warning(
                "%s: could not read the operating mode (%s); it stays HOLD_TO_RUN after low level",
                self.ctx.device_id,
                error,
            )
            current = _NO_OPERATING_MODE
        # A mode still to restore (a dropped link left HOLD_TO_RUN selected) is the one to go back to.
        if self._restore_operating_mode is None and current not in (_NO_OPERATING_MODE, _HOLD_TO_RUN):
            self._restore_operating_mode = current
        await self._select_operating_mode(tcp, _HOLD_TO_RUN)
        await asyncio.sleep(HOLD_TO_RUN_SETTLE_S)

    async def _restore_operating(self, tcp: KortexConnection, timeout_s: float | None = None) -> None:
        """Select again the operating mode the arm had before HOLD_TO_RUN (after leaving low level)."""
        mode = self._restore_operating_mode
        if mode is None:
            return
        try:
            await self._select_operating_mode(tcp, mode, timeout_s)
        except _LINK_FAULTS as error:
            log.warning("%s: could not select the operating mode again: %s", self.ctx.device_id, error)
        else:
            self._restore_operating_mode = None

    async def _last_refresh(self, cyclic: CyclicProcess | None) -> bool:
        """Wait for the one more Refresh (outputs at 0) of `release`; True once the arm answered it.

        It is answered before SetServoingMode leaves low level: the arm refuses a Refresh it gets
        after that. The cyclic process sends it every cycle until answered; the wait is up to
        `ZEROING_ANSWER_WAIT_S`.
        """
        if cyclic is None or cyclic.failure is not None:
            return False
        try:
            await cyclic.answered(ZEROING_ANSWER_WAIT_S)
        except TimeoutError:
            log.warning("%s: the last Refresh (outputs at 0) was not answered in time", self.ctx.device_id)
        except LinkLost as error:
            log.warning("%s: the last Refresh (outputs at 0) failed: %s", self.ctx.device_id, error)
        else:
            return True
        return False

    async def _zero_leftover_outputs(self) -> None:
        """Zero the outputs a dropped link may have left on: low level for one Refresh, joints held, then out."""
        device = self.ctx.device_id
        log.warning(
            "%s: the wrist's outputs may still be on (their zeroing Refresh went unanswered, or an earlier "
            "session left the arm in low level); zeroing them now",
            device,
        )
        try:
            await self._enter_low_level(_RECONNECT_HOLDER)
        except (DeviceUnavailable, *_LINK_FAULTS) as error:
            log.warning("%s: could not zero the outputs after reconnecting: %s", device, error)
            return
        self._low_level_clients.discard(_RECONNECT_HOLDER)
        await self._leave_low_level("the outputs are zeroed after reconnecting")
        if not self._outputs_unconfirmed:
            log.info("%s: outputs at 0 again after reconnecting", device)

    # -- state -------------------------------------------------------------------------------------

    def _check_analog(self, command: C61Command) -> None:
        for channel, mode in zip(ANALOG_CHANNELS, self.options.analog_output_modes, strict=True):
            name = f"analog_output_{channel}_value"
            value = getattr(command, name)
            if value > ANALOG_OUTPUT_MAX[mode]:
                unit = "V" if mode == "voltage" else "mA"
                raise InvalidArgument(
                    f"data.{name}: {value} is above {ANALOG_OUTPUT_MAX[mode]:g} {unit}, "
                    f"the range of channel {channel} in {mode} mode (analog_output_modes)"
                )

    def _set_wrist(self, wrist: C61Command) -> None:
        if wrist == self._wrist:
            return
        self._wrist = wrist
        if isinstance(self._codec, Kortex3Codec):
            self._codec.set_wrist(wrist)
        self.ctx.publish("wrist/command", wrist)

    def _on_lease_end(self, output: str, lease: Lease[C61Command], why: LeaseEnd) -> None:
        """The outputs' lease ended: they go to 0 in the next cycle (the LED ring stays)."""
        self._zero_outputs()

    def _zero_outputs(self) -> None:
        self.leases.drop("outputs")
        self._set_wrist(
            replace(
                self._wrist,
                digital_outputs_state=0,
                analog_output_a_channel_1_value=0.0,
                analog_output_a_channel_2_value=0.0,
                analog_output_b_channel_1_value=0.0,
                analog_output_b_channel_2_value=0.0,
            )
        )

    def _on_feedback(self, feedback: Message) -> None:
        # On the event loop, at most every `publish_interval` (the cyclic process thins the replies).
        self._last_feedback = feedback
        self._feedback_arrived.set()
        ctx = self.ctx
        if isinstance(feedback, BaseCyclicKortex3_pb2.Feedback):
            ctx.publish("actuators", convert.actuators(feedback.frame_id, feedback.actuators))
            ctx.publish("base", convert.base_feedback(feedback.base))
            if feedback.wrist.HasField("c61"):
                ctx.publish("wrist/feedback", convert.c61_feedback(feedback.wrist.c61))
        elif isinstance(feedback, BaseCyclic_pb2.Feedback):
            ctx.publish("actuators", convert.actuators(feedback.frame_id, feedback.actuators))
            ctx.publish("base", convert.base_feedback(feedback.base))
            if feedback.HasField("interconnect"):
                ctx.publish("interconnect", convert.interconnect(feedback.interconnect))

    def _on_arm_state(self, frame: Frame) -> None:
        notification: Base_pb2.ArmStateNotification | BaseKortex3_pb2.ArmStateNotification
        try:
            if self.options.api == "kortex3":
                notification = parse_payload(BaseKortex3_pb2.ArmStateNotification, frame.payload)
            else:
                notification = parse_payload(Base_pb2.ArmStateNotification, frame.payload)
        except ValueError as error:
            log.warning("%s: undecodable arm state notification: %s", self.ctx.device_id, error)
            return
        self.ctx.publish("arm_state", convert.arm_state(notification))

    #: Every command the arm takes (Kortex 3 only), and its handler.
    commands: ClassVar[CommandTable[KortexAdapter, Command]] = CommandTable(
        {C61_COMMAND: _wrist_outputs, "led": _led_ring}
    )
    accepts = commands.types()


def _outputs_off(wrist: C61Command) -> bool:
    """Every digital and analog output at 0: their safe value."""
    return not (
        wrist.digital_outputs_state
        or wrist.analog_output_a_channel_1_value
        or wrist.analog_output_a_channel_2_value
        or wrist.analog_output_b_channel_1_value
        or wrist.analog_output_b_channel_2_value
    )
