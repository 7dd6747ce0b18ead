"""Reference comparison: Debian's Aseba compiler (`asebamassloader`) against ours, on the corpus.

`asebamassloader` compiles a .aesl file and loads it on a node; pointed at `FakeNode`, which
serves the playground Thymio's captured description and records the SetBytecode it receives, it
yields the reference ("golden") bytecode. The golden words of every corpus script are stored in
`tests/data/aseba_corpus/golden.json` (regenerate: ``python -m tests.test_aseba_compiler_reference``
inside ``scripts/loopback-only.sh``); the test re-derives a few of them live, and compares ours
with all of them. Where the words differ, `test_aseba_compiler_corpus` shows the behaviour is the same.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from protocols.aseba.messages import MessageType
from tests.conftest import require_peer
from tests.harness import free_port
from tests.test_aseba_compiler_corpus import compile_corpus, run_on_python_vm
from tests.test_aseba_vm import VECTOR

CORPUS = Path(__file__).parent / "data" / "aseba_corpus"
GOLDEN = CORPUS / "golden.json"
#: Scripts recompiled by asebamassloader in the test itself (each takes ~2 s, run in parallel).
LIVE = ("01_arith.aesl", "12_natives.aesl", "20_emit.aesl")
NODE_ID = 1


class FakeNode:
    """A TCP node that replays captured description frames and records SetBytecode until Run."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.frames = [(t, bytes.fromhex(p)) for t, p in json.loads(VECTOR.read_text())]
        self.bytecode: dict[int, int] = {}
        self.done = asyncio.Event()
        self.server: asyncio.Server | None = None

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()

    def words(self) -> tuple[int, ...]:
        return tuple(self.bytecode[i] for i in range(len(self.bytecode)))

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        def send(type_: int, payload: bytes) -> None:
            writer.write(struct.pack("<HHH", len(payload), NODE_ID, type_) + payload)

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
                elif type_ == MessageType.SET_BYTECODE and words[0] == NODE_ID:
                    for offset, value in enumerate(words[2:]):
                        self.bytecode[words[1] + offset] = value
                elif type_ == MessageType.RUN and words[0] == NODE_ID:
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
    assert target.exists(), "localedef could not build en_US.UTF-8"
    return folder


async def golden_bytecode(aesl: Path, locale: Path) -> tuple[int, ...]:
    """Compile `aesl` with asebamassloader against the playground Thymio's description."""
    port = free_port()
    node = FakeNode(port)
    await node.start()
    process = await asyncio.create_subprocess_exec(
        "timeout", "20", "asebamassloader", "--once", str(aesl), f"tcp:127.0.0.1;{port}",
        env={**os.environ, "LOCPATH": str(locale)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    try:
        done = asyncio.create_task(node.done.wait())
        exited = asyncio.create_task(process.wait())
        await asyncio.wait((done, exited), timeout=20, return_when=asyncio.FIRST_COMPLETED)
        done.cancel()
        exited.cancel()
    finally:
        if process.returncode is None:
            process.terminate()
        output, _ = await process.communicate()
        await node.stop()
    assert node.bytecode, output.decode(errors="replace")
    return node.words()


def ours(aesl: Path) -> tuple[int, ...]:
    return compile_corpus(aesl.name).bytecode


def identical_count() -> tuple[int, int, list[str]]:
    """How many corpus scripts compile to exactly the golden words; the differing ones by name."""
    golden: dict[str, list[int]] = json.loads(GOLDEN.read_text())
    different = [name for name, words in sorted(golden.items()) if list(ours(CORPUS / name)) != words]
    return len(golden) - len(different), len(golden), different


async def test_stored_golden_bytecode_is_what_asebamassloader_makes(tmp_path: Path) -> None:
    require_peer("asebamassloader")
    locale = make_locale(tmp_path)
    golden: dict[str, list[int]] = json.loads(GOLDEN.read_text())
    live = await asyncio.gather(*(golden_bytecode(CORPUS / name, locale) for name in LIVE))
    assert [list(words) for words in live] == [golden[name] for name in LIVE]


#: Corpus scripts whose bytecode differs from Debian's, and why.
DIFFERENT = {
    # `/ 2` of a value that may be negative: Debian's compiler writes an arithmetic shift (rounds
    # toward minus infinity), we keep the division (truncates toward zero, like the VM's DIV).
    "01_arith.aesl": "division by a power of two",
    "09_vector_ops.aesl": "division by a power of two; temporaries placed elsewhere",
    # Debian folds `1000 * 1000 / 7` in 32 bits (11785); we fold as the VM computes (2422).
    "24_division.aesl": "constant folding in 16 bits",
    "33_shadow_expressions.aesl": "division by a power of two; temporaries placed elsewhere",
}


def test_golden_covers_the_corpus_and_most_scripts_are_identical() -> None:
    golden: dict[str, list[int]] = json.loads(GOLDEN.read_text())
    assert sorted(golden) == sorted(p.name for p in CORPUS.glob("*.aesl"))
    same, total, different = identical_count()
    print(f"golden bytecode identical for {same} of {total} corpus scripts; different: {different}")
    assert different == sorted(DIFFERENT)


def test_where_the_bytecode_differs_the_behaviour_is_the_same() -> None:
    golden: dict[str, list[int]] = json.loads(GOLDEN.read_text())
    for name in DIFFERENT:
        compiled = compile_corpus(name)
        reference = dataclasses.replace(compiled, bytecode=tuple(golden[name]))
        ours_variables, ours_events = run_on_python_vm(compiled)
        reference_variables, reference_events = run_on_python_vm(reference)
        assert ours_events == reference_events, name
        if name == "24_division.aesl":
            # q[6] = 1000 * 1000 / 7: the VM computes 16960 / 7; Debian's folding does not wrap.
            assert (ours_variables["q"][6], reference_variables["q"][6]) == (2422, 11785)
            ours_variables["q"][6] = reference_variables["q"][6]
        assert ours_variables == reference_variables, name


async def _regenerate() -> None:
    with tempfile.TemporaryDirectory() as folder:
        locale = make_locale(Path(folder))
        names = sorted(p.name for p in CORPUS.glob("*.aesl"))
        golden: dict[str, list[int]] = {}
        for start in range(0, len(names), 4):
            batch = names[start : start + 4]
            results = await asyncio.gather(
                *(golden_bytecode(CORPUS / name, locale) for name in batch), return_exceptions=True
            )
            for name, result in zip(batch, results, strict=True):
                if isinstance(result, BaseException):
                    print(f"{name}: {result}", file=sys.stderr)
                else:
                    golden[name] = list(result)
    GOLDEN.write_text(json.dumps(golden, indent=None, sort_keys=True) + "\n")
    print(f"{len(golden)} golden programs written to {GOLDEN}", file=sys.stderr)


if __name__ == "__main__":
    asyncio.run(_regenerate())
