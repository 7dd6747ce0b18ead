"""Wii Remotes over hidraw, raw L2CAP or a simulated remote (`kind = "wiimote"`)."""
