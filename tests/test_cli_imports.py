"""The `hwgateway` command imports only what its subcommand needs.

Before, building the argument parser imported the whole daemon, the MCAP library and the Aseba
compiler (1.2 s here for `hwgateway --version`, several seconds on a Raspberry Pi, also for
`hwgateway estop`). Each case runs in a fresh interpreter and lists the heavy modules it loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

#: Modules of the daemon and of big libraries that no client command and no --help needs.
DAEMON_MODULES = [
    "aiohttp",
    "mcap",
    "structlog",
    "gateway.app",
    "gateway.bus",
    "gateway.config",
    "gateway.messages",
    "gateway.record.sink",
    "protocols.aseba.compiler",
]

PROBE = """
import json, sys
from gateway import cli
try:
    cli.main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(name for name in {modules} if name in sys.modules)))
"""


def heavy_modules_after(*argv: str) -> list[str]:
    """The modules of DAEMON_MODULES that `hwgateway ARGV...` has imported when it ends."""
    code = PROBE.format(modules=repr(DAEMON_MODULES))
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


@pytest.mark.parametrize(
    "argv",
    [
        ("--version",),
        ("--help",),
        ("estop", "--help"),
        ("record", "--help"),
        ("aseba", "compile", "--help"),
    ],
)
def test_help_and_version_import_none_of_the_daemon(argv: tuple[str, ...]) -> None:
    assert heavy_modules_after(*argv) == []


def test_a_client_command_imports_no_daemon_module(tmp_path: Path) -> None:
    # Nothing listens there: the command fails to connect, having imported what it needs to try.
    loaded = heavy_modules_after("estop", "--url", f"unix:{tmp_path / 'nobody.sock'}")
    assert loaded == []


def test_running_the_daemon_still_imports_it(tmp_path: Path) -> None:
    # check-config is the daemon's path up to serving: the config (and what it validates) is loaded.
    config = tmp_path / "gateway.toml"
    config.write_text('[server]\nhost = "127.0.0.1"\n')
    assert "gateway.config" in heavy_modules_after("check-config", str(config))


#: The faces and the recorder: a daemon imports each only when its config turns it on.
OPTIONAL_MODULES = {
    "foxglove": "gateway.faces.foxglove.server",
    "mqtt": "gateway.faces.mqtt.bridge",
    "ros2": "gateway.faces.ros2.face",
    "rosbridge": "gateway.faces.rosbridge.server",
    "tdm": "gateway.faces.tdm.server",
    "record": "gateway.record.daemon",
}

GATEWAY_PROBE = """
import json, sys
from gateway.app import Gateway
from gateway.config import loads
Gateway(loads(sys.argv[1]))
print(json.dumps(sorted(name for name in {modules} if name in sys.modules)))
"""

#: Each optional part turned on, as a config section (the record folder is made only at start).
TURNED_ON = {
    "foxglove": "[foxglove]\nenabled = true\n",
    "mqtt": '[mqtt]\nurl = "mqtt://127.0.0.1:1"\n',
    "ros2": "[ros2]\nenabled = true\n",
    "rosbridge": "[rosbridge]\nenabled = true\n",
    "tdm": "[tdm]\nenabled = true\n",
    "record": '[record]\nfolder = "/nonexistent"\n',
}


def optional_modules_of(config: str) -> list[str]:
    """The modules of OPTIONAL_MODULES a `Gateway` built (not started) from `config` has imported."""
    code = GATEWAY_PROBE.format(modules=repr(sorted(OPTIONAL_MODULES.values())))
    done = subprocess.run(
        [sys.executable, "-c", code, config], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_the_daemon_imports_only_the_faces_its_config_turns_on() -> None:
    # A fifth of the daemon's start (more on a Raspberry Pi) was faces most configs leave off.
    base = '[server]\nhost = "127.0.0.1"\n'
    assert optional_modules_of(base) == []
    assert optional_modules_of(base + "".join(TURNED_ON.values())) == sorted(OPTIONAL_MODULES.values())
