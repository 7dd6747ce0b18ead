"""The staged `make install` (`make check-install` makes it under build/stage and runs these tests on it).

HWGW_STAGE names the staging root. What a user meets after `sudo make install`: `hwgateway` on PATH,
every device kind of the README usable (the venv holds the gamepad and BLE extras), and the folders
and files with the modes the unit expects.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.test_service import RULES, UNIT, unit_value

VENV = "/opt/hwgateway/venv"


@pytest.fixture(scope="module")
def stage() -> Path:
    root = os.environ.get("HWGW_STAGE")
    assert root, "set HWGW_STAGE to a staged install's root (make check-install does)"
    return Path(root)


def run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # From / : `python -m` and `-c` put the working folder first on sys.path, and this checkout's
    # packages must not stand in for the installed ones.
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=120, check=False, env=env, cwd="/")


def test_the_venv_holds_the_gamepad_and_ble_extras(stage: Path) -> None:
    python = stage / VENV.lstrip("/") / "bin" / "python"
    done = run(str(python), "-W", "error", "-c", "import sdl2, bleak, bumble, devices.gamepad.sdl_backend")
    assert done.returncode == 0, done.stderr


def test_hwgateway_is_on_path_and_checks_a_config_with_every_device_kind(stage: Path, tmp_path: Path) -> None:
    link = stage / "usr/local/bin/hwgateway"
    assert link.is_symlink()
    assert os.readlink(link) == f"{VENV}/bin/hwgateway"  # absolute: right once the stage is the root
    config = tmp_path / "config.toml"
    config.write_text(
        (stage / "etc/hwgateway/config.toml").read_text()
        + '[devices.pad]\nkind = "gamepad"\n[devices.hub]\nkind = "lego_hub"\n[devices.bit]\nkind = "microbit"\n'
    )
    # Bind the staged /opt over /opt in a mount namespace of our own, so the link resolves as installed,
    # and call the program by name, through PATH, as the README's next command does.
    unshare = shutil.which("unshare")
    assert unshare, "unshare (util-linux) is needed"
    script = 'mount --bind "$1/opt" /opt && exec hwgateway check-config "$2"'
    env = {**os.environ, "PATH": f"{stage / 'usr/local/bin'}:/usr/bin:/bin"}
    done = run(unshare, "--map-root-user", "--mount", "sh", "-c", script, "sh", str(stage), str(config), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{config}: ok; devices: pad (gamepad), hub (lego_hub), bit (microbit)\n"


def test_the_config_folder_has_the_units_mode_and_the_files_are_the_sources(stage: Path) -> None:
    folder = stage / "etc/hwgateway"
    assert stat.S_IMODE(folder.stat().st_mode) == int(unit_value("ConfigurationDirectoryMode"), 8)
    assert stat.S_IMODE((folder / "config.toml").stat().st_mode) == 0o640
    assert (stage / "etc/systemd/system/hwgateway.service").read_text() == UNIT.read_text()
    assert (stage / "etc/udev/rules.d/60-hwgateway.rules").read_text() == RULES.read_text()


def venv_without(stage: Path, tmp_path: Path, prefixes: tuple[str, ...]) -> Path:
    """A venv of the staged one's Python whose site-packages links every entry of the staged venv's but the
    distributions starting with `prefixes`: an install where those extras were left out (EXTRAS=...)."""
    staged = stage / VENV.lstrip("/")
    venv = tmp_path / "venv"
    done = run(str(staged / "bin" / "python"), "-m", "venv", "--without-pip", str(venv))
    assert done.returncode == 0, done.stderr
    (source,) = (staged / "lib").glob("python3.*/site-packages")
    (target,) = (venv / "lib").glob("python3.*/site-packages")
    for entry in source.iterdir():
        if not entry.name.lower().startswith(prefixes):
            (target / entry.name).symlink_to(entry)
    return venv


@pytest.mark.parametrize(
    ("kind", "extra", "prefixes"),
    [("gamepad", "gamepad", ("sdl2", "pysdl2")), ("lego_hub", "ble", ("bleak",)), ("microbit", "ble", ("bleak",))],
)
def test_check_config_refuses_a_kind_whose_extra_the_venv_lacks(
    stage: Path, tmp_path: Path, kind: str, extra: str, prefixes: tuple[str, ...]
) -> None:
    venv = venv_without(stage, tmp_path, prefixes)
    config = tmp_path / "config.toml"
    config.write_text(f'[devices.dev]\nkind = "{kind}"\n[devices.sim]\nkind = "sim"\n')
    done = run(str(venv / "bin" / "python"), "-m", "gateway", "check-config", str(config))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(
        f"hwgateway: configuration error: devices.dev.kind: kind '{kind}' needs the '{extra}' extra, "
        "which is not installed here"
    ), done.stderr
    assert "Traceback" not in done.stderr
    # The same venv with a config that needs no extra passes: only the missing extra was refused.
    config.write_text('[devices.sim]\nkind = "sim"\n')
    done = run(str(venv / "bin" / "python"), "-m", "gateway", "check-config", str(config))
    assert done.returncode == 0, done.stderr
