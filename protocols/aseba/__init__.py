"""Aseba wire protocol (sans-I/O): framing, typed messages, node descriptions, bytecode."""
