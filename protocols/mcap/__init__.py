"""MCAP (https://mcap.dev) read side, sans I/O: record headers, the records a replay uses, chunks.

The caller reads the file; these functions check every length against what is there and against the
limits below before anything is allocated or decompressed, and raise `McapError` on hostile bytes.
"""
