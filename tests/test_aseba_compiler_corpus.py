"""The corpus through the real daemon's LoadScript on asebaplayground, against the Python VM.

Every script of `tests/data/aseba_corpus` is loaded with `asebaros_msgs/LoadScript` on the
playground's simulated Thymio (the real Aseba VM), its input events (those named ``in_*``) are
sent twice by name, and then every script variable is read by name and every event it emitted
is collected. The same bytecode run on the Python VM with the same events must give the same
variables and the same emitted events.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from devices.sim.aseba_playground import Playground
from devices.sim.thymio import ThymioOutputs, thymio_natives
from protocols.aseba.compiler import CompiledScript, compile_script, parse_aesl
from protocols.aseba.messages import UserMessage
from protocols.aseba.natives import STANDARD_NATIVES
from protocols.aseba.vm import AsebaVM
from tests.conftest import require_peer
from tests.harness import Client, GatewayUnderTest, connect, free_port, gateway_config
from tests.inprocess import start_in_process
from tests.test_aseba_vm import playground_description

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(180)]

CORPUS = Path(__file__).parent / "data" / "aseba_corpus"
SCRIPTS = sorted(p.name for p in CORPUS.glob("*.aesl"))
DEVICE = "thymio"
REPLY_TIMEOUT_S = 10.0
#: Time for the playground's VM to run a handler (it runs on its simulation step).
SETTLE_S = 0.12


def inputs(compiled: CompiledScript) -> list[tuple[str, int, tuple[int, ...]]]:
    """The events sent to a script: each ``in_*`` event twice, with words derived from its index."""
    sent = []
    for event_id, event in enumerate(compiled.events):
        if event.name.startswith("in"):
            words = tuple(event_id * 5 + j * 3 - 4 for j in range(event.size))
            sent += [(event.name, event_id, words), (event.name, event_id, tuple(w * -2 + 1 for w in words))]
    return sent


def compile_corpus(name: str) -> CompiledScript:
    document = parse_aesl((CORPUS / name).read_text())
    description = playground_description()
    program = document.program_for(description.name, 1)
    return compile_script(program.source, description, document.events, document.constants)


def run_on_python_vm(compiled: CompiledScript) -> tuple[dict[str, list[int]], list[tuple[str, list[int]]]]:
    """The script's variables and emitted events (by name) after the inputs, on the Python VM."""
    description = playground_description()
    vm = AsebaVM(1, description, {**STANDARD_NATIVES, **thymio_natives(ThymioOutputs())})
    vm.set_bytecode(0, compiled.bytecode)
    vm.start()
    vm.run()
    for _, event_id, words in inputs(compiled):
        vm.user_event(0, event_id, words)
        vm.run()
    variables = {name: vm.variables[v.address : v.address + v.size] for name, v in sorted(compiled.variables.items())}
    emitted = [
        (compiled.events[m.type].name, list(m.data))
        for m in vm.outbox
        if isinstance(m, UserMessage) and m.type < len(compiled.events)
    ]
    return variables, emitted


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def playground(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Playground]:
    require_peer("asebaplayground")
    running = Playground(tmp_path_factory.mktemp("playground"), [free_port()])
    await running.start()
    yield running
    await running.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(playground: Playground, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[GatewayUnderTest]:
    devices = f"""
[devices.{DEVICE}]
kind = "aseba"
target = "tcp:127.0.0.1;{playground.robots[0].port}"
request_timeout_ms = 5000
thymio_program = false
script_folders = ["{CORPUS}"]
"""
    tmp_path = tmp_path_factory.mktemp("gateway")
    running = await start_in_process(tmp_path, gateway_config(tmp_path, devices))
    yield running
    assert await running.stop() == 0
    assert playground.process is not None
    assert playground.process.returncode is None, playground.log()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(gateway: GatewayUnderTest) -> AsyncIterator[Client]:
    ws = await connect(gateway, "ws")
    await ws.ok("subscribe", topics=[f"{DEVICE}/**"])
    for _ in range(300):
        devices = (await ws.ok("list_devices"))["devices"]
        if all(d["status"] == "connected" for d in devices if d["id"] == DEVICE):
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError(f"Thymio not connected; gateway log: {gateway.logs[-20:]}")
    yield ws
    await ws.close()


async def command(client: Client, type_: str, data: dict[str, Any]) -> dict[str, Any]:
    return await client.request(
        "command", timeout=REPLY_TIMEOUT_S, device=DEVICE, type=type_, data=data, timeout_s=REPLY_TIMEOUT_S
    )


async def succeed(client: Client, type_: str, data: dict[str, Any]) -> dict[str, Any]:
    answer = await command(client, type_, data)
    assert answer["ok"], answer
    result: dict[str, Any] = answer["data"] or {}
    return result


@pytest.mark.parametrize("name", SCRIPTS)
async def test_script_behaves_alike_on_the_playground_and_the_python_vm(client: Client, name: str) -> None:
    compiled = compile_corpus(name)
    client.pushed.clear()
    await succeed(client, "asebaros_msgs/LoadScript", {"file_name": name})
    await asyncio.sleep(SETTLE_S * 2)
    for event_name, _, words in inputs(compiled):
        await succeed(client, "hwgateway/AsebaEvent", {"name": event_name, "data": list(words)})
        await asyncio.sleep(SETTLE_S)
    await asyncio.sleep(SETTLE_S)
    real = {
        variable: (await succeed(client, "asebaros_msgs/GetVariable", {"variable": variable}))["data"]
        for variable in sorted(compiled.variables)
    }
    prefix = f"{DEVICE}/node/1/events/"
    emitted = [
        (m["topic"][len(prefix) :], list(m["data"]["data"]))
        for m in client.pushed
        if m["op"] == "state" and m["topic"].startswith(prefix)
    ]
    python_variables, python_emitted = run_on_python_vm(compiled)
    assert real == python_variables
    assert emitted == python_emitted


async def test_description_lists_the_script_and_variables_are_writable(client: Client) -> None:
    await succeed(client, "asebaros_msgs/LoadScript", {"file_name": "05_const.aesl", "constants": [
        {"name": "SCALE", "value": 10}
    ]})  # fmt: skip
    description = (await succeed(client, "asebaros_msgs/GetDescription", {}))["description"]
    assert {"name": "SCALE", "value": 10} in description["constants"]
    assert {"name": "LIMIT", "value": 40} in description["constants"]
    assert description["events"] == ["in_a"]
    assert "v" in description["variables"]
    assert "motor.left.target" in description["variables"]
    await asyncio.sleep(SETTLE_S * 2)
    assert (await succeed(client, "asebaros_msgs/GetVariable", {"variable": "v"}))["data"] == [40, 85, -10]
    await succeed(client, "asebaros_msgs/SetVariable", {"variable": "v", "data": [1, 2, 3]})
    await asyncio.sleep(SETTLE_S)
    assert (await succeed(client, "asebaros_msgs/GetVariable", {"variable": "v"}))["data"] == [1, 2, 3]
    await succeed(client, "hwgateway/AsebaEvent", {"name": "in_a", "data": [2]})
    await asyncio.sleep(SETTLE_S * 2)
    assert (await succeed(client, "asebaros_msgs/GetVariable", {"variable": "v"}))["data"] == [60, 2, 3]


async def test_an_event_with_more_words_than_its_size_is_refused(client: Client) -> None:
    """Issue 13, defect 7: `in_a` carries 1 word; 3 were sent to the VM before."""
    await succeed(client, "asebaros_msgs/LoadScript", {"file_name": "05_const.aesl"})
    await asyncio.sleep(SETTLE_S * 2)
    answer = await command(client, "hwgateway/AsebaEvent", {"name": "in_a", "data": [2, 3, 4]})
    assert not answer["ok"]
    assert answer["error"]["code"] == "invalid_argument"
    assert "event 'in_a' carries 1 word, 3 given" in answer["error"]["message"]
    await succeed(client, "hwgateway/AsebaEvent", {"name": "in_a", "data": [2]})
    await asyncio.sleep(SETTLE_S * 2)
    # v[0] = event.args[0] * SCALE + LIMIT, with the file's SCALE = 3 and LIMIT = 40.
    assert (await succeed(client, "asebaros_msgs/GetVariable", {"variable": "v"}))["data"][0] == 46


@pytest.mark.parametrize(
    ("file_name", "expected"),
    [
        ("../test_aseba_vm.py", "not a file inside the script folders"),
        ("/etc/passwd", "not a file inside the script folders"),
        ("missing.aesl", "not a file inside the script folders"),
        ("golden.json", "not well-formed XML"),
    ],
)
async def test_files_outside_the_folders_or_malformed_are_refused(
    client: Client, file_name: str, expected: str
) -> None:
    answer = await command(client, "asebaros_msgs/LoadScript", {"file_name": file_name})
    assert not answer["ok"]
    assert answer["error"]["code"] == "invalid_argument"
    assert expected in answer["error"]["message"]


async def test_a_script_that_does_not_compile_is_refused_with_its_position(client: Client) -> None:
    answer = await command(
        client, "asebaros_msgs/LoadScript", {"file_name": "05_const.aesl", "constants": [{"name": "LIMIT", "value": 0}]}
    )
    assert not answer["ok"]  # the script defines LIMIT itself with `const`
    assert answer["error"]["code"] == "invalid_argument"
    # Line and column in the .aesl file (the node's program starts on its line 15, column 35).
    assert "05_const.aesl:15:35: LIMIT is already defined" in answer["error"]["message"]
    answer = await command(client, "asebaros_msgs/LoadScript", {"file_name": "24_division.aesl", "node_ids": [9]})
    assert not answer["ok"]
    assert "node 9" in answer["error"]["message"]
