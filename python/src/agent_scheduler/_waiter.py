"""Waits for a task to end, for :meth:`Client.wait_for_task <agent_scheduler.Client.wait_for_task>`, as the
TypeScript SDK's ``task-waiter.ts``: on an operator connection of the push channel while it is up (the task watched
with a ``subscribe`` frame, its end pushed as a ``task`` frame, then read once), by reading the task with backoff
(0.25 s doubling to 5 s) while it is not.

The watch is recorded before the task is read, in the same server write, so a task that ends while the subscription
is made is either in the ``subscribed`` answer or pushed: nothing is missed, and nothing is polled while the socket is
up. A socket that drops loses its watch: the wait reads the task until a new one is open, then subscribes again.

The client's calls block, so each wait runs on an event loop of its own in the calling thread, with one connection
of its own (the TypeScript client shares one connection among the waits of a client).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any, Literal, TypeVar

from ._running import Backoff
from .errors import TaskWaitTimeoutError
from .push import PUSH_VERSION, TASK_ENDS, PushChannel, PushFrame, PushOptions, refused_for_good
from .types import PushTicket, Task, TaskProgress

T = TypeVar("T")
log = logging.getLogger("agent_scheduler.waiter")

#: Reads of a task while its wait polls: from 0.25 s, doubling, to 5 s.
POLL = (0.25, 5.0)
#: The first read waits this long for a connection still being opened, then polls.
FIRST_CONNECT_GRACE_SECONDS = 2.0
#: A ``subscribe`` frame unanswered this long: the wait reads the task meanwhile, until the answer comes.
SUBSCRIBE_REPLY_SECONDS = 5.0

_MISSING: Any = object()


def _ended(status: object) -> bool:
    return isinstance(status, str) and status in TASK_ENDS


class TaskWait:
    """One wait for one task (see the module's description): :meth:`run` answers the task once it has ended.

    ``get_task`` and ``ticket`` are the client's blocking calls (run on threads); ``push`` None reads with backoff
    only; ``on_progress`` hears each progress report, newest last, on the waiting thread.
    """

    def __init__(
        self,
        task_id: str,
        *,
        get_task: Callable[[str], Task],
        ticket: Callable[[], PushTicket],
        push: PushOptions | None,
        on_progress: Callable[[TaskProgress], None] | None = None,
    ) -> None:
        self.task_id = task_id
        self._get_task = get_task
        self._ticket = ticket
        self._push = push
        self._on_progress = on_progress
        #: ``polling``: reads the task; ``subscribing``: a subscribe frame awaits its answer; ``watching``: a push
        #: will come.
        self._mode: Literal["polling", "subscribing", "watching"] = "polling"
        self._last_status: str | None = None
        self._polling = False
        #: Ends the polling loop's current pause early.
        self._interrupt: asyncio.Event | None = None
        #: The pause is the first one, for a connection still being opened.
        self._in_grace = False
        #: When the last report handed to ``on_progress`` was taken: an older one is not handed again.
        self._progress_at: str | None = None
        self._channel: PushChannel | None = None
        #: Subscribe frames sent on the current connection and not yet answered, by frame id.
        self._pending: dict[str, asyncio.TimerHandle] = {}
        self._frame_ids = 0
        self._background: set[asyncio.Task[Any]] = set()
        self._result: asyncio.Future[Task] | None = None

    @property
    def _settled(self) -> bool:
        return self._result is None or self._result.done()

    async def run(self, timeout: float | None = None) -> Task:
        """The task once it has ended (``succeeded``, ``dead``, ``cancelled`` or ``expired``). Raises
        :class:`~agent_scheduler.errors.TaskWaitTimeoutError` after ``timeout`` seconds, the server's error for a
        task that does not exist or may not be read."""
        self._result = asyncio.get_running_loop().create_future()
        channel = self._open_channel()
        if channel is not None and channel.state != "unavailable":
            self._poll(FIRST_CONNECT_GRACE_SECONDS, grace=True)
        else:
            self._poll(0)
        try:
            if timeout is None:
                return await asyncio.shield(self._result)
            return await asyncio.wait_for(asyncio.shield(self._result), max(0.0, timeout))
        except asyncio.TimeoutError:
            raise TaskWaitTimeoutError(self.task_id, timeout or 0.0, self._last_status) from None
        finally:
            if not self._result.done():
                self._result.cancel()
            self._wake_pause()
            self._drop_pending()
            for task in list(self._background):
                task.cancel()
            if self._channel is not None:
                await self._channel.aclose()

    def _open_channel(self) -> PushChannel | None:
        if self._push is None:
            return None

        async def ticket() -> str:
            return (await asyncio.to_thread(self._ticket))["url"]

        channel = PushChannel(ticket, self._push)
        self._channel = channel

        def connected() -> None:
            # A new connection watches nothing yet: the wait subscribes again on it.
            self._drop_pending()
            self._subscribe()

        def disconnected() -> None:
            self._drop_pending()
            self._to_polling(POLL[0])

        def failure(_error: BaseException) -> None:
            # A failed first connect: a wait still in its grace reads the task now.
            if self._in_grace:
                self._wake_pause()

        def unavailable(_reason: BaseException) -> None:
            self._to_polling(0)

        channel.on("connected", connected)
        channel.on("disconnected", disconnected)
        channel.on("unavailable", unavailable)
        channel.on("failure", failure)
        channel.on("frame", self._heard)
        return channel.start()

    def _drop_pending(self) -> None:
        for timer in self._pending.values():
            timer.cancel()
        self._pending.clear()

    def _subscribe(self) -> None:
        """Watches the task on the open connection."""
        if self._settled:
            return
        self._mode = "subscribing"
        self._wake_pause()
        self._frame_ids += 1
        frame_id = f"w{self._frame_ids}"
        frame = {"type": "subscribe", "version": PUSH_VERSION, "id": frame_id, "taskIds": [self.task_id]}
        if self._channel is None or not self._channel.send(frame):
            self._to_polling(0)
            return

        def unanswered() -> None:
            # Unanswered for long: read meanwhile. A late answer still counts (the watch was recorded before it).
            self._pending.pop(frame_id, None)
            if self._mode == "subscribing":
                self._to_polling(0)

        self._pending[frame_id] = asyncio.get_running_loop().call_later(SUBSCRIBE_REPLY_SECONDS, unanswered)

    def _heard(self, frame: PushFrame) -> None:
        if frame["type"] == "subscribed":
            timer = self._pending.pop(frame["id"], None)
            if timer is None:
                return
            timer.cancel()
            if self._settled or self._mode == "watching":
                return
            statuses = {t["taskId"]: t["status"] for t in frame["tasks"]}
            status = statuses.get(self.task_id, _MISSING)
            self._mode = "watching"
            self._wake_pause()
            log.debug("watching task %s on the push channel (it was %s)", self.task_id, status)
            if isinstance(status, str):
                self._last_status = status
            # Ended already, or no such task (the read says which): read it. A watch of progress reads it once too,
            # for the report made before the watch.
            if status is None or _ended(status):
                self._spawn(self._read("end"))
            elif self._on_progress is not None:
                self._spawn(self._read("poll"))
        elif frame["type"] == "error":
            frame_id = frame.get("id")
            timer = self._pending.pop(frame_id, None) if frame_id is not None else None
            if timer is None:
                return
            timer.cancel()
            # Refused (a malformed id, say): reading the task tells what is wrong, or when it ends.
            if self._mode == "subscribing":
                self._to_polling(0)
        elif frame["type"] == "progress":
            if frame["taskId"] == self.task_id:
                self._progressed(frame["progress"])
        elif frame["type"] == "task" and frame["taskId"] == self.task_id:
            self._last_status = frame["status"]
            self._spawn(self._read("end"))

    def _progressed(self, progress: TaskProgress) -> None:
        """Hands a report to ``on_progress``, once, and never one older than the last it was given."""
        if self._on_progress is None or self._settled:
            return
        if self._progress_at is not None and progress["at"] <= self._progress_at:
            return
        self._progress_at = progress["at"]
        try:
            self._on_progress(progress)
        except Exception as error:  # noqa: BLE001 (a throwing listener must not end the wait)
            log.warning("on_progress failed: %s", error)

    def _to_polling(self, first_delay: float) -> None:
        if self._settled:
            return
        if self._mode != "polling":
            log.debug("reading task %s with backoff: the push channel does not watch it", self.task_id)
        self._mode = "polling"
        self._poll(first_delay)

    def _poll(self, first_delay: float, *, grace: bool = False) -> None:
        """Reads the task with backoff until it ended, the wait is over, or a connection watches it again."""
        self._mode = "polling"
        if self._polling:
            # The loop running reads at once when asked to.
            if first_delay == 0:
                self._wake_pause()
            return
        self._polling = True

        async def loop() -> None:
            backoff = Backoff(*POLL)
            # A first wait of the backoff's own minimum (after a drop) is its first step.
            if first_delay == POLL[0]:
                backoff.next()
            delay, first = first_delay, True
            try:
                while not self._settled and self._mode == "polling":
                    self._in_grace = first and grace
                    first = False
                    await self._pause(delay)
                    self._in_grace = False
                    if self._settled or self._mode != "polling":
                        break
                    delay = backoff.next()
                    await self._read("poll")
            finally:
                self._polling = False

        self._spawn(loop())

    async def _pause(self, seconds: float) -> None:
        if seconds <= 0:
            return
        woken = asyncio.Event()
        self._interrupt = woken
        try:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(woken.wait(), seconds)
        finally:
            if self._interrupt is woken:
                self._interrupt = None

    def _wake_pause(self) -> None:
        if self._interrupt is not None:
            self._interrupt.set()

    async def _read(self, after: Literal["end", "poll"]) -> None:
        """Reads the task: ended, the wait answers it; refused (no such task, no access), it raises that. After a push
        said it ended, a read that fails or finds it running again leaves the wait polling."""
        try:
            task = await asyncio.to_thread(self._get_task, self.task_id)
        except Exception as error:  # noqa: BLE001 (a refusal ends the wait; anything else is read again)
            if self._settled:
                return
            if refused_for_good(error):
                self._settle(error=error)
            elif after == "end":
                self._to_polling(POLL[0])
            return
        if self._settled:
            return
        self._last_status = task["status"]
        progress = task.get("progress")
        if progress is not None:
            self._progressed(progress)
        if _ended(task["status"]):
            self._settle(task=task)
        elif after == "end":
            # Running again (redriven meanwhile): watched anew, or read until it ends.
            if self._channel is not None and self._channel.connected:
                self._subscribe()
            else:
                self._to_polling(POLL[0])

    def _settle(self, *, task: Task | None = None, error: BaseException | None = None) -> None:
        if self._result is None or self._result.done():
            return
        if error is not None:
            self._result.set_exception(error)
        elif task is not None:
            self._result.set_result(task)
        self._wake_pause()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)


def run_blocking(work: Coroutine[Any, Any, T]) -> T:
    """Runs ``work`` on an event loop of its own in this thread and answers what it comes to. A call still on one of
    its threads when it ends (a read the timeout cut short) finishes there, unwaited for."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        work.close()
        raise RuntimeError("this call blocks: from async code, run it with `await asyncio.to_thread(...)`")
    loop = asyncio.new_event_loop()
    executor = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="agent-scheduler-wait")
    loop.set_default_executor(executor)
    try:
        return loop.run_until_complete(work)
    finally:
        try:
            left = asyncio.all_tasks(loop)
            for task in left:
                task.cancel()
            if left:
                loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            executor.shutdown(wait=False)
            loop.close()
