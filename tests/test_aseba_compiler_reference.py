"""Reference comparison: Debian's Aseba compiler (`asebamassloader`) against ours, on the corpus.

`asebamassloader` compiles a .aesl file and loads it on a node; pointed at `bench.aseba_compiler`'s `FakeNode`, which
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
import sys
import tempfile
from pathlib import Path

from bench.aseba_compiler import make_locale, reference_compile
from tests.conftest import require_peer
from tests.test_aseba_compiler_corpus import compile_corpus, run_on_python_vm

CORPUS = Path(__file__).parent / "data" / "aseba_corpus"
GOLDEN = CORPUS / "golden.json"
#: Scripts recompiled by asebamassloader in the test itself (each takes ~1 s, run in parallel).
LIVE = ("01_arith.aesl", "12_natives.aesl", "20_emit.aesl", "35_native_output_index.aesl")


async def golden_bytecode(aesl: Path, locale: Path) -> tuple[int, ...]:
    """Compile `aesl` with asebamassloader against the playground Thymio's description."""
    compiled = await reference_compile(aesl, locale)
    assert compiled.words is not None, compiled.error
    return compiled.words


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
    # Debian's compiler gives the temporaries of a vector expression that reads its target other
    # addresses (same length).
    "09_vector_ops.aesl": "temporaries placed elsewhere",
    "33_shadow_expressions.aesl": "temporaries placed elsewhere",
    # -65538 / 32769 folds to -2 (low 16 bits): Debian pushes it in two words (it looks at the
    # 32-bit value), we in one.
    "24_division.aesl": "a folded constant pushed in one word",
}


def test_golden_covers_the_corpus_and_most_scripts_are_identical() -> None:
    golden: dict[str, list[int]] = json.loads(GOLDEN.read_text())
    assert sorted(golden) == sorted(p.name for p in CORPUS.glob("*.aesl"))
    same, total, different = identical_count()
    print(f"golden bytecode identical for {same} of {total} corpus scripts; different: {different}")
    assert different == sorted(DIFFERENT)
    for name in different:
        assert len(ours(CORPUS / name)) <= len(golden[name]), name


def test_where_the_bytecode_differs_the_behaviour_is_the_same() -> None:
    golden: dict[str, list[int]] = json.loads(GOLDEN.read_text())
    for name in DIFFERENT:
        compiled = compile_corpus(name)
        reference = dataclasses.replace(compiled, bytecode=tuple(golden[name]))
        ours_variables, ours_events = run_on_python_vm(compiled)
        reference_variables, reference_events = run_on_python_vm(reference)
        assert ours_events == reference_events, name
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
