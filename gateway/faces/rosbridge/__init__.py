"""The rosbridge v2 face: roslibjs and roslibpy clients on the bus (docs/rosbridge.md)."""
