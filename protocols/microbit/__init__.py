"""The BBC micro:bit Bluetooth profile (Lancaster University's micro:bit runtime): UUIDs and value codecs."""
