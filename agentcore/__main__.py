"""`python -m agentcore`: the command line (see `agentcore._cli`)."""

import sys

from ._cli import main

sys.exit(main())
