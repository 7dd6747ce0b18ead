"""bench/aseba_random_programs.py: the same programs for a seed, valid Aseba, and handlers that end."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import aseba_compiler
from bench.aseba_compiler import Compiled, description, inputs, our_compile
from bench.aseba_random_programs import main, programs, write_programs
from protocols.aseba.compiler import CompiledScript
from protocols.aseba.natives import STANDARD_NATIVES
from protocols.aseba.vm import AsebaVM

#: What our compiler may refuse in a random program: a constant that folds to abs(-32768).
ALLOWED_REFUSAL = "abs(-32768) does not fit 16 bits"

Compilations = list[tuple[Path, Compiled, CompiledScript | None]]


def test_a_seed_gives_the_same_programs_and_program_n_does_not_depend_on_the_count() -> None:
    assert programs(3, 5) == programs(3, 5)
    assert programs(3, 5)[:2] == programs(3, 2)
    assert programs(3, 5) != programs(4, 5)
    assert len({text for _, text in programs(3, 20)}) == 20


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Compilations:
    paths = write_programs(tmp_path_factory.mktemp("random"), 1, 200)
    return [(path, *our_compile(path)) for path in paths]


def test_the_programs_are_aseba_our_compiler_takes(compiled: Compilations) -> None:
    refused = []
    for path, result, _ in compiled:
        if result.words is None:
            assert result.error.endswith(ALLOWED_REFUSAL), (path.name, result.error)
            refused.append(path.name)
    assert len(refused) <= 5, refused


def test_every_handler_ends_on_the_vm(compiled: Compilations) -> None:
    # No loop without end and no kill by the next event: what the playground runs is well defined.
    for path, result, script in compiled:
        if result.words is None or script is None:
            continue
        vm = AsebaVM(1, description(), dict(STANDARD_NATIVES))
        vm.set_bytecode(0, result.words)
        vm.start()
        vm.run()
        for event_id, words in inputs(script, 3):
            vm.user_event(0, event_id, words)
            vm.run(200_000)
            assert not vm.running, (path.name, event_id, vm.pc)


def test_the_command_writes_the_programs_and_refuses_a_count_of_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path / "out"), "--count", "3", "--seed", "7"]) == 0
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert written == [name for name, _ in programs(7, 3)]
    assert (tmp_path / "out" / written[0]).read_text() == programs(7, 1)[0][1]
    with pytest.raises(SystemExit) as exit_info:
        main([str(tmp_path / "none"), "--count", "0"])
    assert exit_info.value.code == 2
    assert "--count must be positive" in capsys.readouterr().err


def test_the_differential_refuses_a_negative_random_count(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        aseba_compiler.main(["--random", "-1"])
    assert exit_info.value.code == 2
    assert "--random must be 0 or more" in capsys.readouterr().err
