"""The Kortex adapter: two sessions (TCP 10000, UDP 10001), the BaseCyclic loop, the wrist's outputs.

Published streams (under the device id):

- ``wrist/feedback`` `kortex/WristCyclicC61/Feedback` (Kortex 3), ``wrist/command``
  `kortex/WristCyclicC61/Command` (the outputs the loop sends, on every change);
- ``actuators`` `kortex/BaseCyclic/Actuators` (both APIs), ``interconnect``
  `kortex/InterconnectCyclic/Feedback` (Kortex 2), at `publish_rate_hz`;
- ``arm_state`` `kortex/Base/ArmStateNotification` (Base.ArmStateTopic notifications);
- ``cyclic`` `hwgateway/KortexCyclicStats`, once a second.

Commands (Kortex 3 only; a Kortex 2 arm has no C61 wrist): `kortex/WristCyclicC61/Command` replaces
the wrist outputs from the next cycle on, its analog values checked against each channel's
configured mode; generic `led` sets the LED ring (steady). Both answer with the `frame_id` of the
cycle that carried them.

Safe state: the digital and analog outputs are leased to the client that set them, and return to
0 when it disconnects, on `estop`, and before the sessions close at shutdown (the LED ring keeps its
colour: it drives nothing). The gateway commands no arm motion; `estop` also calls the Base's
ApplyEmergencyStop (0x20091, `estop_applies_emergency_stop`), which latches the arm in fault until
its faults are cleared.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from google.protobuf.message import Message

from devices.base import Adapter, Command
from devices.kortex import convert
from devices.kortex.connection import KortexConnection
from devices.kortex.cyclic import CyclicCodec, CyclicLoop, Kortex2Codec, Kortex3Codec
from devices.kortex.errors import KortexRequestError, KortexTimeout, LinkLost
from devices.kortex.options import ANALOG_CHANNELS, ANALOG_OUTPUT_MAX, KortexOptions
from devices.kortex.transport import open_tcp, open_udp
from devices.sim.kortex_arm import SimulatedArm
from gateway.errors import DeviceUnavailable, InvalidArgument, UnknownCommand
from gateway.messages.generic import Led
from gateway.messages.kortex import Command as C61Command
from gateway.messages.kortex import MessageId
from protocols.kortex.frame import Frame, parse_payload
from protocols.kortex.generated import Base_pb2, BaseCyclic_pb2, BaseCyclicKortex3_pb2, Common_pb2
from protocols.kortex.services import Function, ServiceId

log = logging.getLogger(__name__)

C61_COMMAND = "kortex/WristCyclicC61/Command"
#: How often the watchdog checks the links (s), and how often the loop's statistics are published.
WATCH_PERIOD_S = 0.1
STATS_PERIOD_S = 1.0
#: CloseSession, Unsubscribe and the last safe-state cycle at shutdown must not hold the gateway up.
SHUTDOWN_RPC_TIMEOUT_S = 0.5


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
        "kortex/InterconnectCyclic/Feedback",
        "kortex/Base/ArmStateNotification",
        "hwgateway/KortexCyclicStats",
    )
    accepts = (C61_COMMAND, "led")

    def __init__(self, ctx: Any, options: KortexOptions) -> None:
        super().__init__(ctx, options)
        self._codec: CyclicCodec = Kortex3Codec() if options.api == "kortex3" else Kortex2Codec()
        self._wrist = C61Command()
        self._outputs_owner: str | None = None
        self._tcp: KortexConnection | None = None
        self._udp: KortexConnection | None = None
        self._cyclic: CyclicLoop | None = None
        self._arm_state_handle: int | None = None
        self._sim: SimulatedArm | None = None
        self._publish_interval = 1.0 / options.publish_rate_hz if options.publish_rate_hz > 0 else 0.0
        self._last_publish = 0.0

    def capabilities(self) -> Mapping[str, Any]:
        """The API version, the loop rate, and whether there is a C61 wrist with its analog modes."""
        capabilities: dict[str, Any] = {"api": self.options.api, "cyclic_rate_hz": self.options.cyclic_rate_hz}
        if self.options.api == "kortex3":
            capabilities["wrist"] = "C61"
            modes = zip(ANALOG_CHANNELS, self.options.analog_output_modes, strict=True)
            capabilities["analog_output_modes"] = dict(modes)
        return capabilities

    # -- lifecycle ---------------------------------------------------------------------------------

    async def run(self) -> None:
        """Open both sessions, then cycle until a link fails (raise) or the gateway stops (cancel)."""
        host, tcp_port, udp_port = self.options.host, self.options.tcp_port, self.options.udp_port
        if self.options.simulate:
            if self._sim is None:
                self._sim = SimulatedArm(
                    self.options.api, username=self.options.username, password=self.options.password
                )
                await self._sim.start()
            host, tcp_port, udp_port = self._sim.host, self._sim.tcp_port, self._sim.udp_port
        stopping = False
        try:
            await self._connect(host, tcp_port, udp_port)
            assert self._tcp is not None
            assert self._udp is not None
            self.ctx.set_status(
                "connected",
                f"{self.options.api} at {host}, sessions {self._tcp.session_id} (TCP) and {self._udp.session_id} (UDP)",
            )
            self.ctx.publish("wrist/command", self._wrist)
            await self._serve()
        except asyncio.CancelledError:
            stopping = True
            raise
        finally:
            await self._disconnect(safe_state=stopping)

    async def handle_command(self, command: Command) -> Mapping[str, Any] | None:
        """Set the C61 wrist outputs or LED ring; answer with the frame id of the cycle carrying them."""
        if self.options.api != "kortex3":
            raise UnknownCommand(
                f"{command.type!r} drives the C61 wrist of a Kortex 3 arm; this device is api = kortex2 "
                "(Gen3 / Gen3 lite), which has none"
            )
        message = command.message
        if isinstance(message, Led):
            if message.index not in (-1, 0):
                raise InvalidArgument(f"data.index: {message.index} is not an LED of this arm (it has one ring, 0)")
            wrist = replace(self._wrist, led_ring_rgb=_rgb_word(message.rgb), led_ring_blink_frequency=0)
        else:
            assert isinstance(message, C61Command)
            self._check_analog(message)
            wrist = replace(message, command_id=MessageId())
            self._outputs_owner = command.client_id
        cyclic = self._cyclic
        if cyclic is None:
            raise DeviceUnavailable("the arm's cyclic loop is not running")
        self._set_wrist(wrist)
        frame_id = await cyclic.next_cycle()
        return {"frame_id": frame_id}

    async def estop(self) -> None:
        """Outputs to 0 from the next cycle on, and ApplyEmergencyStop on the arm when enabled."""
        if self.options.api == "kortex3":
            self._zero_outputs()
        tcp = self._tcp
        if not self.options.estop_applies_emergency_stop or tcp is None or tcp.failure is not None:
            return
        await tcp.call(Function.BASE_APPLY_EMERGENCY_STOP, timeout_s=SHUTDOWN_RPC_TIMEOUT_S)

    def release(self, client_id: str) -> None:
        """The outputs are leased to the client that set them: they return to 0 when it leaves."""
        if self._outputs_owner == client_id:
            log.info("%s: client %s left; wrist outputs to 0", self.ctx.device_id, client_id)
            self._zero_outputs()

    async def close(self) -> None:
        """Stop the simulated arm, if this adapter started one."""
        if self._sim is not None:
            await self._sim.stop()
            self._sim = None

    # -- connecting --------------------------------------------------------------------------------

    async def _connect(self, host: str, tcp_port: int, udp_port: int) -> None:
        options = self.options
        rpc_timeout_s = options.rpc_timeout_ms / 1000
        self._tcp = tcp = KortexConnection(f"{self.ctx.device_id} TCP", rpc_timeout_s=rpc_timeout_s)
        self._udp = udp = KortexConnection(f"{self.ctx.device_id} UDP", rpc_timeout_s=rpc_timeout_s)
        try:
            await open_tcp(tcp, host, tcp_port, rpc_timeout_s)
        except (OSError, TimeoutError) as error:
            raise LinkLost(f"robot unreachable at {host}:{tcp_port} (TCP): {error or type(error).__name__}") from None
        await open_udp(udp, host, udp_port)
        for connection in (tcp, udp):
            try:
                await connection.create_session(
                    options.username,
                    options.password,
                    options.session_inactivity_timeout_ms,
                    options.connection_inactivity_timeout_ms,
                )
            except (KortexRequestError, KortexTimeout) as error:
                raise LinkLost(f"robot unreachable: {connection.name} session refused: {error}") from None
        if options.arm_state_notifications:
            await self._subscribe_arm_state(tcp)
        self._cyclic = CyclicLoop(
            udp, self._codec, options.cyclic_rate_hz, options.cyclic_reply_timeout_ms / 1000, self._on_feedback
        )

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
        tcp, udp, cyclic = self._tcp, self._udp, self._cyclic
        assert tcp is not None
        assert udp is not None
        assert cyclic is not None
        tasks = [
            asyncio.create_task(cyclic.run(), name=f"{self.ctx.device_id}:cyclic"),
            asyncio.create_task(tcp.keep_alive(), name=f"{self.ctx.device_id}:tcp-keepalive"),
            asyncio.create_task(udp.keep_alive(), name=f"{self.ctx.device_id}:udp-keepalive"),
            asyncio.create_task(self._watch(tcp, udp, cyclic), name=f"{self.ctx.device_id}:watch"),
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

    async def _watch(self, tcp: KortexConnection, udp: KortexConnection, cyclic: CyclicLoop) -> None:
        """Raise when a link is lost or silent; publish the loop's statistics."""
        silence_s = self.options.link_timeout_ms / 1000
        next_stats = time.monotonic() + STATS_PERIOD_S
        while True:
            await asyncio.sleep(WATCH_PERIOD_S)
            now = time.monotonic()
            for connection in (tcp, udp):
                if connection.failure is not None:
                    raise connection.failure
                if now - connection.last_received > silence_s:
                    raise LinkLost(f"{connection.name}: nothing from the robot for {silence_s:g} s")
            if now >= next_stats:
                next_stats += STATS_PERIOD_S
                self.ctx.publish("cyclic", cyclic.stats(self.options.api))

    async def _disconnect(self, safe_state: bool) -> None:
        tcp, udp, cyclic = self._tcp, self._udp, self._cyclic
        self._tcp = self._udp = self._cyclic = None
        alive = cyclic is not None and udp is not None and udp.failure is None
        if safe_state and alive and self.options.api == "kortex3":
            assert cyclic is not None
            assert udp is not None
            # The outputs go to 0 in one last Refresh before the session ends.
            self._zero_outputs()
            with contextlib.suppress(LinkLost, KortexRequestError, KortexTimeout):
                await udp.call(
                    cyclic.codec.function,
                    cyclic.codec.request((cyclic.frame_id + 1) & 0xFFFF),
                    timeout_s=SHUTDOWN_RPC_TIMEOUT_S,
                )
        closing = []
        if tcp is not None:
            if self._arm_state_handle is not None and tcp.failure is None:
                handle = Common_pb2.NotificationHandle(identifier=self._arm_state_handle)
                with contextlib.suppress(LinkLost, KortexRequestError, KortexTimeout):
                    await tcp.call(
                        Function.BASE_UNSUBSCRIBE, handle.SerializeToString(), timeout_s=SHUTDOWN_RPC_TIMEOUT_S
                    )
            closing.append(tcp)
        self._arm_state_handle = None
        if udp is not None:
            closing.append(udp)
        await asyncio.gather(*(c.close_session(SHUTDOWN_RPC_TIMEOUT_S) for c in closing))
        for connection in closing:
            connection.close()

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

    def _zero_outputs(self) -> None:
        self._outputs_owner = None
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
        if self._publish_interval:
            now = time.monotonic()
            if now - self._last_publish < self._publish_interval:
                return
            self._last_publish = now
        ctx = self.ctx
        if isinstance(feedback, BaseCyclicKortex3_pb2.Feedback):
            ctx.publish("actuators", convert.actuators(feedback.frame_id, feedback.actuators))
            if feedback.wrist.HasField("c61"):
                ctx.publish("wrist/feedback", convert.c61_feedback(feedback.wrist.c61))
        elif isinstance(feedback, BaseCyclic_pb2.Feedback):
            ctx.publish("actuators", convert.actuators(feedback.frame_id, feedback.actuators))
            if feedback.HasField("interconnect"):
                ctx.publish("interconnect", convert.interconnect(feedback.interconnect))

    def _on_arm_state(self, frame: Frame) -> None:
        try:
            notification = parse_payload(Base_pb2.ArmStateNotification, frame.payload)
        except ValueError as error:
            log.warning("%s: undecodable arm state notification: %s", self.ctx.device_id, error)
            return
        self.ctx.publish("arm_state", convert.arm_state(notification))
