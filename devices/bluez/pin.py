"""The PIN a Wii Remote paired with its red sync button expects (specs: wiimote.md §1.3; BlueZ's wiimote plugin).

A remote in sync-button mode checks the PIN against the address of the host it pairs with: the
host adapter's six address bytes, least significant first (the order BlueZ keeps a `bdaddr_t` in,
which its wiimote plugin copies as the PIN). In 1+2 mode a remote pairs with its own address
instead, but never reconnects by itself afterwards, so the gateway pairs by the sync button only.

BlueZ's wiimote plugin (built into Debian's bluez) answers this PIN itself, before any agent is
asked. Without it, BlueZ asks the pairing agent, whose D-Bus answer is a string: a PIN with a zero
byte or a byte of 0x80 or more cannot be carried by it (`agent_pin` says None).
"""

from __future__ import annotations


def wiimote_pin(adapter_address: str) -> bytes:
    """The six PIN bytes for pairing a Wii Remote by its sync button with adapter `adapter_address` (AA:BB:..)."""
    octets = bytes.fromhex(adapter_address.replace(":", ""))
    if len(octets) != 6:
        raise ValueError(f"not a Bluetooth address: {adapter_address!r}")
    return octets[::-1]


def agent_pin(pin: bytes) -> str | None:
    """The PIN as an agent's `RequestPinCode` answer, or None when a D-Bus string cannot carry it unchanged."""
    if all(0 < byte < 0x80 for byte in pin):
        return pin.decode("ascii")
    return None
