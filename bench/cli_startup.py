"""How long the `hwgateway` command takes to start, against a bare `python -c pass` in the same run.

Each case is a fresh `python -m gateway ...` process, timed from spawn to exit (wall clock). The
cases are interleaved, `--repeats` rounds in a row; the table gives each case's median and range,
and its median minus the bare interpreter's: the part that is hwgateway's own. On a robot computer
these scale with its single-core speed (several times these figures on a Raspberry Pi).

Run:  .venv/bin/python bench/cli_startup.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def cases(workdir: Path) -> dict[str, list[str]]:
    """Name -> argv: the bare interpreter, then commands a user types."""
    config = workdir / "gateway.toml"
    config.write_text('[server]\nhost = "127.0.0.1"\n')
    nowhere = f"unix:{workdir / 'nobody.sock'}"  # a client command that fails to connect at once
    gateway = [sys.executable, "-m", "gateway"]
    return {
        "python -c pass (bare)": [sys.executable, "-c", "pass"],
        "hwgateway --version": [*gateway, "--version"],
        "hwgateway estop --help": [*gateway, "estop", "--help"],
        "hwgateway estop (no gateway there)": [*gateway, "estop", "--url", nowhere],
        "hwgateway check-config": [*gateway, "check-config", str(config)],
    }


def wall_seconds(argv: list[str]) -> float:
    """Spawn-to-exit time of one run; its output is discarded (exit statuses other than 0 are expected)."""
    started = time.perf_counter()
    subprocess.run(argv, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120, check=False)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=15, help="rounds of every case (default 15)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    with tempfile.TemporaryDirectory() as tmp:
        plan = cases(Path(tmp))
        times: dict[str, list[float]] = {name: [] for name in plan}
        for _ in range(args.repeats):
            for name, command in plan.items():
                times[name].append(wall_seconds(command))
    bare = statistics.median(next(iter(times.values())))
    print(f"{args.repeats} rounds; wall clock from spawn to exit, ms")
    print("| command | median | min-max | minus bare python |")
    print("|---|---|---|---|")
    for name, values in times.items():
        median = statistics.median(values)
        extra = "" if name.endswith("(bare)") else f"{(median - bare) * 1000:.0f}"
        print(f"| {name} | {median * 1000:.0f} | {min(values) * 1000:.0f}-{max(values) * 1000:.0f} | {extra} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
