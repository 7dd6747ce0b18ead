"""Devices of other gateways, imported over the MQTT federation (docs/mqtt.md)."""
