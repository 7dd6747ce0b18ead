"""The Foxglove WebSocket face (docs/foxglove.md): Foxglove and Lichtblick open the bus with no bridge."""
