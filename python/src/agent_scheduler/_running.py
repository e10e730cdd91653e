"""The pieces a Worker's loops share: an abort that both threads and the event loop can wait on, the idle backoff,
and one running task with its deadline on the agent's own clock and the checkpoint waiting for a heartbeat."""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from .limits import CHECKPOINT_BYTES, RATE_LIMITS_PER_TASK, RATE_UNITS, TIMEOUT_SECONDS, to_json
from .types import ClaimedTask

LostReason = Literal["cancelled", "lost", "deadline", "session", "expired"]
"""Why a lease ended under its handler: an operator cancelled the task; the server took it back; the attempt ran
past its deadline (reckoned from the claim's send time); the session ended; or no heartbeat got through in time by
the agent's own reckoning."""
AbortReason = Literal["cancelled", "lost", "deadline", "session", "expired", "released"]


class Abort:
    """Set once, from the event loop's thread: a ``threading.Event`` for calls on threads, futures for the loop."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self._waiters: list[asyncio.Future[None]] = []
        self._children: list[Abort] = []
        self._parents: list[Abort] = []

    def set(self) -> None:
        """Sets it, its futures and every abort made of it with :meth:`any`."""
        if self.event.is_set():
            return
        self.event.set()
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()
        for child in self._children:
            child.set()
        self._children.clear()

    def is_set(self) -> bool:
        return self.event.is_set()

    def future(self) -> asyncio.Future[None]:
        """Resolves when set; drop it with :meth:`forget` when no longer waited on."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self.is_set():
            waiter.set_result(None)
        else:
            self._waiters.append(waiter)
        return waiter

    def forget(self, waiter: asyncio.Future[None]) -> None:
        if waiter in self._waiters:
            self._waiters.remove(waiter)

    @staticmethod
    def any(parents: Iterable[Abort]) -> Abort:
        """Set as soon as one of ``parents`` is; :meth:`detach` it once done with."""
        combined = Abort()
        for parent in parents:
            if parent.is_set():
                combined.set()
            else:
                parent._children.append(combined)  # noqa: SLF001
        combined._parents = list(parents)
        return combined

    def detach(self) -> None:
        for parent in self._parents:
            if self in parent._children:  # noqa: SLF001
                parent._children.remove(self)  # noqa: SLF001

    async def sleep(self, seconds: float) -> None:
        """Waits ``seconds``, or less once set."""
        if self.is_set() or seconds <= 0:
            return
        waiter = self.future()
        try:
            await asyncio.wait_for(asyncio.shield(waiter), seconds)
        except asyncio.TimeoutError:
            pass
        finally:
            self.forget(waiter)


class Backoff:
    """From ``low`` doubling to ``high`` (seconds), back to ``low`` on :meth:`reset`."""

    def __init__(self, low: float, high: float) -> None:
        if not 0 <= low <= high:
            raise ValueError(f"poll interval needs 0 <= min <= max, not {low}, {high}")
        self.low, self.high, self._current = low, high, low

    def next(self) -> float:
        wait = self._current
        self._current = min(self.high, max(0.001, self._current * 2))
        return wait

    def reset(self) -> None:
        self._current = self.low


@dataclass(frozen=True)
class PendingCheckpoint:
    entry: RunningTask
    value: Any
    bytes: int
    version: int
    since: float
    alone: bool


class RunningTask:
    """One task a Worker runs: its abort, its deadline (monotonic seconds, margin already off) and its checkpoint."""

    def __init__(self, task: ClaimedTask, session_id: str, deadline: float, margin: float = 0.0) -> None:
        self.task = task
        self.session_id = session_id
        self.deadline = deadline
        #: Taken off every deadline the server gives this attempt, as off its first.
        self.margin = margin
        #: Seconds asked of the next heartbeat for this attempt (``extend_deadline``), until an answer names them.
        self.extension_asked: int | None = None
        self.abort = Abort()
        self.abort_reason: AbortReason | None = None
        #: ``running``: the handler has not returned; ``finishing``: its outcome is being recorded.
        self.phase: Literal["running", "finishing"] = "running"
        self.done: asyncio.Task[None] | None = None
        self.handler_task: asyncio.Task[Any] | None = None
        self.deadline_timer: asyncio.TimerHandle | None = None
        self.send_checkpoint_alone = False
        #: The ``traceparent`` of the span its handler ran in, sent with its outcome; None without OpenTelemetry.
        self.span_traceparent: str | None = None
        self._lock = threading.Lock()
        self._checkpoint: Any = None
        self._checkpoint_bytes = 0
        self._version = 0
        self._sent_version = 0
        self._pending_since = 0.0
        self._used: dict[str, float] = {}

    @property
    def task_id(self) -> str:
        return self.task["taskId"]

    def ask_extension(self, seconds: float) -> None:
        """Asks the next heartbeat to push the deadline to ``seconds`` from when the server has it (whole, 1 to
        43,200)."""
        self.extension_asked = int(min(TIMEOUT_SECONDS, max(1, math.ceil(seconds))))

    def extended(self, sent_at: float, seconds_left: float, asked: int) -> bool:
        """The server moved the deadline: ``seconds_left`` from its write, which came after ``sent_at`` (the beat's
        send), so ``sent_at`` plus them can only come before the server's deadline. The extension the beat carried
        (``asked``) is settled; one asked again since goes with the next beat. True when the deadline moved on."""
        if self.extension_asked == asked:
            self.extension_asked = None
        deadline = sent_at + seconds_left - self.margin
        if self.aborted or deadline <= self.deadline:
            return False
        self.deadline = deadline
        return True

    @property
    def aborted(self) -> bool:
        return self.abort_reason is not None

    def stop(self, reason: AbortReason) -> bool:
        """Aborts the handler (cancels an async one, sets a sync one's event); False if it already was."""
        if self.aborted:
            return False
        self.abort_reason = reason
        if self.deadline_timer is not None:
            self.deadline_timer.cancel()
        self.abort.set()
        if self.handler_task is not None:
            self.handler_task.cancel()
        return True

    def set_checkpoint(self, value: Any) -> None:
        """Keeps a copy of ``value`` for the next heartbeat; raises, keeping nothing, for one the server would
        refuse however it is sent: over 16 KB of JSON (``ValueError``) or not JSON (``TypeError``)."""
        text = to_json(value)
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > CHECKPOINT_BYTES:
            raise ValueError(f"a checkpoint is {size} bytes of JSON; the server takes at most {CHECKPOINT_BYTES}")
        with self._lock:
            if self._version == self._sent_version:
                self._pending_since = time.monotonic()
            self._checkpoint = json.loads(text)
            self._checkpoint_bytes = size
            self._version += 1

    def add_usage(self, units: Mapping[str, float]) -> None:
        """Adds units used, by rate limit: all or nothing. Raises, adding nothing, for a name that is not a string or
        a count that is not a number (``TypeError``), a count outside 0 to 10^12 or a total past it, or a fifth limit
        (``ValueError``)."""
        checked: dict[str, float] = {}
        for name, count in cast("Mapping[object, object]", units).items():
            if not isinstance(name, str):
                raise TypeError(f"usage: a rate limit is named by a string, not {name!r}")
            if isinstance(count, bool) or not isinstance(count, (int, float)):
                raise TypeError(f"usage of {name}: a number of units, not {count!r}")
            if not math.isfinite(count) or not 0 <= count <= RATE_UNITS:
                raise ValueError(f"usage of {name}: a number from 0 to {RATE_UNITS:.0e}")
            checked[name] = checked.get(name, 0) + count
        with self._lock:
            if len(set(self._used) | set(checked)) > RATE_LIMITS_PER_TASK:
                raise ValueError(f"usage: at most {RATE_LIMITS_PER_TASK} rate limits")
            totals = {name: self._used.get(name, 0) + count for name, count in checked.items()}
            past = [name for name, total in totals.items() if total > RATE_UNITS]
            if past:
                raise ValueError(f"usage of {past[0]}: at most {RATE_UNITS:.0e} units in all")
            self._used.update(totals)

    def usage(self) -> dict[str, float] | None:
        """The units used so far, by rate limit; None when none were reported."""
        with self._lock:
            return dict(self._used) if self._used else None

    def pending_checkpoint(self) -> PendingCheckpoint | None:
        """The checkpoint not yet sent, with the version to acknowledge once a heartbeat carried it."""
        with self._lock:
            if self._version == self._sent_version:
                return None
            return PendingCheckpoint(
                self, self._checkpoint, self._checkpoint_bytes, self._version, self._pending_since,
                self.send_checkpoint_alone,
            )

    def acknowledge_checkpoint(self, version: int) -> None:
        """The server has the checkpoint of ``version``, or refused it alone: it is not sent again."""
        with self._lock:
            self._sent_version = max(self._sent_version, version)
            if self._sent_version == self._version:
                self.send_checkpoint_alone = False
