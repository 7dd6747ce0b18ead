"""Record the bus to MCAP files and replay them: `hwgateway record`, `hwgateway replay`, `--recover`.

Exit codes of the record and replay commands (also in README.md):
0 done; 2 bad arguments; 3 the file is not MCAP, corrupt or truncated (`--recover` reports what it
could read); 4 the gateway could not be reached or refused us; 5 no topic matched the patterns.
"""

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_BAD_FILE = 3
EXIT_CONNECT = 4
EXIT_NO_TOPICS = 5
