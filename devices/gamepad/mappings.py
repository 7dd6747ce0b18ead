"""SDL_GameControllerDB-format mapping files: which lines SDL should be given (pure, no SDL).

A mapping line is ``GUID,name,element:binding,...,platform:Linux,`` (the format of
SDL_GameControllerDB's ``gamecontrollerdb.txt``). SDL's own file loader silently skips every line
without a ``platform:`` field and counts only new mappings; reading the file here instead lets a user
file omit ``platform:``, and lets each refused line be reported with its line number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from gateway.errors import ConfigError

#: Longer files are refused rather than read (the whole upstream DB is about 0.6 MB).
MAX_FILE_BYTES = 16 * 1024 * 1024
#: SDL_GameControllerAddMapping copies lines into fixed buffers; longer lines are not mappings.
MAX_LINE_CHARS = 4096

_GUID = re.compile(r"[0-9a-fA-F]{32}")


class MappingFileError(ConfigError):
    """A mapping file cannot be read, or holds a line that is not a mapping.

    A configuration error found at run time (the file may appear or be fixed later: the device
    retries), so it is logged without a traceback.
    """

    def __init__(self, message: str) -> None:
        super().__init__("", message)


@dataclass(frozen=True, slots=True)
class MappingLine:
    """One mapping taken from a file: its 1-based `line` number, the `guid` and the full `text`."""

    line: int
    guid: str
    text: str


def parse_mappings(text: str, platform: str, source: str = "<mappings>") -> list[MappingLine]:
    """The mappings in `text` that apply on `platform` (e.g. "Linux"), in file order.

    Blank lines and ``#`` comments are skipped, and so are lines whose ``platform:`` names another
    platform; a line without ``platform:`` applies everywhere. A line that does not start with a
    32-digit hex GUID and a name raises `MappingFileError` naming `source` and the line.
    """
    mappings = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{source}:{number}"
        if len(line) > MAX_LINE_CHARS:
            raise MappingFileError(f"{where}: longer than {MAX_LINE_CHARS} characters")
        fields = [part.strip() for part in line.split(",")]
        if len(fields) < 3 or not _GUID.fullmatch(fields[0]) or not fields[1]:
            raise MappingFileError(f"{where}: not a mapping (expected 'GUID,name,element:binding,...')")
        line_platform = next((f.split(":", 1)[1] for f in fields[2:] if f.startswith("platform:")), None)
        if line_platform is not None and line_platform.lower() != platform.lower():
            continue
        mappings.append(MappingLine(number, fields[0].lower(), line))
    return mappings


def read_mapping_file(path: str, platform: str) -> list[MappingLine]:
    """Read and parse the mapping file at `path` (UTF-8); raise `MappingFileError` saying why not."""
    file = Path(path)
    try:
        size = file.stat().st_size
        if size > MAX_FILE_BYTES:
            raise MappingFileError(f"{path}: {size} bytes is larger than {MAX_FILE_BYTES}")
        text = file.read_text(encoding="utf-8")
    except OSError as error:
        raise MappingFileError(f"cannot read mapping file {path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise MappingFileError(f"mapping file {path} is not UTF-8 text") from None
    return parse_mappings(text, platform, path)
