"""Bluetooth LE on bleak: one connection helper for every BLE adapter, and an in-process virtual radio."""
