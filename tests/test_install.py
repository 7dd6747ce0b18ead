"""What `sudo make install` sets up besides files: the service user's groups, and the unit's writable paths.

The files themselves (the venv with its extras, the link on PATH, the folder modes) are checked on a
real staged install by tests/staged/, which `make check-install` runs.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from gateway.core.config import RecordConfig, ServerConfig
from tests.test_service import ROOT, unit_entries, unit_value

INSTALL_USER = ROOT / "scripts" / "install-user.sh"

# Stand-ins for the account tools: each logs its argv; `getent` answers from HWGW_STUB_EXISTING.
STUB = """#!/bin/sh
echo "$(basename "$0") $*" >> "$HWGW_STUB_LOG"
if [ "$(basename "$0")" = getent ]; then
    case " $HWGW_STUB_EXISTING " in *" $1:$2 "*) exit 0 ;; esac
    exit 2
fi
"""


def run_install_user(tmp_path: Path, existing: str) -> list[str]:
    """Run scripts/install-user.sh with stub account tools; return the commands it ran (getent aside)."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for tool in ("getent", "groupadd", "useradd", "usermod"):
        (stubs / tool).write_text(STUB)
        (stubs / tool).chmod(0o755)
    log = tmp_path / "log"
    log.touch()
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "HWGW_STUB_LOG": str(log)}
    env["HWGW_STUB_EXISTING"] = existing
    done = subprocess.run([str(INSTALL_USER)], env=env, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    return [line for line in log.read_text().splitlines() if not line.startswith("getent")]


def test_a_new_service_user_gets_the_groups_of_serial_ports_and_gamepads(tmp_path: Path) -> None:
    ran = run_install_user(tmp_path, "group:input")
    assert ran == [
        "groupadd --system hwgateway",
        "useradd --system --gid hwgateway --groups dialout,input "
        "--home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin hwgateway",
    ]


def test_an_existing_user_gains_the_missing_groups_and_bluetooth_where_it_exists(tmp_path: Path) -> None:
    ran = run_install_user(tmp_path, "group:input group:bluetooth group:hwgateway passwd:hwgateway")
    assert ran == ["usermod --append --groups dialout,input,bluetooth hwgateway"]


def test_a_system_without_the_input_group_gets_it(tmp_path: Path) -> None:
    ran = run_install_user(tmp_path, "group:hwgateway passwd:hwgateway")
    assert ran == ["groupadd --system input", "usermod --append --groups dialout,input hwgateway"]


def test_the_unit_and_the_installer_give_the_service_the_same_groups() -> None:
    unit_groups = set(unit_value("SupplementaryGroups").split())
    assert unit_groups == {"dialout", "input"}
    script = INSTALL_USER.read_text()
    assert re.search(r"^groups=dialout,input$", script, re.MULTILINE)
    # A gamepad's rumble is written to its evdev node: the unit allows input devices read/write.
    allowed = [value for _, key, value in unit_entries() if key == "DeviceAllow"]
    assert "char-input rw" in allowed
    assert "char-input r" not in allowed


def writable_paths() -> list[Path]:
    """The folders the unit lets the service write under ProtectSystem=strict (besides PrivateTmp's /tmp)."""
    assert unit_value("ProtectSystem") == "strict"
    paths = []
    for _, key, value in unit_entries():
        if key == "RuntimeDirectory":
            paths += [Path("/run") / name for name in value.split()]
        elif key == "StateDirectory":
            paths += [Path("/var/lib") / name for name in value.split()]
        elif key == "ReadWritePaths":
            paths += [Path(name.lstrip("-")) for name in shlex.split(value)]
    return paths


def documented_recording_folder(text: str) -> str:
    match = re.search(r'(/var/lib/hwgateway/[\w/]+)"?\s', text)
    assert match, "no recording folder documented"
    return match.group(1)


@pytest.mark.parametrize("document", ["README.md", "config.toml"])
def test_the_documented_recording_folder_and_the_socket_are_writable_under_the_unit(document: str) -> None:
    text = (ROOT / document).read_text()
    section = text[text.index("[record]") :]
    folder = Path(documented_recording_folder(section))
    assert folder == Path("/var/lib/hwgateway/recordings")
    writable = writable_paths()
    assert any(folder.is_relative_to(path) for path in writable), (folder, writable)
    assert any(Path(ServerConfig().unix_socket).is_relative_to(path) for path in writable)
    assert RecordConfig().folder == ""  # off by default: the folder is only where it goes when set
    # The service owns its state folder (systemd makes it for User=), so the recorder can create the folder.
    assert unit_value("StateDirectory") == "hwgateway"
    assert unit_value("StateDirectoryMode") == "0750"


def test_the_installer_makes_the_config_folder_with_the_units_mode() -> None:
    mode = unit_value("ConfigurationDirectoryMode")
    script = (ROOT / "scripts" / "install-service.sh").read_text()
    assert f'install -d -m {mode} "$root/etc/hwgateway"' in script
    assert f'chmod {mode} "$root/etc/hwgateway"' in script
    # systemd does not chown a ConfigurationDirectory=: the installer gives the folder the service's group.
    assert "chgrp hwgateway /etc/hwgateway /etc/hwgateway/config.toml" in script
