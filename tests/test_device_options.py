"""Editing a device's options while the gateway runs: `[server] device_overrides`, the admin ops, `check-config`.

One in-process gateway started from a file with two simulated devices; the edits go through the
`device_options` and `configure_device` ops of the Python client, as the dashboard's do.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from gateway.config import load
from gateway.credentials import hash_token
from gateway.errors import ConfigError
from hwgateway.client import BadRequest, DeviceUnavailable, InvalidArgument, Unauthorized, connect
from tests.harness import until
from tests.inprocess import InProcessGateway, running_gateway, start_in_process
from tests.test_schemas import result_data_validator, violations

ADMIN = "admin-token-for-option-edits"
OPERATOR = "control-token-for-option-edits"
OVERRIDES = "device-overrides.toml"


def config_text(overrides: str = OVERRIDES) -> str:
    return f"""
# The administrator's file: the gateway never writes it.
[server]
host = "127.0.0.1"
http_port = 0
msgpack_port = -1
unix_socket = ""
device_overrides = "{overrides}"

[auth.tokens.admin]
hash = "{hash_token(ADMIN)}"
role = "admin"

[auth.tokens.operator]
hash = "{hash_token(OPERATOR)}"
role = "control"

[devices.edited]
kind = "sim"
rate_hz = 50.0
leds = 2

[devices.other]
kind = "sim"
rate_hz = 50.0
"""


ON_THE_MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[InProcessGateway]:
    running = await start_in_process(tmp_path_factory.mktemp("options"), config_text())
    try:
        yield running
    finally:
        await running.stop()


def url(running: InProcessGateway) -> str:
    return f"ws://127.0.0.1:{running.http_port}/ws"


def overrides_file(running: InProcessGateway) -> Path:
    path = running.gateway.reloader.path
    assert path is not None
    return path.parent / OVERRIDES


@ON_THE_MODULE_LOOP
async def test_an_edit_restarts_only_its_device_and_is_kept_beside_the_untouched_file(
    gateway: InProcessGateway,
) -> None:
    config_path = gateway.gateway.reloader.path
    assert config_path is not None
    original = config_path.read_text()
    async with connect(url(gateway), token=ADMIN) as admin:
        shown = await admin.device_options("edited")
        assert not violations(result_data_validator("device_options"), shown), shown
        assert shown["kind"] == "sim"
        assert shown["options"]["rate_hz"] == 50.0
        assert shown["options"]["leds"] == 2
        assert shown["overridden"] == []
        assert shown["file"] == str(overrides_file(gateway))
        other = gateway.gateway.supervisor.devices["other"]
        async with admin.subscribe("other/state") as samples:
            first = await anext(samples)
            report = await admin.configure_device("edited", {"leds": 3})
            assert not violations(result_data_validator("configure_device"), report), report
            assert report["restarted"] == ["edited"]
            assert report["unchanged"] == ["other"]
            assert report["safe_states"] == {"edited": "ok"}
            later = [await anext(samples) for _ in range(3)]
            assert [s.seq for s in later] == list(range(later[0].seq, later[0].seq + 3))
            assert later[0].seq > first.seq
        assert gateway.gateway.supervisor.devices["other"] is other  # never stopped
        edited = gateway.gateway.supervisor.devices["edited"]
        assert edited.adapter.options.leds == 3
        await until(lambda: edited.status == "connected", "restarted")
        shown = await admin.device_options("edited")
        assert (shown["options"]["leds"], shown["overridden"]) == (3, ["leds"])
        assert tomllib.loads(overrides_file(gateway).read_text()) == {"devices": {"edited": {"leds": 3}}}
        assert overrides_file(gateway).stat().st_mode & 0o777 == 0o600
        # `check-config` and a restart see what the daemon runs: the file layered with the overrides.
        assert next(d for d in load(config_path).devices if d.id == "edited").options.leds == 3
        # None goes back to the file's value, and the device's table leaves the overrides file.
        report = await admin.configure_device("edited", {"leds": None})
        assert report["restarted"] == ["edited"]
        assert gateway.gateway.supervisor.devices["edited"].adapter.options.leds == 2
        assert "edited" not in tomllib.loads(overrides_file(gateway).read_text()).get("devices", {})
    assert config_path.read_text() == original


@ON_THE_MODULE_LOOP
async def test_a_bad_edit_changes_nothing_and_names_every_problem(gateway: InProcessGateway) -> None:
    before = dict(gateway.gateway.supervisor.devices)
    written = overrides_file(gateway).read_text() if overrides_file(gateway).exists() else None
    async with connect(url(gateway), token=ADMIN) as admin:
        with pytest.raises(InvalidArgument) as refused:
            await admin.configure_device("edited", {"rate_hz": 1e9, "wheels": 4})
        problems = refused.value.message.splitlines()
        assert any(p.startswith("devices.edited.rate_hz") for p in problems), problems
        assert any(p.startswith("devices.edited.wheels") for p in problems), problems
        with pytest.raises(InvalidArgument, match="cannot be changed by an override"):
            await admin.configure_device("edited", {"kind": "wiimote"})
        with pytest.raises(InvalidArgument, match="no device of this id"):
            await admin.configure_device("nobody", {"leds": 1})
        with pytest.raises(InvalidArgument, match=r"configure_device\.options"):
            await admin.configure_device("edited", {"leds": [1, None]})
        for not_an_object in ([["leds", 1]], "leds=1", None):  # past the client's own typing
            with pytest.raises(BadRequest, match="expected an object of option names"):
                await admin._call("configure_device", {"device": "edited", "options": not_an_object})
    assert gateway.gateway.supervisor.devices == before
    assert (overrides_file(gateway).read_text() if overrides_file(gateway).exists() else None) == written


@ON_THE_MODULE_LOOP
async def test_only_an_admin_token_may_see_or_edit_options(gateway: InProcessGateway) -> None:
    async with connect(url(gateway), token=OPERATOR) as operator:
        with pytest.raises(Unauthorized, match="only an admin token"):
            await operator.device_options("edited")
        with pytest.raises(Unauthorized, match="only an admin token"):
            await operator.configure_device("edited", {"leds": 1})


@ON_THE_MODULE_LOOP
async def test_without_an_overrides_file_editing_is_off_and_says_how_to_turn_it_on(tmp_path: Path) -> None:
    async with (
        running_gateway(tmp_path, config_text(overrides="")) as running,
        connect(url(running), token=ADMIN) as admin,
    ):
        with pytest.raises(DeviceUnavailable, match=r"set \[server\] device_overrides"):
            await admin.configure_device("edited", {"leds": 1})


def test_check_config_reports_a_bad_overrides_file_with_its_path(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(config_text())
    (tmp_path / OVERRIDES).write_text('[devices.ghost]\nleds = 1\n[devices.edited]\nkind = "wiimote"\n')
    with pytest.raises(ConfigError) as refused:
        load(config)
    messages = [str(problem) for problem in refused.value.errors]
    assert f"{tmp_path / OVERRIDES}: devices.ghost: no device of this id in the configuration file" in messages
    assert f"{tmp_path / OVERRIDES}: devices.edited.kind: cannot be changed by an override" in messages
    checked = subprocess.run(
        [sys.executable, "-m", "gateway", "check-config", str(config)], capture_output=True, text=True, check=False
    )
    assert checked.returncode != 0
    assert "devices.ghost" in checked.stdout + checked.stderr
    (tmp_path / OVERRIDES).write_text("[server]\nhttp_port = 1\n")
    with pytest.raises(ConfigError, match=r"holds only \[devices.<id>\] tables, not server"):
        load(config)
