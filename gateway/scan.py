"""`hwgateway scan` and the admin `scan` op: find attached devices and print, or merge, ready-to-paste config.

Part of the composition root: it runs each family's own search (`devices/<family>/scan.py`) side by
side, each bounded by the timeout, and turns the findings (`gateway.core.discovery.Finding`) into
`[devices.<id>]` tables. A family that cannot look (no SDL, no BlueZ, no adapter) is reported as
skipped, with why and what to do. Nothing is written unless asked: `merge_into` adds the new
findings to a config file, keeping its comments, layout and every device it has (a finding whose
identifying keys match a configured device of its kind keeps that device's id and is not added).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.core.discovery import Finding, Skipped
from gateway.errors import ConfigError

if TYPE_CHECKING:
    from devices.ble.link import Backend

log = logging.getLogger(__name__)

#: The families `scan` asks by default, and the one it asks only for given addresses.
FAMILIES = ("serial", "gamepad", "ble", "wiimote")
KORTEX = "kortex"
#: Seconds each family may take by default, and the bounds of the op's `timeout_s`.
DEFAULT_TIMEOUT_S = 4.0
MIN_TIMEOUT_S = 0.5
MAX_TIMEOUT_S = 60.0
#: Seconds over the timeout a family is given to finish (closing ports, stopping discovery) before it is left.
_GRACE_S = 3.0


@dataclass(frozen=True, slots=True)
class ScanRequest:
    """What to look for: `families` (of `FAMILIES`), more serial `ports`, Kortex `arms` (HOST[:PORT]), `timeout_s` s.

    `ble_backend` None is bleak's platform backend (BlueZ); tests pass the virtual radio's.
    `skip_ports` are serial ports not to open (the running daemon's own).
    """

    families: tuple[str, ...] = FAMILIES
    ports: tuple[str, ...] = ()
    arms: tuple[str, ...] = ()
    kortex_username: str = "admin"
    kortex_password: str = "admin"
    timeout_s: float = DEFAULT_TIMEOUT_S
    include_virtual_pads: bool = False
    ble_backend: Backend | None = None
    skip_ports: frozenset[str] = frozenset()


@dataclass
class ScanReport:
    """The findings, in family order, and the families that could not look."""

    findings: list[Finding] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The `scan` op's result data: findings, skipped families, and the config text."""
        return {
            "findings": [finding.as_dict() for finding in self.findings],
            "skipped": [{"family": s.family, "reason": s.reason} for s in self.skipped],
            "config": render(self.findings),
        }


async def scan(request: ScanRequest) -> ScanReport:
    """Run every requested family at once, each within the timeout; never raises for a family's failure."""
    searches: dict[str, Callable[[], Awaitable[list[Finding]]]] = {}
    timeout = request.timeout_s
    if "serial" in request.families:
        searches["serial"] = lambda: _serial(request)
    if "gamepad" in request.families:
        searches["gamepad"] = lambda: _gamepads(request)
    if "ble" in request.families:
        searches["ble"] = lambda: _ble(request)
    if "wiimote" in request.families:
        searches["wiimote"] = lambda: _wiimotes(request)
    if request.arms:
        searches[KORTEX] = lambda: _arms(request)
    results = await asyncio.gather(*(_bounded(name, search, timeout) for name, search in searches.items()))
    report = ScanReport()
    for found in results:
        if isinstance(found, Skipped):
            report.skipped.append(found)
        else:
            report.findings += found
    return report


async def _bounded(
    family: str, search: Callable[[], Awaitable[list[Finding]]], timeout_s: float
) -> list[Finding] | Skipped:
    try:
        async with asyncio.timeout(timeout_s + _GRACE_S):
            return await search()
    except TimeoutError:
        return Skipped(family, f"no answer within {timeout_s + _GRACE_S:g} s")
    except ImportError as error:
        return Skipped(family, f"not installed here ({error.name or error}): install hwgateway's extra for it")
    except (ConnectionError, OSError, ValueError) as error:
        return Skipped(family, str(error) or type(error).__name__)
    except Exception as error:  # a family's bug must not hide the others' findings
        log.exception("scan: %s failed", family)
        return Skipped(family, f"{type(error).__name__}: {error}")


async def _serial(request: ScanRequest) -> list[Finding]:
    from devices.aseba.scan import scan_serial, thymio_ports

    ports = [path for path in (*thymio_ports(), *request.ports) if path not in request.skip_ports]
    return await scan_serial(dict.fromkeys(ports), request.timeout_s)


async def _gamepads(request: ScanRequest) -> list[Finding]:
    from devices.gamepad.scan import scan_gamepads

    return await scan_gamepads(request.include_virtual_pads)


async def _ble(request: ScanRequest) -> list[Finding]:
    from devices.ble.link import Backend
    from devices.ble.scan import scan_ble

    return await scan_ble(request.timeout_s, request.ble_backend or Backend())


async def _wiimotes(request: ScanRequest) -> list[Finding]:
    from devices.wiimote.scan import scan_wiimotes

    return await scan_wiimotes(request.timeout_s)


async def _arms(request: ScanRequest) -> list[Finding]:
    from devices.kortex.scan import probe_arm

    return list(
        await asyncio.gather(
            *(
                probe_arm(address, request.kortex_username, request.kortex_password, request.timeout_s)
                for address in request.arms
            )
        )
    )


async def scan_op(
    devices: Iterable[Any],
    families: tuple[str, ...] | None,
    timeout_s: float | None,
    serial: tuple[str, ...],
    kortex: tuple[str, ...],
) -> dict[str, Any]:
    """The admin `scan` op of a running gateway with configured `devices` (`DeviceConfig`s).

    The serial ports its own Aseba devices hold are not opened again (their bytes are theirs);
    an unknown family is `InvalidArgument`.
    """
    from gateway.errors import InvalidArgument

    chosen = FAMILIES if families is None else families
    unknown = sorted(set(chosen) - set(FAMILIES))
    if unknown:
        raise InvalidArgument(f"scan.families: unknown {', '.join(unknown)} (known: {', '.join(FAMILIES)})")
    held = frozenset(
        str(device.options.target).removeprefix("ser:device=")
        for device in devices
        if device.kind == "aseba" and str(getattr(device.options, "target", "")).startswith("ser:")
    )
    request = ScanRequest(
        families=chosen,
        ports=serial,
        arms=kortex,
        timeout_s=DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s,
        skip_ports=held,
    )
    return (await scan(request)).as_dict()


# -- config text --------------------------------------------------------------------------------


def _toml_value(value: object) -> str:
    import tomlkit

    return tomlkit.item(value).as_string()


def render(findings: Iterable[Finding]) -> str:
    """The findings as `[devices.<id>]` tables, each with a comment saying what was found."""
    blocks = []
    for finding in findings:
        lines = [f"# {finding.summary}"]
        lines += [f"# note: {note}" for note in finding.notes]
        lines.append(f"[devices.{finding.id}]")
        lines.append(f'kind = "{finding.kind}"')
        lines += [f"{key} = {_toml_value(value)}" for key, value in finding.options.items()]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + ("\n" if blocks else "")


@dataclass
class MergeResult:
    """What `merge_into` did: ids added, and findings already configured (finding id -> configured id)."""

    added: list[str] = field(default_factory=list)
    already: dict[str, str] = field(default_factory=dict)


def merge(text: str, findings: Iterable[Finding]) -> tuple[str, MergeResult]:
    """Add the findings not yet in config `text` (TOML) to it; return the new text and what was done.

    Comments, layout and every existing table stay as they were. A finding is already configured
    when a device of its kind has the same values of its identifying keys (`Finding.match`); a new
    one whose id is taken gets `-2`, `-3`, ... Raises `ConfigError` when `text` is not TOML.
    """
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        document = tomlkit.parse(text)
    except TOMLKitError as error:
        raise ConfigError("", f"not valid TOML: {error}") from None
    devices = document.get("devices")
    if devices is None:
        devices = tomlkit.table(is_super_table=True)
        document["devices"] = devices
    elif not isinstance(devices, dict):
        raise ConfigError("devices", "expected a table of [devices.<id>] tables")
    result = MergeResult()
    for finding in findings:
        existing = _configured(devices, finding)
        if existing is not None:
            result.already[finding.id] = existing
            continue
        device_id = finding.id
        number = 2
        while device_id in devices:
            device_id, number = f"{finding.id}-{number}", number + 1
        table = tomlkit.table()
        table.comment(finding.summary)
        table.add("kind", finding.kind)
        for key, value in finding.options.items():
            table.add(key, value)
        devices.append(device_id, table)  # type: ignore[attr-defined]  # a tomlkit Table
        result.added.append(device_id)
    return tomlkit.dumps(document), result


def _configured(devices: Any, finding: Finding) -> str | None:
    """The id of a configured device of the finding's kind with the same identifying values, if any."""
    for device_id, table in devices.items():
        if not isinstance(table, dict) or table.get("kind") != finding.kind or not finding.match:
            continue
        if all(_same(table.get(key), finding.options.get(key)) for key in finding.match):
            return str(device_id)
    return None


def _same(configured: object, found: object) -> bool:
    if isinstance(configured, str) and isinstance(found, str):
        return configured.lower() == found.lower()
    return configured == found


def merge_into(path: Path, findings: Iterable[Finding], check: Callable[[str], object]) -> MergeResult:
    """Merge the findings into the file at `path` (made when missing) if the result passes `check`.

    `check` is `check-config`'s (it raises `ConfigError`); when it fails nothing is written.
    """
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError("", f"cannot read {path}: {error}") from None
    merged, result = merge(text, findings)
    if result.added:
        check(merged)
        temporary = path.with_name(path.name + ".scan-tmp")
        temporary.write_text(merged, encoding="utf-8")
        with contextlib.suppress(OSError):
            temporary.chmod(path.stat().st_mode & 0o777)  # the config's own mode (it may hold secrets)
        temporary.replace(path)
    return result
