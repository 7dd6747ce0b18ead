"""`python -m gateway` runs the `hwgateway` command."""

import sys

from gateway.cli import main

sys.exit(main())
