"""Applying a changed configuration without a restart: the `reload` op, `hwgateway reload`, SIGHUP under systemd.

One in-process gateway for the op's tests (its file is rewritten between them), a property test of
random edit sequences on a supervisor with no listeners, and one daemon for the CLI and SIGHUP.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from hypothesis import given
from hypothesis import strategies as st

from devices.registry import KINDS
from gateway.app import Gateway
from gateway.bus import Bus, DeviceEvent, Sample, Subscriber
from gateway.config import load, loads
from gateway.core.config_diff import changed_sections, diff_devices
from gateway.credentials import hash_token
from gateway.errors import ConfigError
from gateway.supervisor import Supervisor
from hwgateway.client import InvalidArgument, Unauthorized, connect
from tests.fuzzing import fuzz_settings
from tests.harness import until
from tests.inprocess import InProcessGateway, start_in_process
from tests.test_service import NotifyListener, exec_start

ADMIN_TOKEN = "admin-token-for-reload-tests"
CONTROL_TOKEN = "control-token-for-reload-tests"


def header(unix: str = "") -> str:
    return f"""
[server]
host = "127.0.0.1"
http_port = 0
msgpack_port = -1
unix_socket = "{unix}"

[auth.tokens.admin]
hash = "{hash_token(ADMIN_TOKEN)}"
role = "admin"

[auth.tokens.operator]
hash = "{hash_token(CONTROL_TOKEN)}"
role = "control"
"""


def sim(device: str, leds: int = 1, rate_hz: float = 50.0) -> str:
    return f'\n[devices.{device}]\nkind = "sim"\nrate_hz = {rate_hz}\nleds = {leds}\n'


ON_THE_MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[InProcessGateway]:
    running = await start_in_process(tmp_path_factory.mktemp("reload"), header() + sim("keep") + sim("gone"))
    try:
        yield running
    finally:
        await running.stop()


def rewrite(running: InProcessGateway, text: str) -> None:
    path = running.gateway.reloader.path
    assert path is not None
    path.write_text(text)


def url(running: InProcessGateway) -> str:
    return f"ws://127.0.0.1:{running.http_port}/ws"


@ON_THE_MODULE_LOOP
async def test_a_reload_applies_only_what_changed_and_leaves_clients_and_unchanged_devices_alone(
    gateway: InProcessGateway,
) -> None:
    running = gateway
    rewrite(running, header() + sim("keep") + sim("gone") + sim("change"))
    async with connect(url(running), token=ADMIN_TOKEN) as admin:
        await admin.reload()  # the fixture's file plus `change`: the starting point of this test
        await until(
            lambda: all(h.status == "connected" for h in running.gateway.supervisor.devices.values()), "connected"
        )
        keep_handle = running.gateway.supervisor.devices["keep"]
        await admin.lock("change")
        # A leased rumble on the device that goes away: its safe state must end it.
        await admin.command("gone", "rumble", {"low": 0.5, "high": 0.5, "duration_s": 60.0})
        async with admin.subscribe("keep/state") as keep_samples, admin.subscribe("gone/outputs") as gone_outputs:
            first = await anext(keep_samples)
            rewrite(running, header() + sim("keep") + sim("change", leds=2) + sim("added"))
            report = await admin.reload()
            assert report["added"] == ["added"]
            assert report["removed"] == ["gone"]
            assert report["restarted"] == ["change"]
            assert report["unchanged"] == ["keep"]
            assert report["safe_states"] == {"gone": "ok", "change": "ok"}
            assert report["restart_needed"] == []
            assert report["applied"] == []
            # The removed device's last outputs are its safe state: the rumble is off, the e-stop passed.
            last_outputs = None
            while last_outputs is None or last_outputs.data["estopped"] < 1:
                last_outputs = await anext(gone_outputs)
            assert (last_outputs.data["rumble_low"], last_outputs.data["rumble_high"]) == (0.0, 0.0)
            # The unchanged device never stopped: the same task, and its samples' seq continues.
            later = [await anext(keep_samples) for _ in range(3)]
            assert [s.seq for s in later] == list(range(later[0].seq, later[0].seq + 3))
            assert later[0].seq > first.seq
        assert running.gateway.supervisor.devices["keep"] is keep_handle
        assert keep_handle.task is not None
        assert not keep_handle.task.done()
        ids = sorted(d.id for d in await admin.devices())
        assert ids == ["added", "change", "keep"]
        changed = running.gateway.supervisor.devices["change"]
        assert changed.adapter.options.leds == 2
        assert changed.locked_by is not None  # the lock carried over to the restarted device
        await until(lambda: changed.status == "connected", "restarted")
        assert await admin.ping() > 0  # the same connection throughout
    gone_events = [line for line in running.logs if line.get("device") == "gone" and line.get("safe_state")]
    assert gone_events
    assert gone_events[-1]["safe_state"] == "ok"


@ON_THE_MODULE_LOOP
async def test_an_invalid_file_changes_nothing_and_every_error_is_reported(gateway: InProcessGateway) -> None:
    running = gateway
    before = dict(running.gateway.supervisor.devices)
    rewrite(running, header() + sim("keep", leds=0) + '\n[devices.x]\nkind = "sim"\nwheels = 3\n[nope]\n')
    async with connect(url(running), token=ADMIN_TOKEN) as admin:
        with pytest.raises(InvalidArgument) as refused:
            await admin.reload()
    problems = refused.value.message.splitlines()
    assert len(problems) == 3, problems
    assert any(p.startswith("devices.keep") for p in problems)
    assert any(p.startswith("devices.x.wheels") for p in problems)
    assert any(p.startswith("nope") for p in problems)
    assert running.gateway.supervisor.devices == before


@ON_THE_MODULE_LOOP
async def test_listener_and_auth_changes_need_a_restart_and_are_not_applied(gateway: InProcessGateway) -> None:
    running = gateway
    current = running.gateway.config
    devices = "".join(sim(d.id, d.options.leds) for d in current.devices)
    text = (header() + devices).replace("http_port = 0", "http_port = 1").replace('role = "control"', 'role = "read"')
    rewrite(running, text + "\n[supervisor]\nbackoff_max_s = 7.0\n")
    async with connect(url(running), token=ADMIN_TOKEN) as admin:
        report = await admin.reload()
        assert report["restart_needed"] == ["server.http_port", "auth.tokens"]
        assert report["applied"] == ["supervisor.backoff_max_s"]
        assert running.gateway.config.server == current.server
        assert running.gateway.config.auth == current.auth
        assert running.gateway.config.supervisor.backoff_max_s == 7.0
        # Still pending on the next reload: the daemon keeps what it runs until it restarts.
        assert (await admin.reload())["restart_needed"] == ["server.http_port", "auth.tokens"]
    # The operator's token still has its old role: the auth change was not half-applied.
    async with connect(url(running), token=CONTROL_TOKEN) as operator:
        with pytest.raises(Unauthorized):
            await operator.reload()
        await operator.command("keep", "led", {"rgb": [0.0, 1.0, 0.0]})
    rewrite(running, header() + devices)


def feel(scale: float = 0.5, name: str = "feel", target: str = "buzz") -> str:
    """A binding from the simulated pad's left trigger to a simulated controller's low rumble motor."""
    return f"""
[bindings.{name}]
source = "pad"
target = "{target}"
mode = "direct"
deadman = "none"
rate_hz = 20.0
inputs.low = {{ path = "state.axes.left_trigger", scale = {scale} }}
outputs.low = {{ command = "rumble", field = "low", args = {{ high = 0.0, duration_s = 1.0 }} }}
"""


@ON_THE_MODULE_LOOP
async def test_a_reload_adds_changes_and_removes_bindings_through_their_safe_output(gateway: InProcessGateway) -> None:
    running = gateway
    base = "".join(sim(d.id, d.options.leds) for d in running.gateway.config.devices)
    devices = base + sim("pad") + sim("buzz")
    rewrite(running, header() + devices + feel() + feel(name="steady", target="keep"))
    async with connect(url(running), token=ADMIN_TOKEN) as admin:
        report = await admin.reload()
        assert (report["added"], report["bindings_added"]) == (["buzz", "pad"], ["feel", "steady"])
        bindings = running.gateway.bindings.devices
        steady = bindings["steady"]
        # Every `buzz/outputs` sample, as the bus carries it (a client's subscription may coalesce).
        watcher = Watcher()
        running.gateway.bus.attach(watcher)
        running.gateway.bus.subscribe(watcher, ["buzz/outputs"], None, newest=False)

        def rumble() -> list[float]:
            return [s.message.rumble_low for s in watcher.seen if isinstance(s, Sample)]

        await until(lambda: any(low > 0.0 for low in rumble()), "the binding driving the rumble")
        old_feel = bindings["feel"]
        rewrite(running, header() + devices + feel(scale=0.25) + feel(name="steady", target="keep"))
        watcher.seen.clear()
        report = await admin.reload()
        assert (report["bindings_restarted"], report["bindings_added"], report["bindings_removed"]) == (
            ["feel"],
            [],
            [],
        )
        assert report["safe_states"] == {"feel": "ok"}
        assert (report["restarted"], report["added"], report["removed"]) == ([], [], [])
        # The restarted binding passed through its safe output (the rumble off), then drove again.
        assert 0.0 in rumble()
        watcher.seen.clear()
        await until(lambda: any(low > 0.0 for low in rumble()), "the restarted binding driving")
        assert bindings["feel"] is not old_feel
        assert bindings["feel"].options.evaluator.spec.inputs[0].shape.scale == 0.25  # type: ignore[attr-defined]
        # Removed (here by `hwgateway reload`): its safe output, and nothing more from it.
        rewrite(running, header() + devices + feel(name="steady", target="keep"))
        watcher.seen.clear()
        command = [sys.executable, "-m", "gateway", "reload", "--url", url(running), "--token", ADMIN_TOKEN]
        cli = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE)
        out, _ = await cli.communicate()
        assert (cli.returncode, out.decode().splitlines()) == (0, ["ended      binding feel (safe state: ok)"])
        assert rumble()[-1] == 0.0
        assert "feel" not in running.gateway.supervisor.devices
        assert running.gateway.supervisor.devices["buzz"].adapter.outputs()["rumble_low"] == 0.0
        running.gateway.bus.detach(watcher)
        # The unchanged binding ran on throughout: the same device, its task never ended.
        assert bindings["steady"] is steady
        assert running.gateway.supervisor.devices["steady"].task is not None
        assert not running.gateway.supervisor.devices["steady"].task.done()
        # A device replaced by a binding of its name in one reload, and back: each goes before the other comes.
        no_buzz = header() + base + sim("pad")
        rewrite(running, no_buzz + feel(name="buzz", target="keep"))
        report = await admin.reload()
        assert (report["removed"], report["bindings_removed"], report["bindings_added"]) == (
            ["buzz"],
            ["steady"],
            ["buzz"],
        )
        rewrite(running, no_buzz + sim("buzz"))
        report = await admin.reload()
        assert (report["added"], report["bindings_removed"], report["safe_states"]) == (
            ["buzz"],
            ["buzz"],
            {"buzz": "ok"},
        )
        assert running.gateway.supervisor.devices["buzz"].kind == "sim"
        rewrite(running, header() + base)
        assert sorted((await admin.reload())["removed"]) == ["buzz", "pad"]


# -- the property: random edit sequences --------------------------------------------------------

IDS = ("a", "b", "c")
#: One device's config in an edit: absent, or a sim device with 1 or 2 LEDs, or disabled.
device_states = st.sampled_from([None, 1, 2, "disabled"])
#: An edit: every device's state, or an invalid file (it must change nothing).
edits = st.one_of(
    st.tuples(*(device_states for _ in IDS)).map(lambda states: dict(zip(IDS, states, strict=True))),
    st.just("invalid"),
)


def file_of(states: dict[str, Any]) -> str:
    text = '[server]\nhttp_port = 0\nmsgpack_port = -1\nunix_socket = ""\n'
    for device, state in states.items():
        if state == "disabled":
            text += sim(device) + "enabled = false\n"
        elif state is not None:
            text += sim(device, leds=state, rate_hz=200.0)
    return text


class Watcher(Subscriber):
    """Every device event and every `outputs` sample, in order."""

    def __init__(self) -> None:
        super().__init__("watcher", "json")
        self.seen: list[Any] = []
        self.direct = self._see

    def _see(self, item: Any) -> bool:
        self.seen.append(item)
        return True


@given(st.lists(edits, min_size=1, max_size=5), device_states, device_states)
@fuzz_settings(12)
def test_random_edit_sequences_leave_the_running_devices_equal_to_a_fresh_start_on_the_last_valid_file(
    sequence: list[Any], first_a: Any, first_b: Any
) -> None:
    asyncio.run(_edit_sequence({"a": first_a, "b": first_b, "c": None}, sequence))


async def _edit_sequence(start: dict[str, Any], sequence: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.toml"
        path.write_text(file_of(start))
        gateway = Gateway(load(path), config_path=path)
        watcher = Watcher()
        gateway.bus.attach(watcher)
        gateway.bus.subscribe(watcher, ["*/outputs"], None, newest=False)
        gateway.supervisor.start()
        last_valid = start
        try:
            for edit in sequence:
                # Devices a previous edit started are connected first: their first events are not this edit's.
                await until(lambda: all(h.status == "connected" for h in gateway.supervisor.devices.values()), "up")
                handles = dict(gateway.supervisor.devices)
                watcher.seen.clear()
                if edit == "invalid":
                    path.write_text(file_of(last_valid) + sim("a", leds=99))
                    with pytest.raises(ConfigError):
                        await gateway.reloader.reload()
                    assert gateway.supervisor.devices == handles
                    assert not [e for e in watcher.seen if isinstance(e, DeviceEvent)]
                    continue
                path.write_text(file_of(edit))
                before = gateway.config.devices
                report = await gateway.reloader.reload()
                last_valid = edit
                diff = diff_devices(before, gateway.config.devices)
                # Equal to a fresh start on this file: the same devices with the same configs.
                fresh = Supervisor(Bus(), gateway.config.supervisor, loads(file_of(edit)).devices, KINDS)
                running = {key: (h.config, type(h.adapter)) for key, h in gateway.supervisor.devices.items()}
                assert running == {key: (h.config, type(h.adapter)) for key, h in fresh.devices.items()}
                assert all(h.task is not None and not h.task.done() for h in gateway.supervisor.devices.values())
                # Unchanged devices were never touched: the same handle, no availability event.
                for device in diff.unchanged:
                    assert gateway.supervisor.devices[device] is handles[device]
                    assert not [e for e in watcher.seen if isinstance(e, DeviceEvent) and e.device == device]
                # Every removed or changed device passed through its safe state: e-stopped, then stopped.
                for device in [*diff.removed, *(d.id for d in diff.changed)]:
                    assert report.safe_states[device] == "ok"
                    estops = [s for s in watcher.seen if isinstance(s, Sample) and s.topic == f"{device}/outputs"]
                    assert estops, watcher.seen
                    assert estops[-1].message.estopped >= 1, watcher.seen
                    stopped = [e for e in watcher.seen if isinstance(e, DeviceEvent) and e.device == device]
                    assert any(e.status == "stopped" for e in stopped)
                assert sorted(report.added) == sorted(d.id for d in diff.added)
        finally:
            await gateway.supervisor.stop()


# -- the daemon: SIGHUP under the unit's command line, and `hwgateway reload` ------------------


async def test_sighup_under_the_units_command_line_reloads_and_hwgateway_reload_reports_errors(
    tmp_path: Path,
) -> None:
    from tests.harness import free_port

    http_port = free_port()
    config = tmp_path / "config.toml"
    base = f'[server]\nhttp_port = {http_port}\nmsgpack_port = -1\nunix_socket = ""\n'
    config.write_text(base + sim("one", rate_hz=10.0))
    listener = NotifyListener(str(tmp_path / "notify"))
    env = {**os.environ, "NOTIFY_SOCKET": str(tmp_path / "notify")}
    proc = await asyncio.create_subprocess_exec(
        *exec_start(config), env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    try:
        await listener.wait_for("READY=1", timeout=45.0)  # a hang guard: a loaded machine starts it slowly
        listener.messages.clear()
        config.write_text(base + sim("one", rate_hz=10.0) + sim("two", rate_hz=10.0))
        proc.send_signal(signal.SIGHUP)
        await listener.wait_for("RELOADING=1")
        await listener.wait_for("READY=1")
        assert proc.returncode is None  # SIGHUP reloaded; it did not stop
        async with connect(f"ws://127.0.0.1:{http_port}/ws") as client:
            assert [d.id for d in await client.devices()] == ["one", "two"]
        # `hwgateway reload` with a broken file: nothing changes, every problem printed, exit 14.
        config.write_text(base + sim("one", rate_hz=-1.0) + '[devices.two]\nkind = "nope"\n')
        reload_cli = [sys.executable, "-m", "gateway", "reload", "--url", f"ws://127.0.0.1:{http_port}/ws"]
        refused = await asyncio.create_subprocess_exec(*reload_cli, stderr=asyncio.subprocess.PIPE)
        _, err = await refused.communicate()
        assert refused.returncode == 14, err
        assert b"reload refused, nothing changed (2 problem(s))" in err, err
        assert b"devices.one.rate_hz" in err, err
        assert b"devices.two.kind" in err, err
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 15) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        listener.sock.close()


def test_the_diff_is_generic_over_sections() -> None:
    old = loads(sim("a") + sim("b"))
    new = loads("[supervisor]\nbackoff_max_s = 3.0\n[tdm]\nenabled = true\n" + sim("a", leds=2) + sim("c"))
    assert changed_sections(old, new) == {
        "supervisor": ["supervisor.backoff_max_s"],
        "tdm": ["tdm.enabled"],
        "devices": ["devices"],
    }
    diff = diff_devices(old.devices, new.devices)
    assert [d.id for d in diff.added] == ["c"]
    assert diff.removed == ("b",)
    assert [d.id for d in diff.changed] == ["a"]
