"""The ids an agent chooses for its requests, the same on every retry of one request, so that the server knows a
retry from a new request: a claim's id, and a session open's id and number."""

from __future__ import annotations

import threading
import time
import uuid

_lock = threading.Lock()
_last_open_seq = 0


def new_claim_id() -> str:
    """A claim id: letters, digits and ``-``, as the server accepts (8 to 64 characters)."""
    return str(uuid.uuid4())


def new_open_id() -> str:
    """A new open id: one per open, sent again on each of its retries."""
    return str(uuid.uuid4())


def next_open_seq() -> int:
    """A number for a new open: above every earlier one of this process and, being the clock in ms, above those
    of the process this one restarted."""
    global _last_open_seq
    with _lock:
        _last_open_seq = max(int(time.time() * 1000), _last_open_seq + 1)
        return _last_open_seq
