"""What `hwgateway scan` finds: one `Finding` per device that could be configured, from any family.

Each device family looks for its own hardware (`devices/<family>/scan.py`) and answers in these
terms; the composition root (`gateway/scan.py`) runs them, prints the findings as config and merges
them into a file. A family that cannot look (no Bluetooth adapter, no SDL) says why in a `Skipped`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Finding:
    """One device found: its `kind`, a stable `id`, how it is addressed, and its `[devices.<id>]` keys.

    `options` are the TOML keys besides `kind` (the ones that select this very device); `match`
    names those of them that identify it (a config that has a device of this kind with the same
    values already holds it). `summary` says what it is in words, `notes` anything to check.
    """

    kind: str
    id: str
    address: str
    summary: str
    options: dict[str, Any] = field(default_factory=dict)
    match: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The finding as plain data (the `scan` op's result, `--json`)."""
        return {
            "kind": self.kind,
            "id": self.id,
            "address": self.address,
            "summary": self.summary,
            "options": dict(self.options),
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class Skipped:
    """A family that could not look, and why (with what to do)."""

    family: str
    reason: str


def slug(text: str) -> str:
    """`text` as a device id part: lower case letters, digits and `-` (aa:bb -> aa-bb)."""
    cleaned = "".join(c if c.isalnum() else "-" for c in text.lower())
    return "-".join(part for part in cleaned.split("-") if part)[:100] or "device"
