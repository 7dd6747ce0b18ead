"""Classroom benchmark: one gateway owning N Thymios, one Thymio Suite client per student, a teacher watching.

Method, for each class size N (default 6, 20 and 30):

- one Debian `asebaplayground` world with N simulated Thymio IIs (the real Aseba VM), each on its own
  TCP port; the real daemon (`python -m gateway run`, a process of its own) owns all N as `aseba`
  devices `robot-01`... and serves them on its TDM face's WebSocket;
- one connection of Thymio Suite's JavaScript client (npm thymio-api 0.11.1 unchanged, through
  tests/node/thymio/driver.mjs, `--per-driver` connections per Node process) per student, and one
  for the teacher, which takes no lock and watches every robot's variables and events;
- `[auth]` tokens as a teacher sets them up: the teacher's `admin` token, and per student a
  `control` token whose devices are its own robot (per-student focus: it sees no other robot).
  `--open` runs without tokens: every student sees every robot, the others' as `busy`;
- each student locks its robot (all at once), checks what it sees of the others, tries to lock and
  to program its neighbour's robot (both must be refused: with focus thymio-api does not even know
  that robot; open, the face answers `node_busy`), then `--rounds` times, all students at once:
  registers its events, sends an Aseba program (VPL3's order: send, then run), runs it, and waits for
  the `started [mark]` event the program emits first; then `--samples` times writes a variable and
  waits for the new value in its own watch and in the teacher's.

Figures per size:

- program-to-running (ms): from sending the program to the program's first event arriving at the
  student (compile, load on the VM, run, the VM's emit, back through the gateway), p50 / p99 over
  every student and round, and the slowest robot's p50;
- variable update (ms): from a student's SetVariables to the value in VariablesChanged, in the
  student's own watch and in the teacher's (p50 / p99; the face reads watched variables every 0.1 s);
- gateway CPU (% of one core, psutil user + system of the daemon's process) during the students'
  work, and over `--idle-s` seconds afterwards with every program running and every watch on; and
  how long its threads were runnable but waited for a core (Linux schedstat, % of the work's time);
- cross-talk: a lock, program or value that reached a robot other than the student's own (a
  neighbour's lock or program accepted, another student's robot shown `ready`, a robot showing
  another student's `mark`, in the student's or the teacher's view). It must be 0.

Run (the playground binds every interface: only inside the loopback-only namespace; the Node
driver needs `npm ci` in tests/node/thymio):

    scripts/loopback-only.sh .venv/bin/python bench/classroom.py [--sizes 6,20,30] [--rounds 5] [--samples 5] [--open]

One JSON line of figures per size. The machine's load average is printed with them: on shared
cores, waiting for a core, not the gateway's CPU, can dominate the latencies.

`tests/test_bench_classroom.py` runs it at N=6 in CI as a test of behaviour (no timing assertion).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil

from bench.common import WAITING, thread_seconds_between, thread_times_ns
from devices.sim.aseba_playground import Playground
from gateway.credentials import hash_token
from tests.harness import RunningGateway, free_port, gateway_config, start_gateway
from tests.thymio_api import ThymioApi, ThymioApiError, thymio_api

#: The TDM's Error code for a node locked by someone else.
NODE_BUSY = 3
TEACHER_TOKEN = "teacher-classroom-token"
#: Seconds one thymio-api op may take (30 students compiling at once on 2 loaded cores).
OP_TIMEOUT_S = 30.0
#: Seconds the teacher's watch may take to show a student's write before it counts as missed.
TEACHER_WAIT_S = 3.0
PROGRAM = """var mark = {mark}
var target = 0
var ticks = 0
emit started [mark]
timer.period[0] = 100
onevent timer0
    ticks = ticks + 1
"""
EVENTS = [{"name": "started", "fixed_size": 1}]


def robot_name(index: int) -> str:
    """The gateway device id of robot `index` (0-based): robot-01, robot-02..."""
    return f"robot-{index + 1:02d}"


def mark_of(round_index: int, student: int) -> int:
    """The `mark` student `student`'s program of round `round_index` sets: unique per student and round."""
    return 1000 * (round_index + 1) + student


@dataclass
class Student:
    """One student: a connection of one driver process, and its robot (`focus`: its token's only one)."""

    index: int
    api: ThymioApi
    focus: bool

    @property
    def token(self) -> str | None:
        """The student's token (None without focus: no tokens at all)."""
        return student_token(self.index) if self.focus else None

    @property
    def client(self) -> str:
        """The connection's name in its driver."""
        return f"student-{self.index + 1:02d}"

    @property
    def robot(self) -> str:
        """The robot this student owns."""
        return robot_name(self.index)

    async def call(self, op: str, **arguments: Any) -> Any:
        """One thymio-api op on this student's connection."""
        return await self.api.call(op, timeout_s=OP_TIMEOUT_S, client=self.client, **arguments)


@dataclass
class Report:
    """What one class size measured (times in ms, CPU in % of one core)."""

    size: int
    rounds: int
    program_to_running_ms: list[float] = field(default_factory=list)
    #: The part of it until the program was compiled and loaded (sendAsebaProgram's answer).
    compile_load_ms: list[float] = field(default_factory=list)
    #: Per robot, its program-to-running times (ms), to find the slowest robot.
    per_robot_ms: dict[str, list[float]] = field(default_factory=dict)
    student_update_ms: list[float] = field(default_factory=list)
    teacher_update_ms: list[float] = field(default_factory=list)
    #: Teacher updates that never came (the face refused the teacher's read, or it timed out).
    teacher_missed: int = 0
    #: Robots whose programs' `started` events the teacher saw (watching, without a lock).
    teacher_saw_programs: int = 0
    crosstalk: int = 0
    crosstalk_details: list[str] = field(default_factory=list)
    #: Programs that did not reach running (the student's event never came), and why.
    failed_programs: int = 0
    failures: list[str] = field(default_factory=list)
    cpu_work_percent: float = 0.0
    #: Time the daemon's threads were runnable but waited for a core, in % of the work's wall time
    #: (summed over threads): high when the machine's other processes starve it.
    waited_work_percent: float = 0.0
    cpu_idle_percent: float = 0.0
    #: The other processes' CPU during the students' work (% of one core): where the time went.
    other_cpu_percent: dict[str, float] = field(default_factory=dict)
    #: The machine's 1-minute load average at the start and the end (the cores are shared).
    load_average: tuple[float, float] = (0.0, 0.0)
    work_s: float = 0.0
    #: VariablesChanged messages a second the teacher's client received, and each student's on average.
    teacher_variable_messages_per_s: float = 0.0
    student_variable_messages_per_s: float = 0.0
    device_reconnects: int = 0

    def cross(self, detail: str) -> None:
        """Count one cross-talk and say what it was."""
        self.crosstalk += 1
        self.crosstalk_details.append(detail)

    def summary(self) -> dict[str, Any]:
        """The figures: percentiles instead of samples."""
        slowest = max((statistics.median(times) for times in self.per_robot_ms.values() if times), default=0.0)
        return {
            "size": self.size,
            "rounds": self.rounds,
            "programs": len(self.program_to_running_ms),
            "failed_programs": self.failed_programs,
            "failures": self.failures[:10],
            "program_to_running_ms": _percentiles(self.program_to_running_ms),
            "compile_load_ms": _percentiles(self.compile_load_ms),
            "slowest_robot_p50_ms": round(slowest, 1),
            "student_update_ms": _percentiles(self.student_update_ms),
            "teacher_update_ms": _percentiles(self.teacher_update_ms),
            "teacher_missed": self.teacher_missed,
            "teacher_saw_programs_of": self.teacher_saw_programs,
            "gateway_cpu_work_percent": round(self.cpu_work_percent, 1),
            "gateway_cpu_idle_percent": round(self.cpu_idle_percent, 1),
            "gateway_waited_for_a_core_percent": round(self.waited_work_percent, 1),
            "other_cpu_work_percent": {name: round(cpu, 1) for name, cpu in self.other_cpu_percent.items()},
            "work_s": round(self.work_s, 1),
            "variable_messages_per_s": {
                "teacher": round(self.teacher_variable_messages_per_s, 1),
                "student": round(self.student_variable_messages_per_s, 1),
            },
            "load_average": [round(load, 1) for load in self.load_average],
            "crosstalk": self.crosstalk,
            "crosstalk_details": self.crosstalk_details[:10],
            "device_reconnects": self.device_reconnects,
        }


def _percentiles(samples: list[float]) -> dict[str, float | int]:
    if not samples:
        return {"n": 0}
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return {"n": len(ordered), "p50": round(statistics.median(ordered), 1), "p99": round(p99, 1)}


def devices_config(playground: Playground) -> str:
    """One `aseba` device per playground robot (the gateway's own Thymio program until a student's replaces it)."""
    return "".join(
        f'[devices.{robot_name(i)}]\nkind = "aseba"\ntarget = "tcp:127.0.0.1;{robot.port}"\nrequest_timeout_ms = 5000\n'
        for i, robot in enumerate(playground.robots)
    )


def student_token(index: int) -> str:
    """Student `index`'s token (control of its own robot only)."""
    return f"student-{index + 1:02d}-classroom-token"


def tokens_config(size: int) -> str:
    """[auth]: the teacher's admin token, and each student's control token for its own robot."""
    text = f'[auth.tokens.teacher]\nhash = "{hash_token(TEACHER_TOKEN)}"\nrole = "admin"\n'
    for index in range(size):
        text += (
            f'[auth.tokens.student-{index + 1:02d}]\nhash = "{hash_token(student_token(index))}"\n'
            f'role = "control"\ndevices = ["{robot_name(index)}"]\n'
        )
    return text


@asynccontextmanager
async def classroom(size: int, workdir: Path, focus: bool) -> AsyncIterator[tuple[Playground, RunningGateway, str]]:
    """A playground with `size` robots and the daemon owning them (with `focus`, tokens); the TDM WebSocket URL."""
    (workdir / "playground").mkdir(parents=True, exist_ok=True)
    playground = Playground(workdir / "playground", [free_port() for _ in range(size)])
    await playground.start()
    try:
        ws = free_port()
        # Every student runs commands on its own robot only; the defaults' per-client limits hold.
        tdm = f'[tdm]\nenabled = true\nhost = "127.0.0.1"\ntcp_port = {free_port()}\nws_port = {ws}\n'
        if focus:
            tdm += tokens_config(size)
        gateway_dir = workdir / "gateway"
        gateway_dir.mkdir(parents=True, exist_ok=True)
        gateway = await start_gateway(gateway_dir, gateway_config(gateway_dir, devices_config(playground), extra=tdm))
        try:
            yield playground, gateway, f"ws://127.0.0.1:{ws}"
        finally:
            await gateway.stop()
    finally:
        await playground.stop()


async def _gather(calls: list[Awaitable[Any]]) -> list[Any]:
    return await asyncio.gather(*calls)


async def run_size(
    size: int,
    workdir: Path,
    rounds: int,
    samples: int,
    idle_s: float,
    per_driver: int,
    focus: bool = True,
    separate_teacher: bool = True,
) -> Report:
    """Run the classroom at `size` robots; what it measured.

    `focus`: each student has a token for its own robot only (it sees no other) and the teacher an
    admin token; else no tokens (everyone sees every robot, the others' as `busy`). Students share
    Node processes `per_driver` at a time; the teacher has its own unless not `separate_teacher`.
    """
    report = Report(size, rounds)
    async with classroom(size, workdir, focus) as (playground, gateway, url), AsyncExitStack() as drivers:
        daemon = psutil.Process(gateway.proc.pid)
        apis = [await drivers.enter_async_context(thymio_api()) for _ in range(max(1, -(-size // max(1, per_driver))))]
        teacher_api = await drivers.enter_async_context(thymio_api()) if separate_teacher else apis[0]
        students = [Student(i, apis[i * len(apis) // size], focus) for i in range(size)]
        robots = [s.robot for s in students]
        teacher_token = TEACHER_TOKEN if focus else None
        await teacher_api.call("connect", timeout_s=OP_TIMEOUT_S, client="teacher", url=url, password=teacher_token)
        await teacher_api.call("waitNodes", timeout_s=60, client="teacher", count=size, status="available")
        await _gather([s.call("connect", url=url, password=s.token) for s in students])
        await _gather([s.call("waitNodes", count=1 if focus else size) for s in students])
        for robot in robots:  # the teacher takes no lock: it watches every robot's variables and events
            await teacher_api.call("watchVariables", client="teacher", node=robot)
            await teacher_api.call("watchEvents", client="teacher", node=robot)

        assert playground.process is not None
        others = {
            "asebaplayground": [psutil.Process(playground.process.pid)],
            "thymio-api (node)": [p for p in psutil.Process().children() if p.name() == "node"],
            "bench": [psutil.Process()],
        }
        others_start = {name: sum(_cpu_s(p) for p in processes) for name, processes in others.items()}
        load_start = os.getloadavg()[0]
        waited_start = thread_times_ns(daemon.pid, WAITING)
        cpu_start, work_start = _cpu_s(daemon), time.perf_counter()
        messages_start = _variable_messages(teacher_api, students)
        await _gather([_lock(student, size, report) for student in students])
        await _gather([_probe_neighbour(student, students, report) for student in students])
        for round_index in range(rounds):
            await _gather([_program(student, round_index, report) for student in students])
            await _gather([_check_marks(student, round_index, report) for student in students])
        await _gather([_updates(student, teacher_api, samples, report) for student in students])
        report.work_s = time.perf_counter() - work_start
        messages = _variable_messages(teacher_api, students)
        report.teacher_variable_messages_per_s = (messages[0] - messages_start[0]) / report.work_s
        report.student_variable_messages_per_s = (messages[1] - messages_start[1]) / size / report.work_s
        report.cpu_work_percent = 100 * (_cpu_s(daemon) - cpu_start) / report.work_s
        waited = thread_seconds_between(waited_start, thread_times_ns(daemon.pid, WAITING))
        report.waited_work_percent = 100 * waited / report.work_s
        for name, processes in others.items():
            spent = sum(_cpu_s(p) for p in processes) - others_start[name]
            report.other_cpu_percent[name] = 100 * spent / report.work_s
        report.load_average = (load_start, os.getloadavg()[0])
        _check_teacher_marks(teacher_api, students, rounds, report)

        cpu_start, idle_start = _cpu_s(daemon), time.perf_counter()
        await asyncio.sleep(idle_s)
        report.cpu_idle_percent = 100 * (_cpu_s(daemon) - cpu_start) / (time.perf_counter() - idle_start)
        await _gather([s.call("unlock", node=s.robot) for s in students])
        report.device_reconnects = sum(d.get("reconnects", 0) for d in await _health_devices(gateway))
        assert playground.process is not None
        if playground.process.returncode is not None:
            report.failures.append(f"asebaplayground ended with {playground.process.returncode}")
    return report


def _cpu_s(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


async def _health_devices(gateway: RunningGateway) -> list[dict[str, Any]]:
    from tests.harness import healthz

    return list((await healthz(gateway))["devices"])


async def _lock(student: Student, size: int, report: Report) -> None:
    """Lock the student's robot; with focus it sees no other robot, else every other shows `busy` (once all locked)."""
    await student.call("lock", node=student.robot)
    await student.call("waitStatus", node=student.robot, status="ready")
    if not student.focus:
        await student.call("waitNodes", count=size - 1, status="busy")
    for node in await student.call("nodes"):
        if node["name"] == student.robot:
            continue
        if student.focus:
            report.cross(f"{student.client} (focus on {student.robot}) sees {node['name']}")
        elif node["status"] == "ready":
            report.cross(f"{student.client} sees {node['name']} ready (another student's robot)")


async def _probe_neighbour(student: Student, students: list[Student], report: Report) -> None:
    """Try to lock and to program the next student's robot: both must be refused."""
    neighbour = students[(student.index + 1) % len(students)].robot
    if neighbour == student.robot:
        return
    try:
        await student.call("lock", node=neighbour)
    except ThymioApiError as error:  # with focus the client does not even know the robot
        if error.code != NODE_BUSY and not student.focus:
            report.cross(f"{student.client} locking {neighbour}: refused with {error.code}, not node_busy")
    else:
        report.cross(f"{student.client} locked {neighbour}, another student's robot")
    try:
        await student.call("sendAsebaProgram", node=neighbour, code=PROGRAM.format(mark=-1))
    except ThymioApiError:
        pass
    else:
        report.cross(f"{student.client} loaded a program on {neighbour}, another student's robot")


async def _program(student: Student, round_index: int, report: Report) -> None:
    """VPL3's run: events, send the program, run it; time until its first event arrives."""
    mark = mark_of(round_index, student.index)
    await student.call("setEventsDescriptions", node=student.robot, events=EVENTS)
    if round_index == 0:
        await student.call("watchEvents", node=student.robot)
        await student.call("watchVariables", node=student.robot)
    started = time.perf_counter()
    waiting = asyncio.ensure_future(student.call("waitEvent", node=student.robot, name="started"))
    try:
        await student.call("sendAsebaProgram", node=student.robot, code=PROGRAM.format(mark=mark))
        report.compile_load_ms.append(1000 * (time.perf_counter() - started))
        await student.call("runProgram", node=student.robot)
        value = (await waiting)["value"]
    except (ThymioApiError, TimeoutError) as error:
        waiting.cancel()
        report.failed_programs += 1
        report.failures.append(f"{student.client} round {round_index}: {error}")
        return
    elapsed_ms = 1000 * (time.perf_counter() - started)
    if value != [mark]:
        report.cross(f"{student.client} round {round_index}: started {value}, its program says {mark}")
    report.program_to_running_ms.append(elapsed_ms)
    report.per_robot_ms.setdefault(student.robot, []).append(elapsed_ms)


async def _check_marks(student: Student, round_index: int, report: Report) -> None:
    """The student's own watch shows its robot running its own program of this round."""
    mark = mark_of(round_index, student.index)
    try:
        await student.call("waitVariable", node=student.robot, name="mark", value=mark)
    except (ThymioApiError, TimeoutError):
        shown = _last_value(student.api, student.client, student.robot, "mark")
        report.cross(f"{student.client} round {round_index}: its robot shows mark {shown}, expected {mark}")


async def _updates(student: Student, teacher: ThymioApi, samples: int, report: Report) -> None:
    """Write `target` on the student's robot; time until the student's and the teacher's watch show it."""
    for sample in range(samples):
        value = 100 * (sample + 1) + student.index
        own = asyncio.ensure_future(student.call("waitVariable", node=student.robot, name="target", value=value))
        seen_by_teacher = asyncio.ensure_future(
            teacher.call(
                "waitVariable",
                timeout_s=TEACHER_WAIT_S,
                client="teacher",
                node=student.robot,
                name="target",
                value=value,
            )
        )
        started = time.perf_counter()
        await student.call("setVariables", node=student.robot, vars={"target": value})
        await _timed(own, started, report.student_update_ms)
        if not await _timed(seen_by_teacher, started, report.teacher_update_ms):
            report.teacher_missed += 1


def _variable_messages(teacher: ThymioApi, students: list[Student]) -> tuple[int, int]:
    """VariablesChanged messages received so far by the teacher's client, and by every student's."""
    return (
        len(teacher.seen("variables", client="teacher")),
        sum(len(student.api.seen("variables", client=student.client)) for student in students),
    )


async def _timed(waiting: asyncio.Future[Any], started: float, into: list[float]) -> bool:
    """Append the ms from `started` until `waiting` resolves to `into`; False when it failed."""
    try:
        await waiting
    except (ThymioApiError, TimeoutError):
        return False
    into.append(1000 * (time.perf_counter() - started))
    return True


def _last_value(api: ThymioApi, client: str, node: str, name: str) -> Any:
    """The last value of variable `name` of `node` pushed to `client` (None when never)."""
    for event in reversed(api.seen("variables", client, node)):
        if name in event["vars"]:
            return event["vars"][name]
    return None


def _check_teacher_marks(teacher: ThymioApi, students: list[Student], rounds: int, report: Report) -> None:
    """What the teacher saw of each robot came from its own student's programs.

    Its `started` events carry only that student's marks, and its last
    `mark` variable is the student's last (a robot the teacher never saw is not cross-talk).
    """
    for student in students:
        expected = [mark_of(round_index, student.index) for round_index in range(rounds)]
        started = [
            _number(event["events"]["started"])
            for event in teacher.seen("events", "teacher", student.robot)
            if "started" in event["events"]
        ]
        if started:
            report.teacher_saw_programs += 1
        if any(mark not in expected for mark in started):  # a busy watcher may get only the newest event
            report.cross(f"the teacher saw {student.robot} start programs {started}, its student's are {expected}")
        shown = _last_value(teacher, "teacher", student.robot, "mark")
        if shown is not None and _number(shown) != expected[-1]:
            report.cross(f"the teacher sees {student.robot} with mark {shown}, expected {expected[-1]}")


def _number(value: Any) -> Any:
    """A one-word value as its number (thymio-api gives a scalar or a one-element list)."""
    return value[0] if isinstance(value, list) and len(value) == 1 else value


async def run(
    sizes: list[int],
    rounds: int,
    samples: int,
    idle_s: float,
    per_driver: int,
    focus: bool,
    on_report: Callable[[Report], None],
) -> list[Report]:
    """Every size in turn (each in a fresh playground and daemon)."""
    reports = []
    with tempfile.TemporaryDirectory(prefix="classroom-") as tmp:
        for size in sizes:
            report = await run_size(size, Path(tmp) / f"n{size}", rounds, samples, idle_s, per_driver, focus)
            on_report(report)
            reports.append(report)
    return reports


def main() -> None:
    """Run the sizes and print one JSON line of figures per size."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="6,20,30", help="class sizes (robots), comma-separated")
    parser.add_argument("--rounds", type=int, default=5, help="programs each student sends and runs")
    parser.add_argument("--samples", type=int, default=5, help="variable writes each student times")
    parser.add_argument("--idle-s", type=float, default=5.0, help="seconds of CPU measured with every program running")
    parser.add_argument("--per-driver", type=int, default=10, help="student connections per Node process")
    parser.add_argument("--open", action="store_true", help="no tokens: every student sees every robot")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    asyncio.run(
        run(
            sizes,
            args.rounds,
            args.samples,
            args.idle_s,
            args.per_driver,
            not args.open,
            lambda report: print(json.dumps(report.summary()), flush=True),
        )
    )


if __name__ == "__main__":
    main()
