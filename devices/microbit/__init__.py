"""The BBC micro:bit over Bluetooth LE (kind "microbit")."""
