"""Tokens, the role each grants, and the devices each may command.

Tokens are kept as SHA-256 digests (`hwgateway hash-token` makes one), never in plain text: a
gateway token is a long random string, so a fast hash is enough, and the digest is compared in
constant time. Roles, from least to most:

- `read`: list devices, describe types, subscribe; commands and locks are `unauthorized`.
- `control`: also commands and locks, on the devices its `devices` patterns match.
- `admin`: also ends another client's lock (`unlock` with `force`).

A token sees the devices its `devices` patterns match, whatever its role: it may read them with a
read-only service (`Client.read`, even under another client's lock), and the TDM face lists only
those (a student's token names the student's robots; a teacher's admin token `*`).

`estop` works for every authenticated client whatever its role: stopping is always allowed.
"""

from __future__ import annotations

import fnmatch
import hashlib
import hmac
from dataclasses import dataclass
from typing import Literal

Role = Literal["read", "control", "admin"]
ROLES: tuple[Role, ...] = ("read", "control", "admin")
DIGEST_PREFIX = "sha256:"
#: The shortest token accepted, by `hwgateway hash-token` and in the config (plain tokens and token files).
MIN_TOKEN_CHARS = 16


def hash_token(token: str) -> str:
    """The `hash` value for a token in the config (`sha256:<64 hex digits>`)."""
    return DIGEST_PREFIX + hashlib.sha256(token.encode()).hexdigest()


def parse_digest(text: str) -> bytes:
    """The 32 bytes of a `sha256:<hex>` value; `ValueError` naming the expected form otherwise."""
    hex_digits = text.removeprefix(DIGEST_PREFIX)
    if not text.startswith(DIGEST_PREFIX) or len(hex_digits) != 64:
        raise ValueError("expected 'sha256:' and 64 hex digits (hwgateway hash-token makes one)")
    try:
        return bytes.fromhex(hex_digits)
    except ValueError:
        raise ValueError("expected 'sha256:' and 64 hex digits (hwgateway hash-token makes one)") from None


@dataclass(frozen=True, slots=True)
class Credential:
    """One accepted token: its config `name`, SHA-256 `digest`, `role` and the device patterns it may command."""

    name: str
    digest: bytes
    role: Role = "admin"
    devices: tuple[str, ...] = ("*",)

    def permits(self, device_id: str) -> bool:
        """True when this token may command and lock `device_id` (glob patterns, `*` every device)."""
        return self.role != "read" and any(fnmatch.fnmatchcase(device_id, pattern) for pattern in self.devices)

    def sees(self, device_id: str) -> bool:
        """True when `device_id` matches this token's device patterns (any role): it may see and read it."""
        return any(fnmatch.fnmatchcase(device_id, pattern) for pattern in self.devices)

    @property
    def admin(self) -> bool:
        """True for the `admin` role."""
        return self.role == "admin"


#: What a client holds when the gateway has no tokens configured: everything.
OPEN_ACCESS = Credential("open", b"", "admin", ("*",))


def find(credentials: tuple[Credential, ...], token: str) -> Credential | None:
    """The credential `token` matches, comparing against every digest in constant time."""
    digest = hashlib.sha256(token.encode()).digest()
    found = None
    for credential in credentials:
        if hmac.compare_digest(digest, credential.digest) and found is None:
            found = credential
    return found
