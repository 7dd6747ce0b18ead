"""BlueZ over D-Bus: the calls and objects (`dbus`), and pairing a device (`pairing`, with its agent in `agent`)."""
