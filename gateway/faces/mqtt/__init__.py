"""The MQTT face: the bus on an MQTT broker, other gateways' devices imported, Home Assistant discovery.

It has no socket of its own: `bridge` holds one broker connection; `topics` is the topic map,
`export` sends the bus out, `commands` runs commands that arrive, `federation` imports other
gateways' devices, `discovery` writes Home Assistant's discovery documents. docs/mqtt.md has the map.
"""
