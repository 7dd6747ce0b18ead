"""config.toml: defaults, every error naming its TOML path, and `hwgateway check-config` exit codes."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from gateway.config import load, loads
from gateway.core.config import Config, TokenConfig
from gateway.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent


def test_shipped_config_is_valid_and_holds_the_defaults() -> None:
    config = load(ROOT / "config.toml")
    assert config == loads("")
    assert (config.server.host, config.server.http_port, config.server.msgpack_port) == ("127.0.0.1", 8470, 8471)
    assert config.server.unix_socket


def test_devices_are_read_with_their_kind_options() -> None:
    config = loads('[devices.pad-1]\nkind = "sim"\nrate_hz = 250\nfailing_commands = ["sound"]\n')
    (device,) = config.devices
    assert (device.id, device.kind, device.enabled) == ("pad-1", "sim", True)
    assert device.options.rate_hz == 250.0
    assert device.options.failing_commands == ("sound",)


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        ("[server]\nhttp_prot = 1\n", "server.http_prot", "unknown key (known keys:"),
        ('[server]\nhttp_port = "8470"\n', "server.http_port", "expected an integer, got str '8470'"),
        ("[server]\nhttp_port = 70000\n", "server.http_port", "70000 is outside [0, 65535]"),
        ("[server]\ncommand_timeout_s = true\n", "server.command_timeout_s", "expected a number"),
        ("[server]\nrefusal_burst = 0\n", "server.refusal_burst", "0 is outside [1, 1000000]"),
        ('[server]\nrefusal_burst = "64"\n', "server.refusal_burst", "expected an integer"),
        ('[auth]\ntokens = "secret"\n', "auth.tokens", "expected an array"),
        ("[auth]\ntokens = [1]\n", "auth.tokens[0]", "expected a string"),
        ('[logging]\nlevel = "loud"\n', "logging.level", "expected one of"),
        ("[servers]\n", "servers", "unknown section"),
        ("server = 1\n", "server", "expected a table"),
        ("[devices.sim-1]\nrate_hz = 5\n", "devices.sim-1.kind", "required key is missing (one of: aseba,"),
        ('[devices.sim-1]\nkind = "toaster"\n', "devices.sim-1.kind", "unknown device kind 'toaster'"),
        ('[devices.sim-1]\nkind = "sim"\nrate = 5\n', "devices.sim-1.rate", "unknown key"),
        ('[devices.sim-1]\nkind = "sim"\nrate_hz = 0\n', "devices.sim-1.rate_hz", "outside"),
        ('[devices.sim-1]\nkind = "sim"\nenabled = "no"\n', "devices.sim-1.enabled", "expected true or false"),
        ('[devices."a/b"]\nkind = "sim"\n', "devices.a/b", "device id"),
        ("[supervisor]\nbackoff_initial_s = 5\nbackoff_max_s = 1\n", "supervisor.backoff_max_s", "at least"),
        ("[server\n", "", "not valid TOML"),
    ],
)
def test_errors_name_the_toml_path(text: str, path: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        loads(text)
    assert raised.value.path == path
    assert message in raised.value.message


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway", *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_check_config_accepts_a_good_file() -> None:
    done = run_cli("check-config", str(ROOT / "config.toml"))
    assert done.returncode == 0, done.stderr
    assert "ok" in done.stdout


@pytest.mark.parametrize("command", ["check-config", "run"])
def test_bad_config_exits_2_naming_the_path(tmp_path: Path, command: str) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[server]\nhttp_port = "x"\n')
    args = [str(bad)] if command == "check-config" else ["--config", str(bad)]
    done = run_cli(command, *args)
    assert done.returncode == 2
    assert "server.http_port: expected an integer" in done.stderr


def test_missing_config_file_exits_2(tmp_path: Path) -> None:
    done = run_cli("run", "--config", str(tmp_path / "absent.toml"))
    assert done.returncode == 2
    assert "cannot read" in done.stderr


def test_version() -> None:
    done = run_cli("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == "hwgateway 0.1.0"


def test_the_device_examples_in_the_shipped_config_are_valid() -> None:
    text = (ROOT / "config.toml").read_text()
    examples = text[text.index("# [devices.sim-1]") :]
    uncommented = "\n".join(line.removeprefix("# ").split("  #")[0] for line in examples.splitlines() if line != "#")
    config = loads(uncommented)
    assert [(d.id, d.kind) for d in config.devices] == [
        ("sim-1", "sim"),
        ("thymio", "aseba"),
        ("wiimote-1", "wiimote"),
        ("pad-1", "gamepad"),
        ("arm", "kortex"),
        ("microbit", "microbit"),
        ("hub", "lego_hub"),
    ]
    assert [(b.name, b.source, b.target) for b in config.bindings.bindings] == [("drive", "pad-1", "thymio")]


def test_the_shipped_config_documents_every_key_of_every_section_with_its_default() -> None:
    text = (ROOT / "config.toml").read_text()
    document = tomllib.loads(text)
    defaults = Config()
    for section in dataclasses.fields(Config):
        if section.name in ("devices", "bindings"):  # one table each, documented by the examples below
            continue
        assert section.name in document, f"[{section.name}] is missing"
        for key in dataclasses.fields(getattr(defaults, section.name)):
            if (section.name, key.name) == ("auth", "credentials"):  # [auth.tokens.<name>], below
                continue
            name = key.name.removesuffix("_")  # `import_` is the TOML key `import`
            assert name in document[section.name], f"{section.name}.{name} is missing"
    # Each key holds its default (an uncommented section is read as written).
    assert load(ROOT / "config.toml") == defaults
    for key in dataclasses.fields(TokenConfig):
        assert re.search(rf"^# {key.name} = ", text, re.MULTILINE), f"auth.tokens.<name>.{key.name} is missing"
