"""The Python SDK's tests. Run under ``npm test`` (``test/e2e/python-sdk.test.ts``), a suite still running after
``AGENT_SCHEDULER_HANG_DUMP_S`` seconds prints every thread's stack to stderr, so a hang names where it waits."""

from __future__ import annotations

import faulthandler
import os
import sys

_hang_dump = os.environ.get("AGENT_SCHEDULER_HANG_DUMP_S")
if _hang_dump:
    faulthandler.dump_traceback_later(float(_hang_dump), exit=False, file=sys.stderr)
