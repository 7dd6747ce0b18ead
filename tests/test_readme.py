"""The README's first example, run as printed (its own process, the venv's Python) against `hwgateway demo`."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

from hwgateway.client import connect
from tests.harness import DEMO_DEVICES, DEMO_IDS, start_demo

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CLIENT_DOC = ROOT / "docs" / "client.md"
PROTOCOL_DOC = ROOT / "docs" / "protocol.md"


def python_examples(path: Path) -> list[str]:
    """The ```python blocks of a Markdown file."""
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.DOTALL)


def first_python_example() -> str:
    """The first ```python block of README.md."""
    examples = python_examples(README)
    assert examples, "README.md has no python example"
    return examples[0]


async def run_example(example: str) -> tuple[int, list[str], str]:
    """Run one example in its own Python process; its status, stdout lines and stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", example, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode is not None
    return process.returncode, stdout.decode().splitlines(), stderr.decode()


async def test_readme_first_example_prints_devices_a_result_and_samples(tmp_path: Path) -> None:
    example = first_python_example()
    assert "ws://127.0.0.1:8470/ws" in example  # the demo's default address, as the README says
    demo = await start_demo(tmp_path, 8470, 8471)
    try:
        async with connect("ws://127.0.0.1:8470/ws") as gw, asyncio.timeout(45):
            # A newcomer types the example seconds after `make demo`: by then every device is up.
            events = gw.device_events()
            statuses = gw.device_status
            while len(statuses) < DEMO_DEVICES or any(status.status != "connected" for status in statuses.values()):
                await anext(events)
        status, lines, stderr = await run_example(example)
        # docs/client.md's complete programs (the quick start and the synchronous one), on the same demo.
        programs = [text for text in python_examples(CLIENT_DOC) if "import" in text]
        assert len(programs) == 2
        doc_runs = [await run_example(program) for program in programs]
        # docs/protocol.md's two raw-protocol sessions (websockets, then msgpack).
        raw_runs = [await run_example(program) for program in python_examples(PROTOCOL_DOC)]
    finally:
        assert await demo.stop() == 0
    assert status == 0, stderr
    assert len(raw_runs) == 2
    (ws_status, ws_lines, ws_stderr), (mp_status, mp_lines, mp_stderr) = raw_runs
    assert (ws_status, mp_status) == (0, 0), ws_stderr + mp_stderr
    assert sum(" connected accepts " in line for line in ws_lines) == DEMO_DEVICES
    skipped = [int(line.split("skipped ")[1].split()[0]) for line in ws_lines if " skipped " in line][1:]
    assert skipped, ws_lines
    assert sorted(skipped)[len(skipped) // 2] == 19  # as the doc says: 19 of every 20 at 5 Hz out of 100 Hz
    assert any("'pong': True" in line for line in mp_lines), mp_lines
    for doc_status, doc_lines, doc_stderr in doc_runs:
        assert doc_status == 0, doc_stderr
        assert any("outputs" in line for line in doc_lines), doc_lines
    assert lines[:DEMO_DEVICES] == [f"{device} connected" for device in DEMO_IDS]
    assert lines[DEMO_DEVICES] == "{'outputs': 'led'}"
    assert len(lines) == DEMO_DEVICES + 4
    seqs = []
    for line in lines[DEMO_DEVICES + 1 :]:
        match = re.fullmatch(r"sim-pad/state (\d+) axes \[(-?[0-9.]+), (-?[0-9.]+)\]", line)
        assert match is not None, line
        seqs.append(int(match.group(1)))
    # 2 Hz out of the pad's 100 Hz: about 50 samples apart after the first (the latest at once).
    assert seqs == sorted(seqs)
    assert 35 <= seqs[2] - seqs[1] <= 65
