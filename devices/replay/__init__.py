"""A device that replays an MCAP recording (`hwgateway record`) onto the bus with its original timing."""
