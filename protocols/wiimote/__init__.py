"""Sans-I/O Wii Remote protocol: HID reports, calibration, IR camera, extensions and the connection.

Bytes in, typed values out and back; no sockets, clocks or logging of traffic (spec wiimote.md).
"""
