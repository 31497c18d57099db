"""``python -m mcp_inflight.probe URL ...``: the same as ``mcp-inflight probe``."""

import sys

from .cli import main

sys.exit(main())
