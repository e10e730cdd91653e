"""A Worker's progress reports (``ctx.progress``), coalesced as the TypeScript SDK's ``progress-reports.ts``: a
handler may report as often as it likes; the Worker sends at most once a second, each task's latest report in one
call (up to 100, within the body limit), so a Worker running many tasks makes about one call a second for all of
them. Reports are hints for people watching: one that fails is replaced by the next, or sent again a second later
while its task runs; one the server refuses (the lease is gone) is dropped, and a task that ends drops its unsent
report."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

from . import limits
from ._running import RunningTask
from .errors import AgentSchedulerError
from .types import ProgressItem, ProgressItemResult

#: The least time between two sends of reports (seconds).
PROGRESS_INTERVAL_SECONDS = 1.0


@dataclass(frozen=True)
class _Pending:
    item: ProgressItem
    bytes: int


def checked_item(entry: RunningTask, percent: float | None, message: str | None, data: Any) -> ProgressItem:
    """The report of ``entry`` as the server takes it; raises (``ValueError``, ``TypeError``) for one it would
    refuse however it is sent."""
    # Checked as what a caller without type checks may pass.
    given_percent = cast(object, percent)
    given_message = cast(object, message)
    if given_percent is not None and (
        isinstance(given_percent, bool)
        or not isinstance(given_percent, (int, float))
        or math.isnan(given_percent)
        or not 0 <= given_percent <= 100
    ):
        raise ValueError("percent: a number from 0 to 100")
    if given_message is not None and not (
        isinstance(given_message, str) and 1 <= len(given_message) <= limits.PROGRESS_MESSAGE_CHARS
    ):
        raise ValueError(f"message: 1 to {limits.PROGRESS_MESSAGE_CHARS} characters")
    if data is not None:
        size = limits.json_bytes(data)
        if size > limits.PROGRESS_DATA_BYTES:
            raise ValueError(
                f"progress data is {size} bytes of JSON; the server takes at most {limits.PROGRESS_DATA_BYTES}"
            )
    if percent is None and message is None and data is None:
        raise TypeError("a progress report says one of percent, message or data")
    item: ProgressItem = {"taskId": entry.task_id, "leaseEpoch": entry.task["leaseEpoch"]}
    if percent is not None:
        item["percent"] = percent
    if message is not None:
        item["message"] = message
    if data is not None:
        item["data"] = data
    return item


class ProgressReports:
    """Each running task's latest report, sent at most once a second. Used on the event loop's thread only.

    ``send`` makes one batch call (on the worker's threads); ``report`` hears what went wrong.
    """

    def __init__(
        self,
        send: Callable[[list[ProgressItem]], Awaitable[list[ProgressItemResult]]],
        report: Callable[[BaseException], None],
    ) -> None:
        self._send = send
        self._report = report
        self._pending: dict[RunningTask, _Pending] = {}
        self._flushed_at = -math.inf
        self._timer: asyncio.TimerHandle | None = None
        self._flushing: asyncio.Task[None] | None = None
        #: The server has no progress route (an older deployment): reports are dropped.
        self._unavailable = False

    def set(self, entry: RunningTask, item: ProgressItem) -> None:
        """Keeps ``item`` as the task's latest report, sent within a second."""
        if self._unavailable or entry.aborted:
            return
        self._pending[entry] = _Pending(item, limits.json_bytes(item))
        self._schedule()

    def forget(self, entry: RunningTask) -> None:
        """The task ended: its unsent report goes nowhere."""
        self._pending.pop(entry, None)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pending.clear()

    def _schedule(self) -> None:
        """Wakes a second after the last flush began, unless a wake or a call is on its way."""
        if self._timer is not None or self._flushing is not None or not self._pending:
            return
        wait = max(0.0, self._flushed_at + PROGRESS_INTERVAL_SECONDS - time.monotonic())
        self._timer = asyncio.get_running_loop().call_later(wait, self._wake)

    def _wake(self) -> None:
        self._timer = None
        self._flushing = asyncio.ensure_future(self._flush())

    async def _flush(self) -> None:
        self._flushed_at = time.monotonic()
        try:
            due = [(entry, pending) for entry, pending in self._pending.items() if not entry.aborted]
            self._pending.clear()
            while due:
                await self._send_chunk(limits.take_within_budget(due, lambda p: p[1].bytes, limits.PROGRESS_PER_CALL))
        finally:
            self._flushing = None
            self._schedule()

    async def _send_chunk(self, chunk: list[tuple[RunningTask, _Pending]]) -> None:
        try:
            # Refused reports (a lease gone) are dropped: the heartbeats tell the Worker of the lease.
            await self._send([pending.item for _, pending in chunk])
        except Exception as error:  # noqa: BLE001 (a report is a hint: sent again, or dropped, never raised)
            if isinstance(error, AgentSchedulerError) and error.status == 404 and error.code != "TaskNotFound":
                self._unavailable = True
                self._pending.clear()
                self._report(RuntimeError(f"this deployment takes no progress reports; they are dropped: {error}"))
                return
            self._report(error)
            # Sent again a second later, unless a newer report took its place.
            for entry, pending in chunk:
                if not entry.aborted and entry not in self._pending:
                    self._pending[entry] = pending
