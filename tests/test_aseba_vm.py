"""The Python Aseba VM: opcodes, errors, and a differential run against asebaplayground's real VM."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from devices.aseba.network import AsebaNetwork
from devices.aseba.thymio_program import EVENT_ID, generate
from devices.sim.aseba_playground import Playground
from devices.sim.thymio import ThymioOutputs, thymio_natives
from protocols.aseba.bytecode import Assembler, Binary, Unary
from protocols.aseba.description import DescriptionAssembler, NodeDescription
from protocols.aseba.framing import Frame
from protocols.aseba.messages import (
    Description,
    LocalEventDescription,
    MessageType,
    NamedVariableDescription,
    NativeFunctionDescription,
    NodeSpecificError,
    UserMessage,
    WordMessage,
    decode,
)
from protocols.aseba.natives import STANDARD_NATIVES
from protocols.aseba.vm import AsebaVM
from tests.conftest import require_peer
from tests.harness import free_port

VECTOR = Path(__file__).parent / "data" / "thymio-playground-description.json"
RESULTS = 48  # words of results the differential program writes
EMITTED = 5


def playground_description() -> NodeDescription:
    assembler = DescriptionAssembler()
    for type_, payload in json.loads(VECTOR.read_text()):
        part = decode(Frame(1, type_, bytes.fromhex(payload)))
        assert isinstance(
            part, Description | NamedVariableDescription | LocalEventDescription | NativeFunctionDescription
        )
        assembler.add(part)
    return assembler.result()


def differential_program(d: NodeDescription) -> tuple[int, ...]:
    """Every opcode, operator and the deterministic math natives; results in R[0..47]."""
    asm = Assembler()
    r = d.user_data_start
    slot = iter(range(RESULTS))

    def result() -> None:
        asm.store(r + next(slot))

    asm.handler(0xFFFF)
    for a, b in ((7, 3), (-7, 3), (30000, 30000), (-300, 300)):
        for op in (Binary.ADD, Binary.SUB, Binary.MULT, Binary.DIV, Binary.MOD):
            asm.push(a)
            asm.push(b)
            asm.binary(op)
            result()
    for op, a, b in (
        (Binary.SHIFT_LEFT, 1, 15),
        (Binary.SHIFT_RIGHT, -16, 2),
        (Binary.BIT_OR, 0x0F0, 0x00F),
        (Binary.BIT_XOR, 0x0FF, 0x0F0),
        (Binary.BIT_AND, -1, 0x123),
        (Binary.EQUAL, 4, 4),
        (Binary.NOT_EQUAL, 4, 4),
        (Binary.BIGGER_THAN, -1, 1),
        (Binary.BIGGER_EQUAL_THAN, 1, 1),
        (Binary.SMALLER_THAN, -1, 1),
        (Binary.SMALLER_EQUAL_THAN, 2, 1),
        (Binary.OR, 0, 5),
        (Binary.AND, 3, 0),
    ):
        asm.push(a)
        asm.push(b)
        asm.binary(op)
        result()
    for unary, value in ((Unary.NEG, 5), (Unary.ABS, -32768), (Unary.BIT_NOT, 0x00FF)):
        asm.push(value)
        asm.unary(unary)
        result()
    # A loop summing 1..10 (backward jump, conditional branch); R[41] counter, R[42] sum.
    counter, total = r + 41, r + 42
    asm.push(1)
    asm.store(counter)
    asm.push(0)
    asm.store(total)
    asm.label("loop")
    asm.load(counter)
    asm.push(10)
    asm.branch_unless(Binary.SMALLER_EQUAL_THAN, "loop_end")
    asm.load(total)
    asm.load(counter)
    asm.binary(Binary.ADD)
    asm.store(total)
    asm.load(counter)
    asm.push(1)
    asm.binary(Binary.ADD)
    asm.store(counter)
    asm.jump("loop")
    asm.label("loop_end")
    # Indirect store/load: A[i] = i * 3 for i in 0..3 into R[43..46], then R[47] = A[2].
    for i in range(4):
        asm.push(i * 3)
        asm.push(i)
        asm.store_indirect(r + 43, 4)
    asm.push(2)
    asm.load_indirect(r + 43, 4)
    asm.store(r + 47)
    # Natives on B[0..3] (after the results), then a subroutine, then an emit.
    b = r + RESULTS
    values = (9, -4, 7, 1)
    for i, v in enumerate(values):
        asm.push(v)
        asm.store(b + i)
    asm.push(3)
    asm.store(b + 4)  # a scalar: 3
    asm.call_native(d.native_index("math.sort"), [b], [4])
    asm.call_native(d.native_index("math.addscalar"), [b + 5, b, b + 4], [4])
    asm.call_native(d.native_index("math.mul"), [b + 9, b, b + 5], [4])
    asm.call_native(d.native_index("math.muldiv"), [b + 13, b + 9, b + 5, b], [4])
    asm.call_native(d.native_index("math.dot"), [b + 17, b, b + 5, b + 4], [4])
    asm.call_native(d.native_index("math.stat"), [b + 9, b + 18, b + 19, b + 20], [4])
    asm.call_native(d.native_index("math.argbounds"), [b + 13, b + 21, b + 22], [4])
    asm.call_native(d.native_index("math.clamp"), [b + 23, b + 9, b, b + 5], [4])
    asm.call_native(d.native_index("math.sqrt"), [b + 27, b + 9], [4])
    asm.call_native(d.native_index("math.fill"), [b + 31, b + 4], [2])
    asm.call_native(d.native_index("math.copy"), [b + 33, b + 9], [4])
    asm.sub_call("twice")
    asm.sub_call("twice")
    asm.emit(EMITTED, r, 12)
    asm.stop()
    # User event 0: an edge-triggered "when" counts only the first of two identical events.
    asm.handler(0)
    asm.load(d.variable("event.args").address)
    asm.push(1)
    asm.branch_unless(Binary.EQUAL, "no_edge", when=True)
    asm.load(b + 37)
    asm.push(1)
    asm.binary(Binary.ADD)
    asm.store(b + 37)
    asm.label("no_edge")
    asm.emit(EMITTED + 1, b + 37, 1)
    asm.stop()
    asm.label("twice")
    asm.load(b + 38)
    asm.push(2)
    asm.binary(Binary.ADD)
    asm.store(b + 38)
    asm.sub_ret()
    return asm.assemble()


def run_on_python_vm(d: NodeDescription, bytecode: tuple[int, ...]) -> tuple[list[int], list[UserMessage]]:
    vm = AsebaVM(1, d, STANDARD_NATIVES)
    vm.set_bytecode(0, bytecode)
    vm.start()
    vm.run()
    for _ in range(2):
        vm.user_event(0, 0, (1,))
        vm.run()
    start = d.user_data_start
    emitted = [m for m in vm.outbox if isinstance(m, UserMessage)]
    return vm.variables[start : start + RESULTS + 40], emitted


def test_python_vm_computes_like_c() -> None:
    d = playground_description()
    variables, emitted = run_on_python_vm(d, differential_program(d))
    assert variables[0:5] == [10, 4, 21, 2, 1]
    assert variables[5:10] == [-4, -10, -21, -2, -1]  # C division and remainder truncate toward 0
    assert variables[10] == 60000 - 65536  # 16-bit wrap
    assert variables[20] == -32768  # 1 << 15
    assert variables[34] == -32768  # abs(-32768) wraps
    assert variables[42] == 55
    assert variables[43:48] == [0, 3, 6, 9, 6]
    assert variables[RESULTS + 37] == 1  # "when" fired once for two events
    assert variables[RESULTS + 38] == 4  # the subroutine ran twice
    assert [m.type for m in emitted] == [EMITTED, EMITTED + 1, EMITTED + 1]


def test_vm_reports_errors_like_the_real_vm() -> None:
    d = playground_description()
    asm = Assembler()
    asm.handler(0xFFFF)
    asm.push(1)
    asm.push(0)
    asm.binary(Binary.DIV)
    asm.stop()
    asm.handler(1)
    asm.push(9)
    asm.load_indirect(d.user_data_start, 4)
    asm.stop()
    asm.handler(2)
    asm.binary(Binary.ADD)  # nothing on the stack
    asm.stop()
    vm = AsebaVM(1, d, STANDARD_NATIVES)
    vm.set_bytecode(0, asm.assemble())
    vm.start()
    vm.run()
    division = vm.outbox.pop()
    assert isinstance(division, WordMessage)
    assert division.type is MessageType.DIVISION_BY_ZERO
    assert not vm.running
    vm.start()
    vm.user_event(0, 1, ())
    vm.run()
    report = vm.outbox.pop()
    assert isinstance(report, WordMessage)
    assert report.type is MessageType.ARRAY_ACCESS_OUT_OF_BOUNDS
    assert report.words[1:] == (4, 9)
    vm.start()
    vm.user_event(0, 2, ())
    vm.run()
    failure = vm.outbox.pop()
    assert isinstance(failure, NodeSpecificError)
    assert failure.message == "VM ASSERT !"
    assert not vm.user_event(0, 3, ())  # no handler: dropped


async def test_same_bytecode_same_results_on_asebaplayground(tmp_path: Path) -> None:
    require_peer("asebaplayground")
    playground = Playground(tmp_path, [free_port()])
    await playground.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", playground.robots[0].port)
        received: list[UserMessage] = []
        network = AsebaNetwork(reader, writer, on_node=lambda node: None, on_event=received.append)
        serving = asyncio.create_task(network.serve())
        node = await network.wait_described(1, 20.0)
        assert node.description is not None
        d = node.description
        bytecode = differential_program(d)
        network.set_bytecode(1, bytecode)
        for _ in range(100):
            if received:
                break
            await asyncio.sleep(0.05)
        for _ in range(2):
            network.emit(0, (1,))
            await asyncio.sleep(0.3)
        real = list(await network.get_variables(1, d.user_data_start, RESULTS + 40))
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
        await network.close()
        python_variables, python_emitted = run_on_python_vm(d, bytecode)
        assert python_variables == real
        assert [(m.type, m.data) for m in received] == [(m.type, m.data) for m in python_emitted]
        assert playground.process is not None
        assert playground.process.returncode is None, playground.log()
    finally:
        await playground.stop()


#: Commands sent to the generated Thymio program in the differential run (event name, words).
PROGRAM_EVENTS = [
    *[("set_led", (group, *range(group, group + 8))) for group in range(7)],
    ("set_led_top", (32, 0, 16)),
    ("set_led_bottom_left", (1, 2, 3)),
    ("set_led_bottom_right", (4, 5, 6)),
    ("play_sound", (440, 30)),
    ("play_system_sound", (3,)),
    ("set_comm_payload", (77,)),
    ("enable_comm", (1,)),
    ("set_speed", (120, -80)),
    ("set_led_gesture", (1, 2, 0, 1500, 3, 2, 1, 0, 1, 1, 1, 1, 1, 1)),
    ("set_led_gesture", (0, 2, 0, 1500, 3, 2, 1, 0, 1, 1, 1, 1, 1, 1)),
]
#: Program variables that the commands set (the others follow the timers).
COMMAND_VARIABLES = (
    "gw.led",
    "gw.led_top",
    "gw.led_bottom_left",
    "gw.led_bottom_right",
    "gw.gesture",
    "gw.sound",
    "gw.system_sound",
    "gw.comm_tx",
    "gw.comm_enable",
    "gw.speed",
    "gw.step",
    "gw.length",
)
NODE_VARIABLES = ("motor.left.target", "motor.right.target", "prox.comm.tx", "timer.period")


async def test_the_generated_thymio_program_runs_alike_on_both_vms(tmp_path: Path) -> None:
    require_peer("asebaplayground")
    playground = Playground(tmp_path, [free_port()])
    await playground.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", playground.robots[0].port)
        network = AsebaNetwork(reader, writer, on_node=lambda node: None, on_event=lambda event: None)
        serving = asyncio.create_task(network.serve())
        node = await network.wait_described(1, 20.0)
        assert node.description is not None
        d = node.description
        program = generate(d)
        network.set_bytecode(1, program.bytecode)
        await asyncio.sleep(0.3)
        for name, words in PROGRAM_EVENTS:
            network.emit(EVENT_ID[name], words)
            await asyncio.sleep(0.1)  # one event per simulation step: a newer event kills a running one
        await asyncio.sleep(0.3)
        variables = {**program.variables, **{name: d.variable(name) for name in NODE_VARIABLES}}
        real = {
            name: await network.get_variables(1, variables[name].address, variables[name].size)
            for name in (*COMMAND_VARIABLES, *NODE_VARIABLES)
        }
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
        await network.close()
        outputs = ThymioOutputs()
        vm = AsebaVM(1, d, {**STANDARD_NATIVES, **thymio_natives(outputs)})
        vm.set_bytecode(0, program.bytecode)
        vm.start()
        vm.run()
        for name, words in PROGRAM_EVENTS:
            vm.user_event(0, EVENT_ID[name], words)
            vm.run()
        python = {
            name: tuple(vm.variables[variables[name].address : variables[name].address + variables[name].size])
            for name in real
        }
        assert python == real
        assert real["gw.led"][8:16] == (1, 2, 3, 4, 5, 6, 7, 8)
        assert real["timer.period"] == (0, 100)  # the gesture is off again
        assert outputs.leds["leds.prox.v"] == (3, 4)
        assert outputs.tone == (440, 30)
        assert playground.process is not None
        assert playground.process.returncode is None, playground.log()
    finally:
        await playground.stop()
