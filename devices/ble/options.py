"""Config keys every BLE device kind shares, and their checks."""

from __future__ import annotations

import re

_ADDRESS = re.compile(r"([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}")

#: Documentation of the shared keys, for the options classes' docstrings.
SHARED_KEYS_DOC = """`address` (aa:bb:cc:dd:ee:ff), `name` (exact advertised name) and `name_prefix` select the
    device; every one that is set must match. `scan_timeout_s`: how long a scan looks before the
    device counts as absent (the supervisor then retries with backoff); `connect_timeout_s` per
    connection attempt; `connect_attempts` tries, delays doubling from `retry_delay_s`, before the
    run fails. `pair`: pair (bond) before connecting, for devices that require it (BlueZ)."""


def check_address(address: str) -> None:
    """Raise `ValueError` unless `address` is empty or a Bluetooth address."""
    if address and not _ADDRESS.fullmatch(address):
        raise ValueError(f"address {address!r} is not a Bluetooth address like c7:1b:22:aa:bb:cc")
