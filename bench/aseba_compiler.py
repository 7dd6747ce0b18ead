"""Differential report: our Aseba compiler against Debian's (`asebamassloader`), on the same programs.

Method: every .aesl program of the folders (default: `tests/data/aseba_corpus` and
`tests/data/aseba_programs`, our own programs written after public Thymio programs and the
constructs of Aseba's compiler tests) is compiled (1) by `protocols.aseba.compiler` and (2) by
Debian's `asebamassloader`, pointed at `FakeNode`: a TCP node that replays the playground Thymio's
captured description frames (`tests/data/thymio-playground-description.json`) and records the
SetBytecode it receives. Word counts and words are compared. Then both bytecodes run side by side
on Debian's `asebaplayground` (the real Aseba VM in simulated Thymio IIs, one robot for ours and
one for the reference, `--pairs` pairs at once): memory from the first script variable up is
zeroed, the bytecode loaded and run, then the same input events are sent to both (each event
whose name starts with ``in``, `--rounds` times, with words derived from the event id and the
round), one simulation step apart. Afterwards every script variable and every node variable the
program writes is read from both robots, and the events each robot emitted are collected; the
behaviour is equal when all of them are. Programs in `tests/data/aseba_corpus/refused` must be
refused by both compilers.

Figures: programs, both compile, identical words, ours shorter / equal / longer (in words),
behaviour equal, and for the refused programs, refused by both.

`--random COUNT [--seed S]` compares COUNT random programs (`bench/aseba_random_programs.py`) instead
of the folders (or as well, with `--folder`).

Run:  scripts/loopback-only.sh .venv/bin/python bench/aseba_compiler.py [--rounds 3] [--pairs 4] [--json]
      [--random COUNT [--seed S]] [--folder F ...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

THIS_FILE = Path(__file__).resolve()
REPO_ROOT = THIS_FILE.parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.aseba_random_programs import write_programs  # noqa: E402 - after the path fix above
from devices.aseba.network import AsebaNetwork, NodeState  # noqa: E402
from devices.sim.aseba_playground import Playground  # noqa: E402
from protocols.aseba.compiler import CompiledScript, CompileError, compile_script, parse_aesl  # noqa: E402
from protocols.aseba.compiler import syntax as s  # noqa: E402
from protocols.aseba.compiler.description_file import load_description  # noqa: E402
from protocols.aseba.compiler.parser import parse  # noqa: E402
from protocols.aseba.description import NodeDescription  # noqa: E402
from protocols.aseba.messages import MessageType, UserMessage, command  # noqa: E402
from protocols.errors import ProtocolError  # noqa: E402
from tests.harness import free_port  # noqa: E402 - ports below the ephemeral range, a slice per xdist worker

DATA = REPO_ROOT / "tests" / "data"
DESCRIPTION_FRAMES = DATA / "thymio-playground-description.json"
FOLDERS = (DATA / "aseba_corpus", DATA / "aseba_programs")
REFUSED = DATA / "aseba_corpus" / "refused"
#: The node id FakeNode answers as (asebamassloader compiles the program for it).
FAKE_NODE_ID = 1
#: Seconds asebamassloader gets to compile and load one program.
REFERENCE_TIMEOUT_S = 20.0
#: How many asebamassloader processes run at once (each sits idle about 1 s before it connects).
REFERENCE_PARALLEL = 16
#: Time for the playground's VM to take an event and run its handler (it runs on its simulation step).
SETTLE_S = 0.12
#: Seconds to wait for a robot's description or a variable read.
ROBOT_TIMEOUT_S = 10.0
#: The documented, deliberate divergences from the reference (see README, "Aseba scripts").
DELIBERATE = {
    "aseba_programs/sub_ending_with_if_return.aesl": (
        "Debian's compiler drops a subroutine's final `ret` when its last instruction is a `return` "
        "even if a jump targets the end, so the subroutine runs into the next one; ours keeps the `ret` "
        "(1 word longer, and correct)"
    ),
}


def description() -> NodeDescription:
    """The playground Thymio's description, as captured from asebaplayground."""
    return load_description(DESCRIPTION_FRAMES.read_text())


# -- the reference compiler ------------------------------------------------------------------------


class FakeNode:
    """A TCP node that replays captured description frames and records SetBytecode until Run."""

    def __init__(self) -> None:
        #: The port it listens on, on 127.0.0.1 (set by `start`).
        self.port = 0
        self.frames = [(t, bytes.fromhex(p)) for t, p in json.loads(DESCRIPTION_FRAMES.read_text())]
        self.bytecode: dict[int, int] = {}
        self.done = asyncio.Event()
        self.server: asyncio.Server | None = None

    async def start(self) -> None:
        """Listen on 127.0.0.1, on a port the kernel picks (`port`).

        Not a port probed free beforehand: with many compilations at once (and their connections'
        own ports), another could take it in between (it did, in a CI run: "address already in use").
        """
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Stop listening."""
        if self.server is not None:
            self.server.close()

    def words(self) -> tuple[int, ...]:
        """The bytecode received, in address order."""
        return tuple(self.bytecode[i] for i in range(len(self.bytecode)))

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        def send(type_: int, payload: bytes) -> None:
            writer.write(struct.pack("<HHH", len(payload), FAKE_NODE_ID, type_) + payload)

        try:
            while True:
                length, _, type_ = struct.unpack("<HHH", await reader.readexactly(6))
                payload = await reader.readexactly(length)
                words = struct.unpack(f"<{length // 2}H", payload[: length // 2 * 2])
                if type_ == MessageType.LIST_NODES:
                    send(MessageType.NODE_PRESENT, struct.pack("<H", 5))
                elif type_ in (MessageType.GET_NODE_DESCRIPTION, MessageType.GET_DESCRIPTION):
                    for frame_type, frame_payload in self.frames:
                        send(frame_type, frame_payload)
                elif type_ == MessageType.SET_BYTECODE and words[0] == FAKE_NODE_ID:
                    for offset, value in enumerate(words[2:]):
                        self.bytecode[words[1] + offset] = value
                elif type_ == MessageType.RUN and words[0] == FAKE_NODE_ID:
                    self.done.set()
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def make_locale(folder: Path) -> Path:
    """An en_US.UTF-8 locale for the Aseba tools, built into `folder` (returns the LOCPATH)."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "en_US.UTF-8"
    if not target.exists():
        # Exit status 1 only reports warnings about the locale source; the files are written.
        subprocess.run(
            ["localedef", "-i", "en_US", "-f", "UTF-8", str(target)], check=False, capture_output=True, timeout=60
        )
    if not target.exists():
        raise RuntimeError("localedef could not build en_US.UTF-8")
    return folder


@dataclass(frozen=True, slots=True)
class Compiled:
    """One compiler's result: the words, or the error it printed."""

    words: tuple[int, ...] | None
    error: str = ""


async def reference_compile(aesl: Path, locale: Path) -> Compiled:
    """Compile `aesl` with asebamassloader against the playground Thymio's description."""
    node = FakeNode()
    await node.start()
    process = await asyncio.create_subprocess_exec(
        "asebamassloader", "--once", str(aesl), f"tcp:127.0.0.1;{node.port}",
        env={**os.environ, "LOCPATH": str(locale)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output: list[str] = []

    async def read_until_error() -> None:
        assert process.stdout is not None
        async for line in process.stdout:
            output.append(line.decode(errors="replace").strip())
            if "error" in output[-1].lower():
                return  # it keeps running after a compilation error

    tasks = [asyncio.create_task(job) for job in (node.done.wait(), read_until_error(), process.wait())]
    try:
        await asyncio.wait(tasks, timeout=REFERENCE_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if process.returncode is None:
            process.terminate()
            with contextlib.suppress(ProcessLookupError):
                await process.wait()
        await node.stop()
    if node.done.is_set():
        return Compiled(node.words())
    return Compiled(None, " ".join(output) or "no bytecode within the time limit")


def our_compile(aesl: Path) -> tuple[Compiled, CompiledScript | None]:
    """Compile `aesl` with our compiler for the playground Thymio (node id 1)."""
    try:
        document = parse_aesl(aesl.read_text(encoding="utf-8"))
        program = document.program_for("thymio-II", 1)
    except ProtocolError as error:
        return Compiled(None, str(error)), None
    try:
        compiled = compile_script(program.source, description(), document.events, document.constants)
    except CompileError as error:
        located = program.locate(error)
        return Compiled(None, f"{located.line}:{located.column}: {located.message}"), None
    return Compiled(compiled.bytecode), compiled


# -- running on the playground ---------------------------------------------------------------------


def inputs(compiled: CompiledScript, rounds: int) -> list[tuple[int, tuple[int, ...]]]:
    """The events sent to a program: each ``in*`` event once per round, words from its id and the round."""
    sent = []
    for round_ in range(rounds):
        for event_id, event in enumerate(compiled.events):
            if event.name.startswith("in"):
                words = [event_id * 5 + j * 3 - 4 for j in range(event.size)]
                for _ in range(round_):
                    words = [w * -2 + 1 for w in words]
                sent.append((event_id, tuple(words)))
    return sent


def written_names(source: str, event_sizes: dict[str, int]) -> set[str]:
    """Names of the variables a program may write: assignment targets and native arguments."""
    names: set[str] = set()
    program = parse(source, event_sizes)

    def visit(body: Sequence[s.Statement]) -> None:
        for st in body:
            if isinstance(st, s.Assign):
                names.add(st.target.name)
            elif isinstance(st, s.Call):
                names.update(a.name for a in st.arguments if isinstance(a, s.Name | s.Index | s.Slice))
            elif isinstance(st, s.If):
                for _, branch in st.branches:
                    visit(branch)
                visit(st.otherwise)
            elif isinstance(st, s.When | s.While | s.For):
                if isinstance(st, s.For):
                    names.add(st.variable.name)
                visit(st.body)

    for section in program.sections:
        visit(section.body)
    return names


@dataclass
class Robot:
    """One playground robot and the link to it."""

    node_id: int
    network: AsebaNetwork
    task: asyncio.Task[None]
    emitted: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)

    def load(self, bytecode: Sequence[int], desc: NodeDescription) -> None:
        """Stop the VM, zero the memory from the first script variable up, load and run `bytecode`."""
        self.network.send(command(MessageType.STOP, self.node_id))
        zeros = (0,) * (desc.variables_size - desc.user_data_start)
        self.network.set_variables(self.node_id, desc.user_data_start, zeros)
        # Both robots of a pair show the same `_id` to the program (their node ids differ).
        self.network.set_variables(self.node_id, desc.variables["_id"].address, (1,))
        self.emitted.clear()
        self.network.set_bytecode(self.node_id, tuple(bytecode))


@dataclass(frozen=True, slots=True)
class Behaviour:
    """What a run left: the variables read (by name) and the events emitted (id, words)."""

    variables: dict[str, tuple[int, ...]]
    emitted: tuple[tuple[int, tuple[int, ...]], ...]


class Robots:
    """A playground with 2 × `pairs` Thymios, one link each; pair k is robots 2k (ours) and 2k+1."""

    def __init__(self, workdir: Path, pairs: int) -> None:
        self.playground = Playground(workdir, [free_port() for _ in range(2 * pairs)])
        self.robots: list[Robot] = []
        self.free: asyncio.Queue[tuple[Robot, Robot]] = asyncio.Queue()
        self.desc = description()

    async def start(self) -> None:
        """Start the playground and connect to every robot."""
        await self.playground.start()
        for robot in self.playground.robots:
            reader, writer = await asyncio.open_connection("127.0.0.1", robot.port)
            holder: list[Robot] = []

            def on_event(message: UserMessage, holder: list[Robot] = holder) -> None:
                if holder:
                    holder[0].emitted.append((message.type, tuple(message.data)))

            def on_node(_node: NodeState) -> None:
                pass

            network = AsebaNetwork(
                reader, writer, on_node=on_node, on_event=on_event, request_timeout_s=ROBOT_TIMEOUT_S
            )
            task = asyncio.create_task(network.serve())
            holder.append(Robot(robot.node_id, network, task))
            self.robots.append(holder[0])
        for robot_ in self.robots:
            await robot_.network.wait_described(robot_.node_id, ROBOT_TIMEOUT_S)
        for k in range(0, len(self.robots), 2):
            self.free.put_nowait((self.robots[k], self.robots[k + 1]))

    async def stop(self) -> None:
        """Close the links, then stop the playground."""
        for robot in self.robots:
            robot.task.cancel()
            await asyncio.gather(robot.task, return_exceptions=True)
            await robot.network.close()
        await self.playground.stop()

    async def run_pair(
        self, compiled: CompiledScript, ours: Sequence[int], reference: Sequence[int], rounds: int, names: set[str]
    ) -> tuple[Behaviour, Behaviour]:
        """Run `ours` and `reference` side by side with the same inputs; what each left."""
        pair = await self.free.get()
        try:
            for robot, bytecode in zip(pair, (ours, reference), strict=True):
                robot.load(bytecode, self.desc)
                await robot.network.drain()
            await asyncio.sleep(SETTLE_S * 2)
            for event_id, words in inputs(compiled, rounds):
                for robot in pair:
                    robot.network.emit(event_id, words)
                    await robot.network.drain()
                await asyncio.sleep(SETTLE_S)
            await asyncio.sleep(SETTLE_S)
            return (await self._behaviour(pair[0], compiled, names), await self._behaviour(pair[1], compiled, names))
        finally:
            self.free.put_nowait(pair)

    async def _behaviour(self, robot: Robot, compiled: CompiledScript, names: set[str]) -> Behaviour:
        variables = {**{n: v for n, v in self.desc.variables.items() if n in names}, **compiled.variables}
        end = max(v.address + v.size for v in variables.values()) if variables else 0
        memory = await robot.network.get_variables(robot.node_id, 0, end)
        read = {name: memory[v.address : v.address + v.size] for name, v in sorted(variables.items())}
        return Behaviour(read, tuple(robot.emitted))


# -- the report ------------------------------------------------------------------------------------


@dataclass
class Result:
    """One program: both compilations and, when both compiled, whether the behaviour was equal."""

    name: str
    ours: Compiled
    reference: Compiled
    behaviour_equal: bool | None = None
    difference: str = ""
    #: What each robot left (ours, reference), when both compiled.
    behaviours: tuple[Behaviour, Behaviour] | None = None

    @property
    def deliberate(self) -> str:
        """Why this program's divergence is deliberate, or "" for none."""
        return DELIBERATE.get(self.name, "")

    @property
    def both_compile(self) -> bool:
        """True when both compilers produced bytecode."""
        return self.ours.words is not None and self.reference.words is not None


def program_paths(folders: Iterable[Path]) -> list[Path]:
    """The .aesl files of `folders` (not their subfolders), sorted by folder then name."""
    return [path for folder in folders for path in sorted(folder.glob("*.aesl"))]


async def compile_all(paths: Sequence[Path], locale: Path) -> list[Result]:
    """Both compilations of every program (asebamassloader runs `REFERENCE_PARALLEL` at a time)."""
    gate = asyncio.Semaphore(REFERENCE_PARALLEL)

    async def one(path: Path) -> Result:
        ours, _ = our_compile(path)
        async with gate:
            reference = await reference_compile(path, locale)
        return Result(f"{path.parent.name}/{path.name}", ours, reference)

    # A task group, so that one that fails stops the others (and their asebamassloader processes)
    # rather than leaving them running behind the error.
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(one(path)) for path in paths]
    return [task.result() for task in tasks]


def prepare(path: Path) -> tuple[CompiledScript | None, set[str]]:
    """Our compilation of `path` and the names of the variables its program writes."""
    _, compiled = our_compile(path)
    document = parse_aesl(path.read_text(encoding="utf-8"))
    source = document.program_for("thymio-II", 1).source
    return compiled, written_names(source, {e.name: e.size for e in document.events})


async def run_all(paths: Sequence[Path], results: Sequence[Result], robots: Robots, rounds: int) -> None:
    """Run every program both compilers accepted on the playground, and compare."""

    async def one(path: Path, result: Result) -> None:
        if result.ours.words is None or result.reference.words is None:
            return
        compiled, names = prepare(path)
        assert compiled is not None
        ours, reference = await robots.run_pair(compiled, result.ours.words, result.reference.words, rounds, names)
        result.behaviours = (ours, reference)
        result.behaviour_equal = ours == reference
        if not result.behaviour_equal:
            diff: dict[str, object] = {
                name: (value, reference.variables[name])
                for name, value in ours.variables.items()
                if value != reference.variables[name]
            }
            if ours.emitted != reference.emitted:
                diff["emitted"] = (ours.emitted, reference.emitted)
            result.difference = f"ours vs reference: {diff}"

    await asyncio.gather(*(one(path, result) for path, result in zip(paths, results, strict=True)))


def summary(results: Sequence[Result], refused: Sequence[Result]) -> dict[str, Any]:
    """The report's figures (the documented divergences are counted apart)."""
    both = [r for r in results if r.both_compile]
    lengths = [(len(r.ours.words or ()), len(r.reference.words or ())) for r in both]
    return {
        "programs": len(results),
        "both_compile": len(both),
        "only_ours_compiles": [r.name for r in results if r.ours.words is not None and r.reference.words is None],
        "only_reference_compiles": [r.name for r in results if r.ours.words is None and r.reference.words is not None],
        "identical": sum(r.ours.words == r.reference.words for r in both),
        "ours_shorter": sum(o < ref for o, ref in lengths),
        "ours_equal": sum(o == ref for o, ref in lengths),
        "ours_longer": [r.name for (o, ref), r in zip(lengths, both, strict=True) if o > ref and not r.deliberate],
        "words_ours": sum(o for o, _ in lengths),
        "words_reference": sum(ref for _, ref in lengths),
        "behaviour_equal": sum(r.behaviour_equal is True for r in both),
        "behaviour_different": {
            r.name: r.difference for r in both if r.behaviour_equal is not True and not r.deliberate
        },
        "documented_divergences": {
            r.name: {
                "words": [len(r.ours.words or ()), len(r.reference.words or ())],
                "behaviour_equal": r.behaviour_equal,
                "why": r.deliberate,
            }
            for r in both
            if r.deliberate
        },
        "refused_programs": len(refused),
        "refused_by_both": sum(r.ours.words is None and r.reference.words is None for r in refused),
        "refused_accepted_by": {
            r.name: [who for who, c in (("ours", r.ours), ("reference", r.reference)) if c.words is not None]
            for r in refused
            if r.ours.words is not None or r.reference.words is not None
        },
    }


async def differential(
    paths: Sequence[Path], refused_paths: Sequence[Path], rounds: int, pairs: int, workdir: Path
) -> tuple[list[Result], list[Result], dict[str, Any]]:
    """Compile, run and compare every program; the per-program results and the figures.

    `refused_paths` are programs both compilers must refuse (they are only compiled).
    """
    locale = make_locale(workdir / "locale")
    compiled = await compile_all([*paths, *refused_paths], locale)
    results, refused = compiled[: len(paths)], compiled[len(paths) :]
    robots = Robots(workdir / "playground", pairs)
    await robots.start()
    try:
        await run_all(paths, results, robots, rounds)
    finally:
        await robots.stop()
    return results, refused, summary(results, refused)


def report_lines(results: Sequence[Result], figures: dict[str, Any]) -> list[str]:
    """The printed report: one line per program, then the figures."""
    lines = [f"{'program':44} {'ours':>5} {'ref':>5}  words      behaviour"]
    for r in results:
        ours = "-" if r.ours.words is None else str(len(r.ours.words))
        ref = "-" if r.reference.words is None else str(len(r.reference.words))
        same = (
            "identical"
            if r.both_compile and r.ours.words == r.reference.words
            else ("differ" if r.both_compile else "")
        )
        behaviour = {True: "equal", False: "DIFFERENT", None: ""}[r.behaviour_equal]
        lines.append(f"{r.name:44} {ours:>5} {ref:>5}  {same:10} {behaviour}")
    f = figures
    lines += [
        "",
        f"programs: {f['programs']}",
        f"both compile: {f['both_compile']}"
        + (f" (only ours: {f['only_ours_compiles']})" if f["only_ours_compiles"] else "")
        + (f" (only the reference: {f['only_reference_compiles']})" if f["only_reference_compiles"] else ""),
        f"identical: {f['identical']}",
        f"ours shorter / equal / longer: {f['ours_shorter']} / {f['ours_equal']} / "
        f"{len(f['ours_longer']) + len(f['documented_divergences'])}"
        + (f" {f['ours_longer']}" if f["ours_longer"] else "")
        + (f" (documented divergences: {len(f['documented_divergences'])})" if f["documented_divergences"] else ""),
        f"words in total: ours {f['words_ours']}, reference {f['words_reference']}",
        f"behaviour equal: {f['behaviour_equal']} of {f['both_compile']}",
        f"refused by both: {f['refused_by_both']} of {f['refused_programs']}",
    ]
    for name, divergence in f["documented_divergences"].items():
        lines.append(f"  documented divergence: {name}: {divergence['why']}")
    for name, difference in f["behaviour_different"].items():
        lines.append(f"  behaviour differs: {name}: {difference}")
    for name, accepted in f["refused_accepted_by"].items():
        lines.append(f"  should be refused: {name}: accepted by {accepted}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Run the differential report; exit status 1 when a program is longer or behaves differently."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", action="append", type=Path, help="folder of .aesl programs (repeatable)")
    parser.add_argument("--rounds", type=int, default=3, help="times each input event is sent (default 3)")
    parser.add_argument("--pairs", type=int, default=4, help="robot pairs run at once (default 4)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--random",
        type=int,
        default=0,
        metavar="COUNT",
        help="also COUNT random programs (bench/aseba_random_programs.py)",
    )
    parser.add_argument("--seed", type=int, default=1, help="the random programs' seed (default 1)")
    args = parser.parse_args(argv)
    if args.random < 0:
        parser.error("--random must be 0 or more")
    paths = program_paths(args.folder or ([] if args.random else FOLDERS))
    refused = program_paths([REFUSED])
    with tempfile.TemporaryDirectory() as folder:
        paths += write_programs(Path(folder) / "random", args.seed, args.random)
        results, _, figures = asyncio.run(differential(paths, refused, args.rounds, args.pairs, Path(folder)))
    print(json.dumps(figures, indent=2) if args.json else "\n".join(report_lines(results, figures)))
    bad = figures["ours_longer"] or figures["behaviour_different"] or figures["refused_accepted_by"]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
