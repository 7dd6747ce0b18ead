"""Record the bus to MCAP files and read them back (the daemon's `[record]`, and the commands' shared parts).

`hwgateway record` is `hwgateway.recorder`; `hwgateway replay` and `--recover` are in `gateway.record_cli`.

Exit codes of the record and replay commands (also in README.md):
0 done; 2 bad arguments; 3 the file is not MCAP, corrupt or truncated (`--recover` reports what it
could read); 4 the gateway could not be reached or refused us; 5 no topic matched the patterns.
"""

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_BAD_FILE = 3
EXIT_CONNECT = 4
EXIT_NO_TOPICS = 5

# The commands' defaults live here, so that building `hwgateway`'s argument parser imports
# neither the MCAP library nor the bus (the other modules of this package use these).
#: Where `hwgateway record` connects by default.
DEFAULT_URL = "ws://127.0.0.1:8470/ws"
#: Samples the recording's writer thread may have waiting; beyond it new ones are dropped (counted).
DEFAULT_QUEUE = 10_000
#: MCAP chunk size before compression, in bytes.
DEFAULT_CHUNK_BYTES = 1024 * 1024
#: The chunk compressions `--compression` accepts.
COMPRESSION_NAMES = ("lz4", "none", "zstd")
