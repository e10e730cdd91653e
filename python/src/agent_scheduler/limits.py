"""What one call to the server may carry, in one place: the Worker and the client size their calls by these.

The figures are the server's (the TypeScript SDK's ``SERVER_LIMITS``, which a test ties to the server); sizes are
UTF-8 bytes of the JSON, as the server measures them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final, TypeVar

BODY_BYTES: Final = 300 * 1024
"""Any request body; a larger one is refused whole (413) before any route reads it."""
RESULT_BYTES: Final = 256 * 1024
CHECKPOINT_BYTES: Final = 16 * 1024
CHECKPOINTS_PER_HEARTBEAT: Final = 100
COMPLETIONS_PER_CALL: Final = 10
TASKS_PER_CLAIM: Final = 10
TASKS_PER_SUBMIT: Final = 25
ERROR_MESSAGE_CHARS: Final = 2048
SNOOZE_SECONDS: Final = 12 * 60 * 60
TIMEOUT_SECONDS: Final = 12 * 60 * 60
"""An attempt's length, and the most an extension of its deadline may ask."""
PROGRESS_DATA_BYTES: Final = 16 * 1024
PROGRESS_MESSAGE_CHARS: Final = 1024
PROGRESS_PER_CALL: Final = 100
WAIT_SECONDS: Final = 30 * 24 * 60 * 60
"""How long a waitpoint may wait for its answer."""
RATE_LIMITS_PER_TASK: Final = 4
"""Rate limits one task names, and so the limits whose usage one finish reports."""
RATE_UNITS: Final = 10**12
"""The most units of any rate limit: a usage report's count, and its total."""

ENVELOPE_BYTES: Final = 1024
"""Room left in a body for what wraps its items (``{"tasks":[…]}``, a session id)."""
ITEMS_BUDGET_BYTES: Final = BODY_BYTES - ENVELOPE_BYTES
"""The most bytes of items one body may carry, commas between them included."""

T = TypeVar("T")


def to_json(value: Any) -> str:
    """``value`` as the JSON the client sends: compact, non-ASCII kept as UTF-8, no NaN.

    Raises ``TypeError`` or ``ValueError`` for what JSON cannot carry.
    """
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def json_bytes(value: Any) -> int:
    """UTF-8 bytes of ``value`` as JSON, measured as the body will be sent."""
    return len(to_json(value).encode("utf-8", "surrogatepass"))


def take_within_budget(items: list[T], bytes_of: Callable[[T], int], max_items: int) -> list[T]:
    """Takes from the front of ``items`` what one call may carry.

    At most ``max_items``, and items only while their sum (and a comma between each two) stays within the budget.
    The first item is always taken, so one too large for any body goes alone and is refused alone.
    """
    total = 0
    count = 0
    for item in items:
        size = bytes_of(item) + (1 if count > 0 else 0)
        if count > 0 and (count >= max_items or total + size > ITEMS_BUDGET_BYTES):
            break
        total += size
        count += 1
    taken = items[:count]
    del items[:count]
    return taken
