"""Aseba networks (Thymio II over USB serial or radio dongle, simulators and switches over TCP)."""
