"""LEGO Powered Up hubs over Bluetooth LE (kind "lego_hub", LEGO Wireless Protocol 3.0)."""
