"""bench/cli_startup.py: a real timing run, and a clear refusal of a run that measures nothing."""

from __future__ import annotations

import pytest

from bench import cli_startup


def test_times_every_case_against_the_bare_interpreter(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_startup.main(["--repeats", "1"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "---" not in line]
    assert [row.split(" | ")[0] for row in rows[1:]] == [
        "| python -c pass (bare)",
        "| hwgateway --version",
        "| hwgateway estop --help",
        "| hwgateway estop (no gateway there)",
        "| hwgateway check-config",
    ]
    assert all(float(row.split(" | ")[1]) > 0 for row in rows[1:])  # ms, measured


def test_refuses_zero_repeats(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli_startup.main(["--repeats", "0"])
    assert exit_info.value.code == 2
    assert "--repeats must be at least 1" in capsys.readouterr().err
