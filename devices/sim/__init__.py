"""Simulated peers that speak the real wire protocols (and a plain simulated controller)."""
