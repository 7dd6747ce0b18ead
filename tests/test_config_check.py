"""`hwgateway check-config` reports, in one pass, every mistake that would stop start-up or make it unsafe.

Ports taken twice, TLS files that do not load, addresses that are not addresses, short or
ambiguous tokens, a robot arm with no explicit address and credentials, a device kind whose
optional dependencies are missing; and a warning for listeners open to the network with no tokens.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import trustme

from gateway.config import loads
from gateway.errors import ConfigError
from gateway.hostnames import check_host, is_loopback, overlaps

# Run `hwgateway` with some modules made unimportable, as in an environment where an extra is not
# installed (`sys.modules[name] = None` makes `import name` raise ImportError).
WITHOUT = "import sys; [sys.modules.__setitem__(m, None) for m in sys.argv.pop(1).split(',') if m]; "
MAIN = "from gateway.cli import main; sys.exit(main(sys.argv[1:]))"


def check_config(path: Path, *, without: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT + MAIN, without, "check-config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def every_mistake(tmp_path: Path) -> tuple[str, list[str]]:
    """A config holding every mistake of issue 31 (items 8 and 9), and the error each must produce."""
    shared = tmp_path / "shared-token"
    shared.write_text("a-classroom-token-0123456789\n")
    text = f"""
[server]
host = "192.168.1.300"
http_port = 9000
msgpack_port = 9000
tls_cert = "{tmp_path / "absent-cert.pem"}"
tls_key = "{tmp_path / "absent-key.pem"}"
colour = "red"

[rosbridge]
enabled = true
port = 9000

[foxglove]
enabled = true
port = 9000

[tdm]
enabled = true
host = "0.0.0.0"
tcp_port = 9000
ws_port = 9001

[auth.tokens.malformed]
hash = "sha256:not-hex"
role = "wizard"

[auth.tokens.unreadable]
token_file = "{tmp_path / "no-such-token"}"

[auth.tokens.pupils]
token_file = "{shared}"
role = "read"

[auth.tokens.teacher]
token_file = "{shared}"
role = "admin"

[devices.remote]
kind = "wiimote"
address = "00:1f:32"
timeout_s = "long"

[devices.arm]
kind = "kortex"

[devices.arm-2]
kind = "kortex"
host = "192.168.1.300"
username = "admin"
password = "admin"

[devices.pad]
kind = "gamepad"

[devices.hub]
kind = "lego_hub"

[devices.sim]
kind = "sim"
rate_hz = "fast"
"""
    expected = [
        "server.colour: unknown key",
        "auth.tokens.malformed.role: expected one of 'read', 'control', 'admin', got 'wizard'",
        "auth.tokens.malformed.hash: expected 'sha256:' and 64 hex digits",
        f"auth.tokens.unreadable.token_file: cannot read {tmp_path / 'no-such-token'}",
        "auth.tokens.teacher.token_file: the same token as auth.tokens.pupils with another role or devices",
        "devices.remote.timeout_s: expected a number, got str 'long'",
        "devices.remote: address '00:1f:32' is not a Bluetooth address",
        "devices.arm: host, username, password: required for a real arm",
        "devices.arm-2: host: '192.168.1.300' is not a valid IPv4 address",
        "devices.pad.kind: kind 'gamepad' needs the 'gamepad' extra, which is not installed here",
        "devices.hub.kind: kind 'lego_hub' needs the 'ble' extra, which is not installed here",
        "devices.sim.rate_hz: expected a number, got str 'fast'",
        "server.host: '192.168.1.300' is not a valid IPv4 address",
        f"server.tls_cert: cannot read {tmp_path / 'absent-cert.pem'}",
        f"server.tls_key: cannot read {tmp_path / 'absent-key.pem'}",
        "server.msgpack_port: port 9000 is server.http_port too",
        "rosbridge.port: port 9000 is server.http_port too",
        "foxglove.port: port 9000 is server.http_port too",
        "tdm.tcp_port: port 9000 is server.http_port too",
    ]
    return text, expected


def test_a_file_with_every_mistake_is_reported_whole_in_one_pass(tmp_path: Path) -> None:
    text, expected = every_mistake(tmp_path)
    config = tmp_path / "bad.toml"
    config.write_text(text)
    done = check_config(config, without="sdl2,bleak")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == f"hwgateway: {len(expected)} configuration errors:", done.stderr
    for line, error in zip(lines[1:], expected, strict=True):
        assert line.startswith(f"  {error}"), (line, error)


def test_a_kind_whose_extra_is_installed_passes_and_a_missing_one_is_named(tmp_path: Path) -> None:
    config = tmp_path / "pads.toml"
    config.write_text('[devices.pad]\nkind = "gamepad"\n[devices.hub]\nkind = "lego_hub"\nenabled = false\n')
    done = check_config(config)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert "devices: pad (gamepad), hub (lego_hub)" in done.stdout
    done = check_config(config, without="bleak")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("hwgateway: configuration error: devices.hub.kind: kind 'lego_hub' needs the")
    assert "pip install 'hwgateway[ble]'" in done.stderr
    assert "EXTRAS=ble make install" in done.stderr
    assert "Traceback" not in done.stderr


def test_plain_tokens_have_the_length_hash_token_accepts(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"auth.tokens\[1\]: a token must be at least 16 characters"):
        loads('[auth]\ntokens = ["a-long-classroom-token", "fifteen-chars-x"]\n')
    assert loads('[auth]\ntokens = ["sixteen-chars-xx"]\n').auth.tokens == ("sixteen-chars-xx",)
    for token, status in (("fifteen-chars-x", 2), ("sixteen-chars-xx", 0)):
        done = subprocess.run(
            [sys.executable, "-m", "gateway", "hash-token"], input=token + "\n", capture_output=True, text=True
        )
        assert done.returncode == status, done.stderr


def test_named_tokens_may_share_a_file_only_with_the_same_rights(tmp_path: Path) -> None:
    shared = tmp_path / "token"
    shared.write_text("a-classroom-token-0123456789")
    same = (
        f'[auth.tokens.a]\ntoken_file = "{shared}"\nrole = "read"\n'
        f'[auth.tokens.b]\ntoken_file = "{shared}"\nrole = "read"\n'
    )
    assert [c.name for c in loads(same).auth.credentials] == ["a", "b"]
    with pytest.raises(ConfigError, match=r"auth.tokens.b.token_file: the same token as auth.tokens.a"):
        loads(same + 'devices = ["thymio-*"]\n')


def test_listeners_on_one_port_of_different_addresses_do_not_collide() -> None:
    text = '[server]\nhttp_port = 9000\n[tdm]\nenabled = true\nhost = "127.0.0.2"\ntcp_port = 9000\nws_port = 0\n'
    assert loads(text).tdm.tcp_port == 9000
    with pytest.raises(ConfigError, match=r"tdm.tcp_port: port 9000 is server.http_port too"):
        loads(text.replace("127.0.0.2", "0.0.0.0"))
    with pytest.raises(ConfigError, match=r"tdm.ws_port: port 8596 is tdm.tcp_port too"):
        loads("[tdm]\nenabled = true\nws_port = 8596\n")
    # Port 0 picks a free port each time, and a listener that is off takes none.
    loads("[server]\nhttp_port = 0\nmsgpack_port = 0\n[foxglove]\nport = 8470\n[rosbridge]\nport = 8471\n")


def test_tls_files_must_load_together(tmp_path: Path) -> None:
    authority = trustme.CA()
    cert, other = authority.issue_cert("localhost"), authority.issue_cert("localhost")
    cert_file, key_file, other_key = tmp_path / "cert.pem", tmp_path / "key.pem", tmp_path / "other-key.pem"
    cert.cert_chain_pems[0].write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    other.private_key_pem.write_to_path(str(other_key))
    good = f'[server]\ntls_cert = "{cert_file}"\ntls_key = "{key_file}"\n'
    assert loads(good).server.tls_cert == str(cert_file)
    with pytest.raises(ConfigError, match=r"server.tls_cert: certificate .* with key .* does not load"):
        loads(good.replace(str(key_file), str(other_key)))


def test_a_robot_arm_needs_its_address_and_credentials_unless_simulated() -> None:
    with pytest.raises(ConfigError, match=r"devices.arm: username, password: required for a real arm"):
        loads('[devices.arm]\nkind = "kortex"\nhost = "192.168.1.10"\n')
    arm = loads('[devices.arm]\nkind = "kortex"\nhost = "arm.lab"\nusername = "me"\npassword = "pw"\n').devices[0]
    assert (arm.options.host, arm.options.username, arm.options.password) == ("arm.lab", "me", "pw")
    simulated = loads('[devices.arm]\nkind = "kortex"\nsimulate = true\n').devices[0]
    assert simulated.options.host == ""
    with pytest.raises(ConfigError, match=r'host: required with mqtt_broker = "external"'):
        loads('[devices.arm]\nkind = "kortex"\napi = "kortex3"\nsimulate = true\nmqtt_broker = "external"\n')


@pytest.mark.parametrize(
    ("host", "tokens", "warned"),
    [
        ("0.0.0.0", "", True),
        ("::", "", True),
        ("192.168.1.20", "", True),
        ("0.0.0.0", '[auth]\ntokens = ["a-classroom-token-0123"]\n', False),
        ("127.0.0.1", "", False),
        ("localhost", "", False),
    ],
)
def test_listening_beyond_this_machine_with_no_tokens_is_warned(
    tmp_path: Path, host: str, tokens: str, warned: bool
) -> None:
    config = tmp_path / "open.toml"
    config.write_text(f'[server]\nhost = "{host}"\n{tokens}')
    done = check_config(config)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{config}: ok")
    if warned:
        assert done.stderr.startswith(f"hwgateway: warning: server.host = '{host}' admits other machines"), done.stderr
        assert "in plain text (no TLS)" in done.stderr
    else:
        assert done.stderr == ""


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "fe80::1", "localhost", "robot.lab.example", "arm-1", "a."])
def test_host_names_and_addresses_accepted(host: str) -> None:
    check_host(host)


@pytest.mark.parametrize("host", ["192.168.1.300", "1.2.3", "10.0.0.1.5", "::g", "-arm", "a..b", "arm_1", "x" * 64])
def test_host_names_and_addresses_refused(host: str) -> None:
    with pytest.raises(ValueError, match=r"not a valid|neither an IP address nor a valid host name"):
        check_host(host)


def test_loopback_and_overlapping_hosts() -> None:
    assert [is_loopback(host) for host in ("127.0.0.5", "::1", "localhost", "0.0.0.0", "robot.local")] == [
        True,
        True,
        True,
        False,
        False,
    ]
    pairs = [("0.0.0.0", "127.0.0.1"), ("127.0.0.1", "127.0.0.1"), ("::", "10.0.0.1"), ("127.0.0.1", "127.0.0.2")]
    assert [overlaps(a, b) for a, b in pairs] == [True, True, True, False]


def test_run_logs_the_same_warning_at_start(tmp_path: Path) -> None:
    # The port is taken, so the daemon stops once it tried to listen: after the warning, which comes first.
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        config = tmp_path / "open.toml"
        config.write_text(
            f'[server]\nhost = "0.0.0.0"\nhttp_port = {taken.getsockname()[1]}\nmsgpack_port = -1\nunix_socket = ""\n'
        )
        done = subprocess.run(
            [sys.executable, "-m", "gateway", "run", str(config), "--log-format", "json"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 1, done.stderr
    first = json.loads(done.stdout.splitlines()[0])  # the log goes to standard output
    assert first["level"] == "warning"
    assert first["event"].startswith("config: server.host = '0.0.0.0' admits other machines"), first


@pytest.mark.parametrize(
    ("table", "errors"),
    [
        (
            'kind = "wiimote"\naddress = "00:1f"\nreport_mode = 0x20\ntimeout_s = 1.0\nstatus_interval_s = 2.0',
            ["is not a Bluetooth address", "report_mode 0x20 is not a data reporting mode", "timeout_s must exceed"],
        ),
        (
            'kind = "gamepad"\nguid = "xyz"\nvirtual = true\nvirtual_motion = "demo"\nvirtual_layout = "raw"',
            ["is not 32 hexadecimal digits", "a virtual pad is its own selector", 'virtual_motion = "demo" needs'],
        ),
        ('kind = "lego_hub"\naddress = "zz"\nhub = "duplo"', ["is not a Bluetooth address", "hub must be 'any'"]),
        ('kind = "microbit"\naddress = "zz"\nsim_motion = "dance"', ["is not a Bluetooth address", "sim_motion must"]),
        (
            'kind = "kortex"\nhost = "10.0.0.300"\nanalog_output_modes = ["voltage"]',
            ["username, password: required", "host: '10.0.0.300'", "analog_output_modes needs 4 entries"],
        ),
    ],
)
def test_every_problem_of_one_devices_options_comes_at_once(table: str, errors: list[str]) -> None:
    with pytest.raises(ConfigError) as caught:
        loads(f"[devices.dev]\n{table}\n")
    (problem,) = caught.value.errors
    assert problem.path == "devices.dev"
    for error in errors:
        assert error in problem.message, (error, problem.message)


@pytest.mark.parametrize(
    ("server", "errors"),
    [
        ("max_request_bytes = 4096\nmax_frame_bytes = 2048", ["server.max_frame_bytes: must be at least"]),
        ("max_clients = 10\nmax_clients_per_peer = 20", ["server.max_clients_per_peer: must be at most"]),
        (
            "max_request_bytes = 1024\nmax_frame_bytes = 8192\nmax_partial_bytes = 4096",
            ["server.max_partial_bytes: must be at least"],
        ),
        ('tls_key = "/k.pem"', ["server.tls_cert: set both tls_cert and tls_key"]),
        # A key already in error stands at its default: no rule compares it, so no second, made-up error.
        ('max_request_bytes = "big"\nmax_frame_bytes = 2048', ["server.max_request_bytes: expected an integer"]),
        ('tls_cert = 1\ntls_key = "/k.pem"', ["server.tls_cert: expected a string"]),
        ('host = 5\n[tdm]\nenabled = true\nhost = "0.0.0.0"\ntcp_port = 8470', ["server.host: expected a string"]),
    ],
)
def test_rules_between_keys_hold_and_keys_in_error_are_left_out(server: str, errors: list[str]) -> None:
    with pytest.raises(ConfigError) as caught:
        loads(f"[server]\n{server}\n")
    assert len(caught.value.errors) == len(errors), str(caught.value)
    for problem, error in zip(caught.value.errors, errors, strict=True):
        assert str(problem).startswith(error), (str(problem), error)
