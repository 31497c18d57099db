import sys

from mcp_inflight.cli import main

sys.exit(main())
