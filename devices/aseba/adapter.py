"""The `aseba` adapter: one Aseba link (USB serial, radio dongle, or TCP) and every node on it.

Device model: the config id names the link; a link can carry several nodes (a wireless dongle,
an asebaswitch, a playground with several robots behind a switch). Published streams, under the
device id:

- ``nodes`` `asebaros_msgs/NodeList`: every node seen, on every change;
- ``node/<node id>`` `asebaros_msgs/Node` and ``node/<node id>/description``
  `asebaros_msgs/NodeDescription` (the node's variables; the events and constants of the program
  the gateway loaded), on every change;
- ``node/<node id>/events/<event name>`` `asebaros_msgs/Event` for a user event the loaded
  program names (the name escaped into one topic segment, `gateway.topics.name_segment`:
  ``émoi`` -> ``-e9-moi``); ``anonymous_events`` `asebaros_msgs/AnonymousEvent` for any other (its
  `source` is the node id).

Thymio II: with `thymio_program` the gateway loads its own program (`devices.aseba.thymio_program`,
generated against the node's live description) on each `thymio-II` node, which then also
publishes ``node/<node id>/events/state`` and ``node/<node id>/events/comm`` (`asebaros_msgs/Event`),
``node/<node id>/buttons`` (`creos_messages/ControllerState`, backward, left, center, forward, right)
and ``node/<node id>/comm`` (`thymio_msgs/Comm`, each IR message received), and accepts the
thymio_msgs commands `Led`, `LedGesture`, `Sound`, `SystemSound`, `Comm` (transmit `value` over IR)
and the generic `led` (index -1/0 top, 1 bottom left, 2 bottom right) and `sound`. Aseba user events
are broadcasts: on a link with several Thymios, every one running the program obeys them.

Commands, the asebaros services: `GetNodeList` (all nodes, `ignored` changes nothing: the gateway
ignores no node), `GetDescription`, `GetVariable` (by name, split replies reassembled),
`SetVariable` (by name, size checked), `AnonymousEvent` (sent from source 0 to every node), and
`LoadScript`: a .aesl file from `script_folders`, compiled by the gateway (`protocols.aseba.compiler`)
against each node's live description and loaded on the nodes `node_ids` (empty: every described
node); with `set_as_default` also on nodes found later. Then the node's description lists the
script's constants, events and variables, its events are published by name, and GetVariable and
SetVariable reach its variables by name. A script replaces the gateway's Thymio program.
Motors: setting `motor.left.target` / `motor.right.target` to non-zero takes a lease for the
commanding client (`motor_lease_ms`, renewed by each setting; one lease per motor, the core's
`gateway.core.lease` rule); a motor's target returns to 0 when its lease runs out, when the client
disconnects, on estop, when the link is lost and at shutdown. Estop stops every node's motors,
leased or not, and first the VM of a node running a script, whose handlers would set them again (a
program a client leaves running is not stopped when it goes: `tdmclient run` starts one and exits).

Programming from source (the TDM face uses these): `hwgateway/AsebaVMDescription`, `hwgateway/AsebaCompile`
(Aseba source and global events, compiled against the live description; loaded like a script, left
reset), `hwgateway/AsebaVMControl` (run, stop, pause, step, reset) and `hwgateway/AsebaVariables`.

Identity: a Thymio II (protocol 6 or later) tells its UUID (`devices.aseba.network`); the UUID of
the node the device addresses is the device's identity (`DeviceContext.set_identity`, and
`capabilities()["uuid"]`), so two devices reaching one robot (on USB and on a radio dongle) are
known as one robot. A node that never answers leaves the device without one.

The services address the node `node_id` of the config (0: the lowest id on the link), because a
gateway command names a device, not a node: configure one device per node to address several.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from devices.aseba import thymio
from devices.aseba.network import AsebaNetwork, NodeError, NodeState
from devices.aseba.options import AsebaOptions
from devices.aseba.scripts import Script, resolve_script
from devices.aseba.thymio_program import EVENT_ID, EVENT_SIZES, EVENT_WORDS, ThymioProgram, generate
from devices.aseba.transport import Target, discover_usb, open_link, parse_target
from gateway.core.adapter import Adapter, Command, DeviceContext
from gateway.core.dispatch import CommandTable
from gateway.core.lease import Lease, LeaseEnd, Leases
from gateway.errors import DeviceError, DeviceUnavailable, InvalidArgument
from gateway.messages import aseba_gateway, asebaros, to_plain
from gateway.messages.common import Time
from gateway.messages.sim import SimButton
from gateway.topics import name_segment
from protocols.aseba.compiler import CompiledScript, CompileError, EventSpec, compile_script
from protocols.aseba.messages import MessageType, UserMessage

if TYPE_CHECKING:  # a simulator is imported only when `simulate` asks for one
    from devices.sim.thymio import SimulatedThymio

log = logging.getLogger(__name__)

GET_NODE_LIST = "asebaros_msgs/GetNodeList"
GET_DESCRIPTION = "asebaros_msgs/GetDescription"
GET_VARIABLE = "asebaros_msgs/GetVariable"
SET_VARIABLE = "asebaros_msgs/SetVariable"
NAMED_EVENT = "hwgateway/AsebaEvent"
MOTORS = "hwgateway/ThymioMotors"
SIM_BUTTON = "hwgateway/SimButton"
ANONYMOUS_EVENT = "asebaros_msgs/AnonymousEvent"
LOAD_SCRIPT = "asebaros_msgs/LoadScript"
VM_DESCRIPTION = "hwgateway/AsebaVMDescription"
COMPILE = "hwgateway/AsebaCompile"
VM_CONTROL = "hwgateway/AsebaVMControl"
READ_VARIABLES = "hwgateway/AsebaVariables"
#: The Aseba messages hwgateway/AsebaVMControl sends.
VM_COMMANDS = {
    "run": MessageType.RUN,
    "stop": MessageType.STOP,
    "pause": MessageType.PAUSE,
    "step": MessageType.STEP,
    "reset": MessageType.RESET,
}
#: Least time between closing the link and opening it again (s): the playground (and Dashel nodes)
#: crash when a client connects before they have closed their end of the last one (30 to 45 ms idle).
RECONNECT_GAP_S = 0.5
THYMIO_NAME = "thymio-II"
#: Derives a simulated Thymio's default UUID from its device id.
SIM_UUID_NAMESPACE = uuid.UUID("6f1c2a7e-93d4-4b0f-8e5a-2c7d9b1e4f30")
MOTOR_VARIABLES = ("motor.left.target", "motor.right.target")
#: thymio_msgs and generic commands, and how each becomes events of the gateway's Thymio program.
THYMIO_COMMANDS: dict[str, Callable[[Any], thymio.Events]] = {
    "thymio_msgs/Led": thymio.led,
    "thymio_msgs/LedGesture": thymio.led_gesture,
    "thymio_msgs/Sound": thymio.thymio_sound,
    "thymio_msgs/SystemSound": thymio.system_sound,
    "thymio_msgs/Comm": thymio.comm,
    "led": thymio.generic_led,
    "sound": thymio.generic_sound,
}


class AsebaAdapter(Adapter[AsebaOptions]):
    """An Aseba link and its nodes, with the asebaros services as commands."""

    kind = "aseba"
    options_class = AsebaOptions
    publishes = (
        "asebaros_msgs/NodeList",
        "asebaros_msgs/Node",
        "asebaros_msgs/NodeDescription",
        "asebaros_msgs/Event",
        ANONYMOUS_EVENT,
        "thymio_msgs/Comm",
        "creos_messages/ControllerState",
        "hwgateway/ThymioState",
    )
    #: The specific node streams first: `node/*` alone would match them all.
    streams: ClassVar[Mapping[str, str]] = {
        "node/*/buttons": "creos_messages/ControllerState",
        "node/*/state": "hwgateway/ThymioState",
        "node/*/comm": "thymio_msgs/Comm",
        "node/*/events/*": "asebaros_msgs/Event",
        "node/*/description": "asebaros_msgs/NodeDescription",
        "node/*": "asebaros_msgs/Node",
        "nodes": "asebaros_msgs/NodeList",
        "anonymous_events": ANONYMOUS_EVENT,
    }

    def __init__(self, ctx: DeviceContext, options: AsebaOptions) -> None:
        super().__init__(ctx, options)
        if options.simulate:  # its touch buttons can be pressed from the dashboard, as by hand
            self.accepts = (*self.accepts, SIM_BUTTON)
        self.network: AsebaNetwork | None = None
        self.target: Target | None = None
        #: Names of the user events of the program the gateway loaded, by node id (index = event id).
        self.event_names: dict[int, tuple[str, ...]] = {}
        #: Declared sizes (words) of those events, by node id and name (events the node only emits
        #: may be missing).
        self.event_sizes: dict[int, dict[str, int]] = {}
        self._closed_at = -RECONNECT_GAP_S
        #: The gateway program running on each Thymio node since it last connected.
        self.programs: dict[int, ThymioProgram] = {}
        #: The script LoadScript loaded on each node since it last connected.
        self.scripts: dict[int, CompiledScript] = {}
        #: The script to load on nodes found later (LoadScript with `set_as_default`).
        self.default_script: Script | None = None
        self._sim: SimulatedThymio | None = None
        #: Motor leases by (node id, motor variable); the value is the commanded target.
        self.leases: Leases[tuple[int, str], int] = Leases(
            ctx.device_id, self._on_motor_lease_end, term_s=options.motor_lease_ms / 1000
        )

    def capabilities(self) -> Mapping[str, Any]:
        """The link's target and the nodes on it."""
        nodes = {} if self.network is None else self.network.nodes
        return {
            "target": "" if self.target is None else str(self.target),
            "nodes": {str(n.id): n.name for n in nodes.values()},
            # The `node/<n>/buttons` stream's layout (the Thymio program's button order).
            "controller": {"axes": [], "buttons": list(thymio.BUTTON_NAMES)},
            "events": {str(node_id): self.event_layouts(node_id) for node_id in sorted(self.event_names)},
            # Motor targets stay only while renewed: a client that holds them (`hwgateway cmd --hold`)
            # repeats these commands within this many ms.
            "lease_renewal_ms": {MOTORS: self.options.motor_lease_ms, SET_VARIABLE: self.options.motor_lease_ms},
            **({"sim_buttons": list(_sim_button_names())} if self.options.simulate else {}),
            # The robot's own UUID (empty: not told): one robot on two links has the same on both.
            "uuid": self.identity() or "",
        }

    def sim_uuid(self) -> uuid.UUID:
        """The simulated Thymio's UUID: `sim_uuid`, else one derived from the device id (the same every run)."""
        if self.options.sim_uuid:
            return uuid.UUID(self.options.sim_uuid)
        return uuid.uuid5(SIM_UUID_NAMESPACE, self.ctx.device_id)

    def identity(self) -> str | None:
        """The UUID (text) of the node the device addresses, when it is on the link and told it; else None."""
        network = self.network
        if network is None:
            return None
        if self.options.node_id:
            node = network.nodes.get(self.options.node_id)
        else:  # the node `target_node` picks, known before its description is complete
            node = min((n for n in network.nodes.values() if n.connected), key=lambda n: n.id, default=None)
        if node is None or not node.connected or node.uuid is None:
            return None
        return str(node.uuid)

    def event_layouts(self, node_id: int) -> list[dict[str, Any]]:
        """The named events of the program on `node_id`, in event-id order.

        Each has its name, `topic`: the last segment of its `node/<n>/events/...` topic (the name
        escaped, `gateway.topics.name_segment`), its declared size in words (None when the program
        does not declare it) and, for the gateway program's own events, `words`: what each word holds.
        """
        sizes = self.event_sizes.get(node_id, {})
        own = node_id in self.programs
        layouts: list[dict[str, Any]] = []
        for name in self.event_names.get(node_id, ()):
            words = EVENT_WORDS.get(name) if own else None
            size = len(words) if words is not None else sizes.get(name)
            layout = {"name": name, "topic": name_segment(name) if name else "", "size": size}
            layouts.append({**layout, **({"words": list(words)} if words is not None else {})})
        return layouts

    # -- lifecycle ---------------------------------------------------------------------------------

    async def run(self) -> None:
        """Open the link and serve it until it closes (raise) or the gateway stops (cancel)."""
        if self.options.simulate:
            if self._sim is None:
                from devices.sim.thymio import SimulatedThymio

                self._sim = SimulatedThymio(demo=self.options.sim_motion == "demo", uuid=self.sim_uuid())
                await self._sim.start()
            target = Target("tcp", host=self._sim.host, port=self._sim.port)
        else:
            target = parse_target(self.options.target) if self.options.target else discover_usb()
        self.target = target
        # Whatever this link leads to is unknown until it tells (kept until now: while the device is not
        # connected it is shown nowhere, and clearing it while still "connected" would show it apart).
        self.ctx.set_identity(None)
        wait_s = self._closed_at + RECONNECT_GAP_S - time.monotonic()
        if wait_s > 0:
            await asyncio.sleep(wait_s)
        timeout_s = self.options.connect_timeout_ms / 1000
        try:
            async with asyncio.timeout(timeout_s):
                reader, writer = await open_link(target)
        except (OSError, TimeoutError) as error:
            raise ConnectionError(f"Aseba link {target} unreachable: {error or type(error).__name__}") from None
        network = AsebaNetwork(
            reader,
            writer,
            on_node=self._on_node,
            on_event=self._on_event,
            list_nodes_period_s=self.options.list_nodes_period_ms / 1000,
            node_timeout_s=self.options.node_timeout_ms / 1000,
            request_timeout_s=self.options.request_timeout_ms / 1000,
        )
        self.network = network
        log.info("aseba link %s open", target)
        ending = LeaseEnd.DEVICE_LOST
        try:
            await network.serve()
        except asyncio.CancelledError:
            ending = LeaseEnd.SHUTDOWN
            raise
        finally:
            self.leases.end_all(ending)
            with contextlib.suppress(ConnectionError, OSError):
                await asyncio.wait_for(network.drain(), 0.5)
            self.network = None
            self.programs.clear()
            self.scripts.clear()
            self.event_names.clear()
            self.event_sizes.clear()
            await network.close()
            self._closed_at = time.monotonic()

    def _on_motor_lease_end(self, motor: tuple[int, str], lease: Lease[int], why: LeaseEnd) -> None:
        """A motor's lease ended: its target to 0 (queued on the link, not awaited)."""
        self._zero_motor(*motor)

    def _zero_motor(self, node_id: int, name: str) -> None:
        network = self.network
        node = None if network is None else network.nodes.get(node_id)
        if network is None or node is None or node.description is None:
            return
        variable = node.description.variables.get(name)
        if variable is not None:
            network.set_variables(node_id, variable.address, (0,))

    def _stop_motors(self, node_ids: list[int]) -> None:
        """Set both motor targets of `node_ids` to 0, leased or not, and forget their leases."""
        for node_id in node_ids:
            for name in MOTOR_VARIABLES:
                self.leases.drop((node_id, name))
                self._zero_motor(node_id, name)

    def _press(self, message: SimButton) -> Mapping[str, Any]:
        """Press a touch button of the simulated Thymio (`hwgateway/SimButton`)."""
        if self._sim is None:
            raise DeviceUnavailable("the simulated Thymio is not running")
        try:
            self._sim.press(message.button, message.pressed_s)
        except ValueError as error:
            raise InvalidArgument(f"data.button: {error}") from None
        return {"pressed": message.button, "for_s": message.pressed_s}

    async def estop(self) -> None:
        """Stop the motors of every node on the link (leased or not), and the scripts that would restart them.

        A node running a script (a client's program, or the LoadScript default) has its VM stopped
        first: its event handlers (a timer's, a button's) would otherwise set the motor targets again
        within milliseconds of their zeroing. The gateway's own Thymio program drives no motor by
        itself and keeps running (it reports the robot's state).
        """
        leased = set(self.leases.end_all(LeaseEnd.ESTOP))
        network = self.network
        if network is not None:
            for node_id in list(network.nodes):
                scripted = node_id in self.scripts
                if scripted:
                    network.control(node_id, MessageType.STOP)
                for name in MOTOR_VARIABLES:
                    if scripted or (node_id, name) not in leased:
                        self._zero_motor(node_id, name)  # after the stop: nothing sets them again
            await network.drain()

    def release(self, client_id: str) -> None:
        """Stop the motors `client_id` holds."""
        self.leases.release(client_id)

    async def close(self) -> None:
        """Close the link if `run` left it open, and stop the simulated Thymio."""
        network = self.network
        if network is not None:
            with contextlib.suppress(Exception):
                await network.close()
        if self._sim is not None:
            await self._sim.stop()
            self._sim = None

    # -- network callbacks -------------------------------------------------------------------------

    def _node_message(self, node: NodeState) -> asebaros.Node:
        return asebaros.Node(
            id=node.id,
            name=node.name,
            name_space=f"{self.ctx.device_id}/node/{node.id}",
            running=node.id in self.programs or node.id in self.scripts,
            ignored=False,
            connected=node.connected,
        )

    def node_list(self) -> tuple[asebaros.Node, ...]:
        """Every node seen on the link, by id."""
        nodes = {} if self.network is None else self.network.nodes
        return tuple(self._node_message(nodes[key]) for key in sorted(nodes))

    def description_of(self, node: NodeState) -> asebaros.NodeDescription:
        """The asebaros description of `node`: its variables, the loaded program's events and constants."""
        variables = () if node.description is None else tuple(node.description.variables)
        program = self.programs.get(node.id)
        if program is not None:
            variables += tuple(program.variables)
        script = self.scripts.get(node.id)
        constants: tuple[asebaros.Constant, ...] = ()
        if script is not None:
            variables += tuple(script.variables)
            constants = tuple(asebaros.Constant(name=k, value=v) for k, v in script.constants.items())
        return asebaros.NodeDescription(
            id=node.id,
            name=node.name,
            constants=constants,
            events=self.event_names.get(node.id, ()),
            variables=variables,
        )

    def _on_node(self, node: NodeState) -> None:
        if not node.connected:
            # Its motors are nobody's any more; when it comes back they are set to 0 again.
            for motor in [motor for motor in self.leases if motor[0] == node.id]:
                self.leases.end(motor, LeaseEnd.DEVICE_LOST)
            # A node that comes back (rebooted, back in radio range) may have lost the program.
            self.programs.pop(node.id, None)
            self.scripts.pop(node.id, None)
            self.event_names.pop(node.id, None)
            self.event_sizes.pop(node.id, None)
        elif node.description is not None and node.id not in self.programs and node.id not in self.scripts:
            # A Thymio keeps its motor targets across a lost link: those leased then go to 0 now.
            self.leases.restore_safe(lambda motor: motor[0] == node.id)
            loaded = self._load_default_script(node)
            if not loaded and self._wants_program(node):
                self._load_program(node)
        self.ctx.publish(f"node/{node.id}", self._node_message(node))
        self.ctx.publish("nodes", asebaros.NodeList(nodes=self.node_list()))
        if node.description is not None:
            self.ctx.publish(f"node/{node.id}/description", self.description_of(node))
        network = self.network
        identity = self.identity()
        wanted = self.options.node_id
        described = network is not None and any(
            n.connected and n.description and wanted in (0, n.id) for n in network.nodes.values()
        )
        if described:
            # Set before "connected" (the UUID, asked first, usually came before the description), so a
            # face folding duplicates does not show the device apart from its robot for a moment.
            self.ctx.set_identity(identity)
            self.ctx.set_status("connected")
            return
        if wanted:
            # Its robot left a link others stay on (a dongle's): the device is not there, whatever the link.
            self.ctx.set_status("connecting", f"Aseba node {wanted} is not on the link")
        else:
            self.ctx.set_status("connecting", "no described Aseba node on the link")
        self.ctx.set_identity(identity)

    def _wants_program(self, node: NodeState) -> bool:
        return self.options.thymio_program and node.name == THYMIO_NAME

    def _load_program(self, node: NodeState) -> None:
        assert node.description is not None
        assert self.network is not None
        try:
            program = generate(node.description, self.options.state_period_ms)
        except (KeyError, ValueError) as error:
            log.warning("aseba node %d: cannot generate the Thymio program: %s", node.id, error)
            return
        self.network.set_bytecode(node.id, program.bytecode)
        self.programs[node.id] = program
        self.event_names[node.id] = program.events
        self.event_sizes[node.id] = dict(EVENT_SIZES)
        log.info("aseba node %d: Thymio program loaded (%d words)", node.id, len(program.bytecode))

    def _load_default_script(self, node: NodeState) -> bool:
        """Load the LoadScript default on a newly described node; False when there is none for it."""
        assert node.description is not None
        if self.default_script is None:
            return False
        try:
            compiled = self.default_script.compile_for(node.description, node.id)
        except InvalidArgument as error:
            log.warning("aseba node %d: cannot load the default script: %s", node.id, error)
            return False
        self._install_script(node, compiled)
        return True

    def _install_script(self, node: NodeState, compiled: CompiledScript, run: bool = True) -> None:
        """Send `compiled` to `node` and run it (else leave it reset); its events and variables become the node's."""
        network = self._network()
        network.set_bytecode(node.id, compiled.bytecode, run)
        self.programs.pop(node.id, None)
        self.scripts[node.id] = compiled
        self.event_names[node.id] = tuple(event.name for event in compiled.events)
        self.event_sizes[node.id] = {event.name: event.size for event in compiled.events}
        log.info("aseba node %d: script loaded (%d words)", node.id, len(compiled.bytecode))

    async def _load_script(self, message: asebaros.LoadScript) -> asebaros.LoadScriptResponse:
        """LoadScript: compile for every addressed node first, then load; nothing loads on an error."""
        path = resolve_script(message.file_name, self.options.script_folders)
        script = await asyncio.to_thread(Script.read, path, {c.name: c.value for c in message.constants})
        network = self._network()
        described = {n.id: n for n in network.nodes.values() if n.connected and n.description is not None}
        for node_id in message.node_ids:
            if node_id not in described:
                raise DeviceUnavailable(f"Aseba node {node_id} is not on the link (or not described yet)")
        nodes = [described[i] for i in (message.node_ids or sorted(described))]
        compiled = []
        for node in nodes:
            assert node.description is not None
            compiled.append(script.compile_for(node.description, node.id))
        for node, program in zip(nodes, compiled, strict=True):
            self._install_script(node, program)
            self._on_node(node)
        if message.set_as_default:
            self.default_script = script
        await network.drain()
        return asebaros.LoadScriptResponse()

    def _on_event(self, message: UserMessage) -> None:
        # Aseba events carry no time: every message made from one is stamped with its arrival.
        now = time.time()
        stamp = Time.from_seconds(now)
        if message.source in self.programs:
            if message.type == EVENT_ID["state"]:
                self.ctx.publish(f"node/{message.source}/buttons", thymio.buttons(message.data, now), now)
                self.ctx.publish(f"node/{message.source}/state", thymio.state(message.data, now), now)
            elif message.type == EVENT_ID["comm"]:
                self.ctx.publish(f"node/{message.source}/comm", thymio.comm_message(message.data), now)
        names = self.event_names.get(message.source, ())
        if message.type < len(names) and names[message.type]:
            # Any name the compiler takes (`émoi`, 300 characters) is one legal topic segment this way.
            segment = name_segment(names[message.type])
            event = asebaros.Event(stamp=stamp, source=message.source, data=message.data)
            self.ctx.publish(f"node/{message.source}/events/{segment}", event, now)
        else:
            source, event_type = message.source, message.type
            anonymous = asebaros.AnonymousEvent(stamp=stamp, source=source, type=event_type, data=message.data)
            self.ctx.publish("anonymous_events", anonymous, now)

    # -- commands ----------------------------------------------------------------------------------

    def _network(self) -> AsebaNetwork:
        if self.network is None:
            raise DeviceUnavailable("the Aseba link is not open")
        return self.network

    def target_node(self) -> NodeState:
        """The node the services address: `node_id`, or the lowest described id when it is 0."""
        nodes = self._network().nodes
        if self.options.node_id:
            node = nodes.get(self.options.node_id)
            if node is None or not node.connected:
                raise DeviceUnavailable(f"Aseba node {self.options.node_id} is not on the link")
        else:
            candidates = sorted((n for n in nodes.values() if n.connected and n.description), key=lambda n: n.id)
            if not candidates:
                raise DeviceUnavailable("no described Aseba node on the link")
            node = candidates[0]
        if node.description is None:
            raise DeviceUnavailable(f"Aseba node {node.id} has not sent its description yet")
        return node

    async def handle_command(self, command: Command) -> Mapping[str, Any] | None:
        """Carry out an asebaros service (answering its Response) or send an event; see the module docstring."""
        response = await self.commands.run(self, command, "the aseba device")
        if response is None or isinstance(response, Mapping):
            return response
        return to_plain(response)

    async def _sim_button(self, command: Command) -> object | None:
        return self._press(command.message)

    async def _get_node_list(self, command: Command) -> object | None:
        return asebaros.GetNodeListResponse(nodes=self.node_list())

    async def _anonymous_event(self, command: Command) -> object | None:
        message = command.message
        if message.type >= 0x8000:
            raise InvalidArgument(f"data.type: {message.type} is not a user event id (0..32767)")
        network = self._network()
        network.emit(message.type, message.data)
        await network.drain()
        return None

    async def _load_script_command(self, command: Command) -> object | None:
        return await self._load_script(command.message)

    async def _named_event(self, command: Command) -> object | None:
        message = command.message
        node = self.target_node()
        names = self.event_names.get(node.id, ())
        if message.name not in names:
            known = ", ".join(names) or "none: the gateway loaded no program"
            raise InvalidArgument(f"data.name: node {node.id} has no event {message.name!r} (events: {known})")
        size = self.event_sizes.get(node.id, {}).get(message.name)
        if size is not None and len(message.data) > size:
            raise InvalidArgument(
                f"data.data: event {message.name!r} carries {size} word{'s' if size != 1 else ''}, "
                f"{len(message.data)} given"
            )
        network = self._network()
        network.emit(names.index(message.name), message.data)
        await network.drain()
        return None

    async def _motors(self, command: Command) -> object | None:
        message = command.message
        node = self.target_node()
        network = self._network()
        for variable, target in (("motor.left.target", message.left), ("motor.right.target", message.right)):
            start, _ = self._variable(node, variable)
            network.set_variables(node.id, start, (target,))
            self.leases.take((node.id, variable), command.client_id, target)
        await network.drain()
        return None

    async def _program_command(self, command: Command) -> object | None:
        return await self._program_service(command.type, self.target_node(), command.message)

    async def _get_description(self, command: Command) -> object | None:
        return asebaros.GetDescriptionResponse(description=self.description_of(self.target_node()))

    async def _get_variable(self, command: Command) -> object | None:
        node = self.target_node()
        start, size = self._variable(node, command.message.variable)
        try:
            data = await self._network().get_variables(node.id, start, size)
        except NodeError as error:
            raise DeviceError(str(error)) from None
        return asebaros.GetVariableResponse(data=data)

    async def _set_variable(self, command: Command) -> object | None:
        message = command.message
        node = self.target_node()
        start, size = self._variable(node, message.variable)
        if len(message.data) != size:
            raise InvalidArgument(f"data.data: variable {message.variable!r} has {size} words, got {len(message.data)}")
        network = self._network()
        network.set_variables(node.id, start, message.data)
        if message.variable in MOTOR_VARIABLES:
            target = next((word for word in message.data if word), 0)
            self.leases.take((node.id, message.variable), command.client_id, target)
        await network.drain()
        return asebaros.SetVariableResponse()

    async def _thymio_command(self, command: Command) -> object | None:
        node = self.target_node()
        if node.id not in self.programs:
            raise DeviceUnavailable(f"Aseba node {node.id} ({node.name}) does not run the gateway's Thymio program")
        network = self._network()
        events = THYMIO_COMMANDS[command.type](command.message)
        for event_id, words in events:
            network.emit(event_id, words)
        await network.drain()
        return thymio.applied(command.type, events)

    async def _program_service(self, type_name: str, node: NodeState, message: Any) -> object | None:
        """The services that program a node from source (hwgateway/AsebaCompile and its companions)."""
        description = node.description
        assert description is not None
        network = self._network()
        if type_name == VM_DESCRIPTION:
            return aseba_gateway.AsebaVMDescriptionResponse(
                name=description.name,
                bytecode_size=description.bytecode_size,
                stack_size=description.stack_size,
                variables_size=description.variables_size,
                variables=tuple(
                    aseba_gateway.AsebaNamedVariable(v.name, v.size) for v in description.variables.values()
                ),
                local_events=tuple(
                    aseba_gateway.AsebaLocalEvent(e.name, e.description) for e in description.local_events
                ),
                natives=tuple(
                    aseba_gateway.AsebaNative(
                        n.name,
                        n.description,
                        tuple(aseba_gateway.AsebaNativeParameter(name, size) for size, name in n.parameters),
                    )
                    for n in description.natives
                ),
            )
        if type_name == COMPILE:
            events = [EventSpec(e.name, e.size) for e in message.events]
            try:
                compiled = await asyncio.to_thread(compile_script, message.source, description, events)
            except CompileError as error:
                return aseba_gateway.AsebaCompileResponse(
                    ok=False, message=error.message, line=error.line, column=error.column
                )
            if message.load:
                self._install_script(node, compiled, run=False)
                self._on_node(node)
                await network.drain()
            own_words = sum(v.size for v in compiled.variables.values())
            return aseba_gateway.AsebaCompileResponse(
                ok=True,
                bytecode_size=len(compiled.bytecode),
                total_bytecode_size=description.bytecode_size,
                variables_size=own_words,
                total_variables_size=description.variables_size,
            )
        if type_name == VM_CONTROL:
            aseba_command = VM_COMMANDS.get(message.command)
            if aseba_command is None:
                raise InvalidArgument(
                    f"data.command: expected one of {', '.join(VM_COMMANDS)}, got {message.command!r}"
                )
            if aseba_command is MessageType.STOP:
                self._stop_motors([node.id])
            network.control(node.id, aseba_command)
            await network.drain()
            return None
        variables = list(description.variables.values())
        for extra in (self.programs.get(node.id), self.scripts.get(node.id)):
            if extra is not None:
                variables += list(extra.variables.values())
        end = max((v.address + v.size for v in variables), default=0)
        try:
            words = await network.get_variables(node.id, 0, end) if end else ()
        except NodeError as error:
            raise DeviceError(str(error)) from None
        return aseba_gateway.AsebaVariablesResponse(
            variables=tuple(
                aseba_gateway.AsebaVariableValue(v.name, tuple(words[v.address : v.address + v.size]))
                for v in variables
            )
        )

    def _variable(self, node: NodeState, name: str) -> tuple[int, int]:
        assert node.description is not None
        variable = node.description.variables.get(name)
        program = self.programs.get(node.id)
        if variable is None and program is not None:
            variable = program.variables.get(name)
        script = self.scripts.get(node.id)
        if variable is None and script is not None:
            variable = script.variables.get(name)
        if variable is None:
            raise InvalidArgument(f"data.variable: node {node.id} ({node.name}) has no variable {name!r}")
        return variable.address, variable.size

    #: Every command the device takes, and its handler (`hwgateway/SimButton` only when simulated).
    commands: ClassVar[CommandTable[AsebaAdapter, Command]] = CommandTable(
        {
            GET_NODE_LIST: _get_node_list,
            GET_DESCRIPTION: _get_description,
            GET_VARIABLE: _get_variable,
            SET_VARIABLE: _set_variable,
            ANONYMOUS_EVENT: _anonymous_event,
            NAMED_EVENT: _named_event,
            MOTORS: _motors,
            LOAD_SCRIPT: _load_script_command,
            VM_DESCRIPTION: _program_command,
            COMPILE: _program_command,
            VM_CONTROL: _program_command,
            READ_VARIABLES: _program_command,
            **dict.fromkeys(THYMIO_COMMANDS, _thymio_command),
            SIM_BUTTON: _sim_button,
        }
    )
    accepts = commands.types(SIM_BUTTON)


def _sim_button_names() -> tuple[str, ...]:
    """The simulated Thymio's touch buttons (imports the simulator: only for `simulate = true`)."""
    from devices.sim.thymio import BUTTON_NAMES

    return tuple(BUTTON_NAMES)
