"""A Worker runs tasks for one agent: it opens a session, keeps it alive with heartbeats, claims up to
``concurrency`` tasks at a time and records each handler's outcome under the lease it was given.

The semantics are the TypeScript SDK's ``Worker``:

- Leases are reckoned on the agent's own (monotonic) clock from its own send times: the session is good until the
  send time of the last acknowledged heartbeat, claim or session open plus the lease TTL, less a margin; a task
  until the send time of its claim plus the attempt's length, less the margin. When the reckoning runs out, the
  handler is cancelled (``asyncio.CancelledError`` in an ``async def`` handler, ``ctx.cancelled`` set for a plain
  function), nothing more is sent about the task and calls about it still in flight are abandoned.
- A finished result is sent again with backoff for as long as that reckoning says the lease is good, then reported
  ``lost``; completions that finish while another completion call is in flight go together in the next call, as
  many as fit the body limit.
- A claim carries a claim id and number, the same on every attempt, so a claim whose answer was lost is answered
  by its retry with what it granted; a session open carries an open id and number the same way. A grant never
  heard of (the heartbeat names a task the worker does not run) is read back and given back.
- A busy worker carries its next claim on its completions (``claimNext``): a task finished and the next one taken in
  one call. A completion whose answer was lost leaves its claim unanswered, and the claim is sent again with its id
  (by the completion's retry, or on its own), so the server answers it with what it granted.
- On the push channel (``push``), an idle worker waits for a wake instead of polling, a cancel reaches its handler at
  once and a role grant brings a heartbeat; polling stays the fallback while the channel is down.
- Stopping drains: no new claims, running handlers finish (up to ``drain_timeout``), then what still runs is
  released. ``run()`` does so on SIGINT or SIGTERM; a second signal releases at once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import logging
import math
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, cast, overload

from . import limits
from ._ids import new_claim_id, new_open_id
from ._listeners import Listeners, call_listeners
from ._progress import ProgressReports, checked_item
from ._running import Abort, AbortReason, Backoff, LostReason, PendingCheckpoint, RunningTask
from ._tracing import in_task_span, with_trace_context
from ._worker_push import PushHost, WorkerPush
from .client import Client
from .errors import (
    AgentSchedulerError,
    LeaseLostError,
    NonRetryableError,
    SessionLostError,
    TaskError,
    error_for_response,
    is_refusal,
)
from .push import PushOptions
from .types import (
    BatchItemResult,
    CheckpointItem,
    ChildTaskSpec,
    ClaimedTask,
    ClaimRequest,
    ClaimResult,
    CompleteItem,
    CompleteRequest,
    FailError,
    FailRequest,
    HeartbeatRequest,
    HeartbeatResult,
    ProgressItem,
    ProgressItemResult,
    RoleLease,
    Session,
    SessionHoldings,
    WaitpointResult,
    WaitRequest,
    WaitResult,
)

if TYPE_CHECKING:
    from .roles import RoleSubscription

__all__ = ["Handler", "LostReason", "RoleContext", "RoleHandler", "Snooze", "Suspend", "TaskContext", "Worker"]

T = TypeVar("T")
log = logging.getLogger("agent_scheduler.worker")

#: How long a claim attempt may take: a grant made during it counts from its send time.
CLAIM_ATTEMPT_SECONDS = 10.0
#: Heartbeats in a row that must name a task this worker does not run before it asks the server what it holds.
UNKNOWN_HELD_BEATS = 2
#: Backoff between sends of a finished result whose call failed, while its lease lasts.
RESULT_RETRY = (0.1, 2.0)
#: How soon after a heartbeat the next goes when checkpoints were left out of it to stay under the body limit.
CHECKPOINT_FOLLOW_UP_SECONDS = 1.0


class Snooze(Exception):  # a request, raised or returned, rather than an error
    """What a handler returns (or raises) to put its task off for ``seconds`` without using an attempt."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"snoozed for {seconds} s")
        self.seconds = seconds


OnTimeout = Literal["resume", "fail"]
_UNSET: Any = object()


class Suspend(Exception):  # a request, raised or returned, rather than an error
    """What a handler returns (or raises) to suspend its task on a waitpoint (made by :meth:`TaskContext.suspend`,
    which checks its options)."""

    def __init__(
        self,
        timeout_seconds: int,
        *,
        on_timeout: OnTimeout | None = None,
        checkpoint: Any = _UNSET,
        on_suspended: Callable[[WaitResult], Awaitable[None] | None] | None = None,
    ) -> None:
        super().__init__(f"suspended for at most {timeout_seconds} s")
        self.timeout_seconds = timeout_seconds
        self.on_timeout: OnTimeout | None = on_timeout
        #: Saved on the task for the run that resumes it; unset, the handler's latest unsent checkpoint goes.
        self.checkpoint = checkpoint
        self.on_suspended = on_suspended

    def wait_request(self, lease_epoch: int, unsent_checkpoint: PendingCheckpoint | None) -> WaitRequest:
        """The body of the wait that carries out this suspension: its checkpoint, else the handler's latest one not
        yet sent (the heartbeats would not carry it once the lease has ended)."""
        body: WaitRequest = {"leaseEpoch": lease_epoch, "timeoutSeconds": self.timeout_seconds}
        if self.on_timeout is not None:
            body["onTimeout"] = self.on_timeout
        if self.checkpoint is not _UNSET:
            body["checkpoint"] = self.checkpoint
        elif unsent_checkpoint is not None:
            body["checkpoint"] = unsent_checkpoint.value
        return body


class TaskContext:
    """What a handler gets beside its task."""

    def __init__(self, worker: Worker, entry: RunningTask) -> None:
        self._worker = worker
        self._entry = entry
        #: Set when the lease is gone or the task handed back: a plain-function handler should stop and return.
        #: (An ``async def`` handler is cancelled instead.) Its result is then never sent.
        self.cancelled: threading.Event = entry.abort.event

    @property
    def task(self) -> ClaimedTask:
        return self._entry.task

    @property
    def lost_reason(self) -> AbortReason | None:
        """Why the handler was cancelled, once it was."""
        return self._entry.abort_reason

    @property
    def waitpoint(self) -> WaitpointResult | None:
        """How the waitpoint this task was last suspended on ended (``id``, ``outcome``: ``completed``,
        ``rejected`` or ``timedOut``, with ``data`` or ``reason``): set on the run that follows it, None otherwise."""
        return self._entry.task.get("waitpoint")

    @property
    def seconds_left(self) -> float:
        """Seconds left to the attempt by the agent's own reckoning (the lease margin already off)."""
        return max(0.0, self._entry.deadline - time.monotonic())

    def checkpoint(self, value: Any) -> None:
        """Records progress: a copy of the latest value goes with the next heartbeat and reaches the next holder on a
        retry. Raises, recording nothing, for a value over 16 KB of JSON (``ValueError``) or not JSON
        (``TypeError``). Safe from any thread."""
        self._entry.set_checkpoint(value)

    def progress(self, *, percent: float | None = None, message: str | None = None, data: Any = None) -> None:
        """Reports progress for people watching (``get_task(...)["progress"]``, the console): the latest report of
        each task goes out at most once a second, the reports of many tasks in one call. Raises, reporting nothing,
        for a report the server would refuse: none of the three given (``TypeError``), ``percent`` outside 0 to 100,
        a ``message`` over 1,024 characters or ``data`` over 16 KB of JSON (``ValueError``). Safe from any thread."""
        item = checked_item(self._entry, percent, message, data)
        self._worker.on_loop(lambda: self._worker.progress_reports.set(self._entry, item))

    @overload
    def usage(self, units: Mapping[str, float], /) -> None: ...
    @overload
    def usage(self, name: str, units: float, /) -> None: ...
    def usage(self, name_or_units: str | Mapping[str, float], units: float | None = None, /) -> None:
        """Adds units the attempt used, by the name of a rate limit the task takes (its ``rateLimits``): tokens a
        model call spent, dollars it cost. ``ctx.usage("tokens", 300)``, or several at once:
        ``ctx.usage({"tokens": 300, "dollars": 0.02})``. The totals go with the attempt's completion or failure and
        settle what its grant took (an estimate). All or nothing: raises, adding nothing, for a count that is not a
        number (``TypeError``), one outside 0 to 10^12 or a total past it, or a fifth limit (``ValueError``). Safe
        from any thread."""
        if isinstance(name_or_units, str):
            if units is None:
                raise TypeError("usage(name, units): the units are missing")
            self._entry.add_usage({name_or_units: units})
        else:
            if units is not None:
                raise TypeError("usage(units): a mapping of units by rate limit, or usage(name, units)")
            self._entry.add_usage(name_or_units)

    def heartbeat_now(self) -> None:
        """Sends a heartbeat now, with this task's latest checkpoint first; returns once the server has the beat
        (from a plain-function handler: it blocks)."""
        self._worker.run_on_loop(self.aheartbeat_now())

    async def aheartbeat_now(self) -> None:
        """:meth:`heartbeat_now` for an ``async def`` handler."""
        await self._worker.beat(self._entry)

    def extend_deadline(self, seconds: float) -> float:
        """Pushes the attempt's deadline forward: a heartbeat goes now asking that the attempt end no sooner than
        ``seconds`` (1 to 43,200) after the server has it, never past the task's ``maxTimeoutSeconds`` from its
        start. Returns the seconds left to the attempt by the agent's own reckoning, which its cancellation now
        follows (unchanged when the task declares no ``maxTimeoutSeconds``). Blocks (from a plain-function handler);
        raises when the heartbeat fails."""
        return self._worker.run_on_loop(self.aextend_deadline(seconds))

    async def aextend_deadline(self, seconds: float) -> float:
        """:meth:`extend_deadline` for an ``async def`` handler."""
        self._entry.ask_extension(seconds)
        await self._worker.beat(self._entry)
        return self.seconds_left

    def snooze(self, seconds: float) -> Snooze:
        """What a handler returns (or raises) to put the task off ``seconds`` (1 to 43,200) with no attempt used."""
        return Snooze(seconds)

    def suspend(
        self,
        timeout_seconds: float,
        *,
        on_timeout: OnTimeout | None = None,
        checkpoint: Any = _UNSET,
        on_suspended: Callable[[WaitResult], Awaitable[None] | None] | None = None,
    ) -> Suspend:
        """What a handler returns (or raises) to suspend its task on a waitpoint: the attempt ends (no attempt used),
        the lease goes, and the task is claimed again once the waitpoint is completed, rejected or times out after
        ``timeout_seconds`` (1 to 30 days, rounded up); that run's :attr:`waitpoint` says how it ended.

        ``on_timeout``: ``resume`` (the default: the outcome is ``timedOut``) or ``fail`` the task for good;
        ``checkpoint``: saved for the run that resumes (else the latest unsent ``ctx.checkpoint`` goes);
        ``on_suspended(result)``: called (on the event loop: it must not block; ``async def`` is awaited) once the
        task is suspended, with the waitpoint and the ``callbackUrl`` that completes it, to hand to whoever
        answers. Raises (``ValueError``, ``TypeError``) for options the server would refuse."""
        given = cast(object, timeout_seconds)  # checked as what a caller without type checks may pass
        if isinstance(given, bool) or not isinstance(given, (int, float)):
            raise TypeError("timeout_seconds: a number of seconds")
        if math.isnan(timeout_seconds) or not 0 < timeout_seconds <= limits.WAIT_SECONDS:
            raise ValueError(f"timeout_seconds: more than 0 and at most {limits.WAIT_SECONDS} (30 days)")
        if on_timeout not in (None, "resume", "fail"):
            raise ValueError("on_timeout: 'resume' or 'fail'")
        if checkpoint is not _UNSET:
            size = limits.json_bytes(checkpoint)
            if size > limits.CHECKPOINT_BYTES:
                raise ValueError(
                    f"a checkpoint is {size} bytes of JSON; the server takes at most {limits.CHECKPOINT_BYTES}"
                )
        return Suspend(
            math.ceil(timeout_seconds), on_timeout=on_timeout, checkpoint=checkpoint, on_suspended=on_suspended
        )

    def submit(self, children: Sequence[ChildTaskSpec]) -> list[BatchItemResult]:
        """Submits follow-up tasks of this one, fenced by its lease (from a plain-function handler: it blocks)."""
        entry = self._entry
        return self._worker.client.submit_children(
            entry.task_id, entry.task["leaseEpoch"], with_trace_context(children), abandon=entry.abort.event
        )

    async def asubmit(self, children: Sequence[ChildTaskSpec]) -> list[BatchItemResult]:
        """:meth:`submit` for an ``async def`` handler."""
        entry = self._entry
        # The handler's span is current here, not in the thread the call is made from.
        traced = with_trace_context(children)
        return await self._worker.io(
            lambda abandon: self._worker.client.submit_children(
                entry.task_id, entry.task["leaseEpoch"], traced, abandon=abandon
            ),
            entry.abort,
        )


@dataclass(frozen=True)
class RoleContext:
    """What a role handler gets: the role, the epoch of this grant (present it downstream to fence work done in the
    role) and an event set when the role is lost or given up (an ``async def`` handler is cancelled instead)."""

    role: str
    lease_epoch: int
    cancelled: threading.Event


RoleHandler = Callable[[RoleContext], "Awaitable[None] | None"]
"""Runs while the agent holds a role, typically until cancelled. Returning (or raising) gives the role up; the worker
then volunteers again, behind the other candidates. A plain function runs on a thread of its own."""

Handler = Callable[[ClaimedTask, TaskContext], "Awaitable[Any] | Any"]
"""Runs one task; its return value (JSON) is the result, an exception fails the attempt (retryably unless its
``retryable`` attribute is False), a :class:`Snooze` returned or raised, or an exception with a numeric
``retry_after_seconds``, snoozes it; a :class:`Suspend` returned or raised suspends it on a waitpoint."""

Event = Literal[
    "session",
    "session_lost",
    "picked",
    "completed",
    "failed",
    "released",
    "snoozed",
    "suspended",
    "lost",
    "heartbeat",
    "got_role",
    "lost_role",
    "error",
]


class RoleFollower(Protocol):
    """What a role followed on a Worker's session hears of it (see :class:`~agent_scheduler.RoleSubscription`). Called
    on the event loop; must not block."""

    def session_opened(self, session: Session) -> None: ...
    def heartbeat_answered(self, result: HeartbeatResult, session: Session) -> None: ...
    def holdings_read(self, holdings: SessionHoldings, session: Session) -> None: ...
    def session_ended(self, session: Session) -> None: ...
    async def release(self) -> None: ...


@dataclass
class _PendingClaim:
    id: str
    seq: int
    sent_at: float
    session_id: str


@dataclass(frozen=True)
class _CarriedClaim:
    """A claim a completion call carries (:meth:`Worker._carry`): what to send, and where its answer goes (None: no
    answer came, and the claim is sent again with its id)."""

    body: ClaimRequest
    answered: Callable[[ClaimResult | None], None]


@dataclass(frozen=True)
class _Carried:
    """The answer of a claim a completion carried, for the claim loop to take as its own."""

    pending: _PendingClaim
    claimed: ClaimResult
    session_id: str


@dataclass
class _Completion:
    item: CompleteItem
    bytes: int
    entry: RunningTask
    settled: asyncio.Future[None]


def _is_revoked(error: BaseException) -> bool:
    return isinstance(error, AgentSchedulerError) and error.code == "AgentRevoked"


def _lease_gone(error: BaseException) -> bool:
    """The server answers a task whose lease went to another agent as it answers a task that does not exist."""
    return isinstance(error, (LeaseLostError, SessionLostError)) or (
        isinstance(error, AgentSchedulerError) and error.code == "TaskNotFound"
    )


def describe_failure(error: BaseException) -> FailError:
    """The ``error`` of a fail call: a non-empty message within the server's limit, and whether to try again."""
    message = (str(error) or type(error).__name__ or "the handler failed")[: limits.ERROR_MESSAGE_CHARS]
    return {"message": message, "retryable": getattr(error, "retryable", True) is not False}


def snooze_of(ok: bool, value: Any) -> int | None:
    """Whole seconds a handler asked its task to be put off, within the server's bounds; None otherwise."""
    seconds = value.seconds if isinstance(value, Snooze) else None
    if seconds is None and not ok:
        seconds = getattr(value, "retry_after_seconds", None)
    if not isinstance(seconds, (int, float)) or math.isnan(seconds):
        return None
    return int(min(limits.SNOOZE_SECONDS, max(1, -(-seconds // 1))))


class Worker:
    """Runs ``handler`` for the tasks one agent claims. See the module's description for what it guarantees.

    Without a ``handler`` it claims nothing: it keeps a session for the roles that ride on it (``RoleSubscription``).
    ``roles``: roles to hold, each with its handler: the worker volunteers for each, and runs its handler while it
    holds the role.

    ``concurrency``: tasks at once (the server also caps it at the agent's ``maxConcurrency``); ``queues``: claim
    from these of the agent's queues only; ``labels``: narrow the agent's labels for its sessions;
    ``poll_interval``: the idle wait between empty claims, from ``min`` doubling to ``max`` seconds (the server's
    suggestion wins); ``lease_margin``: seconds taken off every lease (default 1 s, or a fifth of a short TTL);
    ``drain_timeout``: the longest a stop waits for running handlers; ``push``: the push channel (True: with the
    default :class:`~agent_scheduler.PushOptions`): while its socket is up an idle worker waits for a wake (or the
    server's slow safety poll) instead of polling, hears cancels and role grants at once; False polls only.
    """

    def __init__(
        self,
        client: Client,
        handler: Handler | None,
        *,
        concurrency: int = 1,
        queues: Sequence[str] | None = None,
        labels: Mapping[str, str | Sequence[str]] | None = None,
        poll_interval: tuple[float, float] = (0.2, 5.0),
        lease_margin: float | None = None,
        drain_timeout: float = 30.0,
        roles: Mapping[str, RoleHandler] | None = None,
        push: bool | PushOptions = True,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {concurrency}")
        if lease_margin is not None and lease_margin < 0:
            raise ValueError(f"lease_margin must be 0 or more, not {lease_margin}")
        self.client = client
        self._handler = handler
        self._async_handler = inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
            getattr(handler, "__call__", None)  # noqa: B004 (a callable object's own method)
        )
        self._concurrency = concurrency
        self._queues = list(queues) if queues is not None else None
        self._labels = labels
        self._poll = poll_interval
        Backoff(*poll_interval)  # checks the bounds now
        self._margin = lease_margin
        self._drain_timeout = drain_timeout
        self._role_handlers = dict(roles or {})
        #: Role handlers running now, each with the abort that ends it.
        self._role_runs: dict[asyncio.Task[None], Abort] = {}
        self._listeners: Listeners = {}
        self._state: Literal["idle", "running", "stopping", "stopped"] = "idle"
        self._session: Session | None = None
        self._session_abort = Abort()
        self._valid_until = 0.0
        self._session_timer: asyncio.TimerHandle | None = None
        self._tasks: set[RunningTask] = set()
        self._stop = Abort()
        self._force = Abort()
        self._stopped = Abort()
        self._room: asyncio.Event | None = None
        self._reopening: asyncio.Task[Session | None] | None = None
        self._claim_loop: asyncio.Task[None] | None = None
        self._beats: asyncio.Task[None] | None = None
        self._beat_lock: asyncio.Lock | None = None
        self._beat_soon = False
        self._stopping: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        # Claims of the session: one awaiting its answer, their number, how many were sent.
        self._pending_claim: _PendingClaim | None = None
        self._claim_seq = 0
        self._claiming = False
        self._claims_sent = 0
        self._idle_claims = 0
        #: The answer of a claim a completion carried, for the loop to take as its own.
        self._carried: _Carried | None = None
        #: A wake for one of this worker's queues (or a change of the channel) came since the last claim was sent:
        #: the next idle wait ends at once. Cleared as a claim is sent, so a wake during one counts.
        self._nudged = False
        self._idle_ended: asyncio.Event | None = None
        # Grants never heard of.
        self._unknown_held: dict[str, int] = {}
        self._reconcile_needed = False
        self._given_back: set[str] = set()
        # Completions grouped into as few calls as the server takes.
        self._completions: list[_Completion] = []
        self._sending = False
        # Calls (their threads outlive an abandoned call) and sync handlers each have threads of their own.
        self._io_pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=8 + 2 * concurrency, thread_name_prefix="agent-scheduler-io"
        )
        self._handler_pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=concurrency, thread_name_prefix="agent-scheduler-task"
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Roles followed on this worker's session: they hear of it, keep it beating and are given up on stop.
        self._followers: list[RoleFollower] = []
        #: Each running task's latest progress report, sent at most once a second for all of them.
        self.progress_reports = ProgressReports(self._send_progress, self._report)
        self._push = WorkerPush(
            PushHost(
                queues=self._queues,
                running=lambda: self._state == "running",
                has_session=lambda: self._session is not None,
                nudge=self._nudge,
                beat=lambda: self._spawn(self._beat_quietly()),
                cancelled=lambda task_id, epoch: self._abort_task(self._find(task_id, None, epoch), "cancelled"),
                ticket=self._push_url,
            ),
            None if push is False else PushOptions() if push is True else push,
        )

    # Public

    def on(self, event: Event, listener: Callable[..., Any]) -> None:
        """Calls ``listener`` on ``event``: ``picked(task)``, ``completed(task, result)``, ``failed(task, error)``,
        ``released(task)``, ``snoozed(task, seconds)``, ``suspended(task, wait_result)``, ``lost(task, reason)``,
        ``session(session)``, ``session_lost(session)``, ``heartbeat(result)``, ``got_role(lease)``,
        ``lost_role(lease, reason)`` (the worker's own ``roles``), ``error(exception)``. Listeners run on the event
        loop and must not block."""
        self._listeners.setdefault(event, []).append(listener)

    @property
    def in_flight(self) -> int:
        """Handlers running now, including cancelled ones that have not returned yet."""
        return len(self._tasks)

    @property
    def session_id(self) -> str | None:
        """The live session's id; None between sessions."""
        return self._session["sessionId"] if self._session else None

    @property
    def listening(self) -> bool:
        """Whether the push channel's socket is up now: claims say ``listening``, and an idle wait ends at a wake."""
        return self._push.listening

    @property
    def stopped(self) -> bool:
        return self._state == "stopped"

    @property
    def started(self) -> bool:
        """Whether :meth:`start` was called."""
        return self._state != "idle"

    def follow(self, follower: RoleFollower) -> Callable[[], None]:
        """Lets a role ride on this worker's session (it keeps the session beating, hears of it, and is given up
        when the worker stops); returns the call that stops following."""
        self._followers.append(follower)

        def unfollow() -> None:
            if follower in self._followers:
                self._followers.remove(follower)

        return unfollow

    async def start(self) -> None:
        """Opens a session, then heartbeats and claims in the background. Raises if the first session cannot open."""
        if self._state != "idle":
            raise RuntimeError("a Worker can be started once")
        self._state = "running"
        self._loop = asyncio.get_running_loop()
        self._room = asyncio.Event()
        self._beat_lock = asyncio.Lock()
        sent_at = time.monotonic()
        try:
            session = await self.io(lambda _: self.client.open_session(labels=self._labels))
        except BaseException:
            self._state = "stopped"
            self._stopped.set()
            raise
        if self._state != "running":
            return
        self._use_session(session, sent_at)
        self._push.open()
        for role, role_handler in self._role_handlers.items():
            self._hold_role(role, role_handler)
        if self._handler is not None:
            self._claim_loop = asyncio.create_task(self._claims())

    async def stop(self, *, drain: bool = True) -> None:
        """Stops claiming, then lets running handlers finish (``drain``, up to ``drain_timeout``) or cancels them
        and releases their tasks. Called again with ``drain=False`` while draining, releases what still runs."""
        if self._stopping is not None:
            if not drain:
                self._force.set()
            await asyncio.shield(self._stopping)
            return
        if self._state != "running":
            self._state = "stopped"
            self._stopped.set()
            return
        self._state = "stopping"
        self._stop.set()
        self._push.close()
        if not drain:
            self._force.set()
        self._wake_claims()
        if self._idle_ended is not None:
            self._idle_ended.set()
        self._stopping = asyncio.create_task(self._shutdown())
        await asyncio.shield(self._stopping)

    async def serve(self, *, handle_signals: bool = True) -> None:
        """Starts, then runs until stopped; with ``handle_signals``, SIGINT and SIGTERM drain (a second releases)."""
        loop = asyncio.get_running_loop()
        installed: list[signal.Signals] = []
        if handle_signals:
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.add_signal_handler(sig, self._on_signal, sig)
                    installed.append(sig)
        try:
            await self.start()
            waiter = self._stopped.future()
            await waiter
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)

    def run(self) -> None:
        """Runs the worker in a new event loop until SIGINT or SIGTERM has drained it."""
        asyncio.run(self.serve())

    # Calls on threads

    async def io(self, call: Callable[[threading.Event | None], T], *aborts: Abort) -> T:
        """Runs a blocking client call on the worker's threads; abandoned (an ``Aborted`` error) once one of
        ``aborts`` is set, whatever the network is doing."""
        loop = asyncio.get_running_loop()
        combined = Abort.any(aborts) if aborts else None
        future = loop.run_in_executor(self._io_pool, call, combined.event if combined else None)
        if combined is None:
            return await future
        stop = combined.future()
        try:
            await asyncio.wait({future, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            combined.forget(stop)
            combined.detach()
            # Abandoned, or its caller cancelled (a heartbeat of a session just lost): what the call comes to is
            # nobody's, and not worth a warning.
            future.add_done_callback(lambda f: f.cancelled() or f.exception())
        if future.done() and not combined.is_set():
            return future.result()
        raise AgentSchedulerError(
            0, "Aborted", "the call was abandoned: the lease it was about is over by the agent's own reckoning"
        )

    def on_loop(self, call: Callable[[], None]) -> None:
        """Runs ``call`` on the worker's event loop: now when called there, soon when called from another thread."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        if _running_loop() is loop:
            call()
        else:
            loop.call_soon_threadsafe(call)

    def run_on_loop(self, work: Awaitable[T]) -> T:
        """Runs ``work`` on the worker's event loop and waits for it, from a plain-function handler's thread."""
        loop = self._loop
        if loop is None or _running_loop() is loop:
            if inspect.iscoroutine(work):
                work.close()
            raise RuntimeError("this call blocks: from an async def handler, await its a… twin instead")
        return asyncio.run_coroutine_threadsafe(_awaited(work), loop).result()

    async def beat(self, first: RunningTask | None = None) -> None:
        """A heartbeat now (after the one in flight, if any), with ``first``'s checkpoint first."""
        await self._beat(first)

    async def _push_url(self) -> str:
        """The URL of a fresh agent push ticket, asked for on the worker's threads (abandoned when it stops)."""
        timeout = self._attempt_timeout()
        ticket = await self.io(
            lambda abandon: self.client.push_ticket("agent", timeout=timeout, abandon=abandon), self._stop
        )
        return ticket["url"]

    async def _beat_quietly(self) -> None:
        """A heartbeat now, for a role grant pushed: a failure is dealt with as any beat's (and the next one tries
        again)."""
        with contextlib.suppress(Exception):
            await self._beat()

    async def _send_progress(self, items: list[ProgressItem]) -> list[ProgressItemResult]:
        timeout = self._attempt_timeout()
        return await self.io(
            lambda abandon: self.client.report_progress_batch(items, timeout=timeout, abandon=abandon),
            self._session_abort,
        )

    # Session

    def _margin_for(self, session: Session) -> float:
        return self._margin if self._margin is not None else min(1.0, session["leaseTtlSeconds"] / 5)

    def _use_session(self, session: Session, sent_at: float) -> None:
        self._session = session
        self._session_abort = Abort()
        self._valid_until = 0.0
        self._pending_claim = None
        self._carried = None
        self._claim_seq = 0
        self._unknown_held.clear()
        self._given_back.clear()
        self._reconcile_needed = False
        self._acknowledged(session, sent_at)
        log.info("session opened: %s", session["sessionId"])
        self._emit("session", session)
        self._tell_followers(lambda f: f.session_opened(session))
        self._beats = asyncio.create_task(self._beat_every(session))
        self._wake_claims()

    def _acknowledged(self, session: Session, sent_at: float) -> None:
        """The server extended the session in answer to a request sent at ``sent_at``: the reckoning moves on."""
        if self._session is not session:
            return
        valid_until = sent_at + session["leaseTtlSeconds"] - self._margin_for(session)
        if valid_until <= self._valid_until:
            return
        self._valid_until = valid_until
        if self._session_timer is not None:
            self._session_timer.cancel()
        loop = asyncio.get_running_loop()
        self._session_timer = loop.call_later(
            max(0.0, valid_until - time.monotonic()), self._session_lapsed, session
        )

    def _session_lapsed(self, session: Session) -> None:
        """Over by the agent's own reckoning: holding nothing, that is fine (the claim that gives it work extends
        it); holding tasks, their handlers are cancelled now, before the server can give their work away."""
        if self._session is not session or not self._holds_anything():
            return
        log.warning("session %s over by the agent's own reckoning", session["sessionId"])
        self._session_lost(session, "expired")

    def _holds_anything(self) -> bool:
        """Tasks, roles, or someone listening for heartbeats: the session must stay live."""
        return (
            any(not entry.aborted for entry in self._tasks)
            or bool(self._followers)
            or bool(self._listeners.get("heartbeat"))
        )

    def _tell_followers(self, call: Callable[[RoleFollower], None]) -> None:
        for follower in list(self._followers):
            try:
                call(follower)
            except Exception as error:  # noqa: BLE001 (one role's failure must not break the loops)
                self._report(error)

    def _session_lost(self, session: Session, reason: LostReason = "session") -> None:
        if self._session is not session:
            return
        self._session = None
        if self._beats is not None:
            self._beats.cancel()
        if self._session_timer is not None:
            self._session_timer.cancel()
        # Nothing more is sent under it: calls in flight (results included) are abandoned.
        self._session_abort.set()
        log.warning("session %s lost (%s)", session["sessionId"], reason)
        self._emit("session_lost", session)
        self._tell_followers(lambda f: f.session_ended(session))
        for entry in list(self._tasks):
            if entry.session_id == session["sessionId"]:
                self._abort_task(entry, reason)
        if self._state == "running":
            self._reopening = asyncio.create_task(self._reopen())

    async def _reopen(self) -> Session | None:
        backoff = Backoff(*self._poll)
        # One open, however many tries: a try whose answer was lost, or that arrives late, is answered with the
        # session another try opened instead of ending it.
        open_id = new_open_id()
        while self._state == "running":
            sent_at = time.monotonic()
            try:
                session = await self.io(lambda _: self.client.open_session(open_id=open_id, labels=self._labels))
            except Exception as error:  # noqa: BLE001 (every failure is waited out, or stops a revoked agent)
                if _is_revoked(error):
                    self._revoked(error)
                    return None
                self._report(error)
                await self._stop.sleep(backoff.next())
                continue
            if self._state != "running":
                return None
            self._use_session(session, sent_at)
            return session
        return None

    def _revoked(self, error: BaseException) -> None:
        self._report(error)
        if self._state != "running":
            return
        log.error("the agent was revoked; stopping")
        if self._session is not None:
            self._session_lost(self._session)
        self._spawn(self.stop(drain=False))

    # Heartbeats

    async def _beat_every(self, session: Session) -> None:
        interval = float(session["heartbeatIntervalSeconds"])
        while self._session is session:
            wait = min(CHECKPOINT_FOLLOW_UP_SECONDS, interval) if self._beat_soon else interval
            self._beat_soon = False
            await asyncio.sleep(wait)
            if self._session is not session:
                return
            # Holding nothing, there is nothing to keep alive: an idle agent costs no heartbeats.
            if self._holds_anything() or self._beat_soon:
                with contextlib.suppress(Exception):
                    await self._beat()

    def _checkpoints_to_send(
        self, session: Session, first: RunningTask | None = None
    ) -> tuple[list[PendingCheckpoint], bool]:
        pending = [
            p
            for entry in self._tasks
            if not entry.aborted and entry.session_id == session["sessionId"]
            for p in [entry.pending_checkpoint()]
            if p is not None
        ]
        # ``first``'s (a beat its handler asked for), then the longest waiting, so none starves.
        pending.sort(key=lambda p: (p.entry is not first, p.since))
        if pending and pending[0].alone:
            carried = [pending[0]]
        else:
            carried = limits.take_within_budget(
                [p for p in pending if not p.alone],
                # Each goes as {"taskId":…,"leaseEpoch":…,"checkpoint":…}.
                lambda p: p.bytes + len(p.entry.task_id) + len(str(p.entry.task["leaseEpoch"])) + 44,
                limits.CHECKPOINTS_PER_HEARTBEAT,
            )
        return carried, len(carried) < len(pending)

    async def _beat(self, first: RunningTask | None = None) -> None:
        """One heartbeat at a time, carrying the checkpoints waiting, as many as its body has room for (``first``'s
        first), and the deadline extensions asked for."""
        assert self._beat_lock is not None
        async with self._beat_lock:
            session = self._session
            if session is None:
                raise SessionLostError(409, "SessionLost", "the worker has no live session")
            carried, left_over = self._checkpoints_to_send(session, first)
            extensions = [
                (entry, entry.extension_asked)
                for entry in self._tasks
                if entry.extension_asked is not None
                and not entry.aborted
                and entry.session_id == session["sessionId"]
            ]
            sent_at = time.monotonic()
            timeout = max(0.1, min(float(session["heartbeatIntervalSeconds"]), self._valid_until - sent_at))

            async def send(checkpoints: list[PendingCheckpoint]) -> HeartbeatResult:
                body: HeartbeatRequest = {"sessionId": session["sessionId"]}
                if extensions:
                    body["extend"] = [
                        {"taskId": entry.task_id, "leaseEpoch": entry.task["leaseEpoch"], "seconds": seconds}
                        for entry, seconds in extensions
                    ]
                if checkpoints:
                    body["checkpoints"] = [
                        cast(
                            CheckpointItem,
                            {
                                "taskId": p.entry.task_id,
                                "leaseEpoch": p.entry.task["leaseEpoch"],
                                "checkpoint": p.value,
                            },
                        )
                        for p in checkpoints
                    ]
                return await self.io(
                    lambda abandon: self.client.heartbeat(body, timeout=timeout, abandon=abandon), self._session_abort
                )

            try:
                try:
                    result, landed = await send(carried), carried
                except AgentSchedulerError as error:
                    # A beat refused whole for its checkpoints goes again at once without them: a checkpoint never
                    # lets the session lapse. One refused alone is reported and dropped; several go alone later.
                    if not carried or not is_refusal(error):
                        raise
                    if len(carried) == 1:
                        carried[0].entry.acknowledge_checkpoint(carried[0].version)
                        self._report(TaskError(carried[0].entry.task_id, f"its checkpoint was refused: {error}"))
                    else:
                        for p in carried:
                            p.entry.send_checkpoint_alone = True
                    self._beat_soon = True
                    result, landed = await send([]), []
            except Exception as error:
                self._beat_failed(session, error)
                raise
            self._acknowledged(session, sent_at)
            self._emit("heartbeat", result)
            self._tell_followers(lambda f: f.heartbeat_answered(result, session))
            for p in landed:
                p.entry.acknowledge_checkpoint(p.version)
            for entry, seconds in extensions:
                moved = next(
                    (
                        e
                        for e in result.get("extended", [])
                        if e["taskId"] == entry.task_id and e["leaseEpoch"] == entry.task["leaseEpoch"]
                    ),
                    None,
                )
                # Absent: the lease is over (the answer's lost leases say so), or a server older than extensions.
                if entry.extended(sent_at, moved["seconds"] if moved else 0.0, seconds):
                    self._arm_deadline(entry)
            if left_over:
                self._beat_soon = True
            self._heard(session, result)

    def _beat_failed(self, session: Session, error: BaseException) -> None:
        if isinstance(error, SessionLostError):
            self._session_lost(session)
        elif _is_revoked(error):
            self._revoked(error)
        elif self._session is session:
            # Its answer may have been lost, notices with it: ask what the session holds once a beat gets through.
            self._reconcile_needed = True
            self._report(error)

    def _heard(self, session: Session, result: HeartbeatResult) -> None:
        """What a heartbeat's answer says: tasks cancelled or lost (each lease by its epoch), what is held."""
        for task_id in result.get("cancelled", []):
            self._abort_task(self._find(task_id, session["sessionId"]), "cancelled")
        for lost in result.get("lostLeases", []):
            self._abort_task(self._find(lost["taskId"], session["sessionId"], lost["leaseEpoch"]), "lost")
        self._notice_held(session, result.get("held", []))

    # Grants never heard of

    def _notice_held(self, session: Session, held: Iterable[str]) -> None:
        known = {entry.task_id for entry in self._tasks}
        unknown = [task_id for task_id in held if task_id not in known]
        for task_id in list(self._unknown_held):
            if task_id not in unknown:
                del self._unknown_held[task_id]
        for task_id in unknown:
            self._unknown_held[task_id] = self._unknown_held.get(task_id, 0) + 1
        due = any(beats >= UNKNOWN_HELD_BEATS for beats in self._unknown_held.values()) and not self._claiming
        if not due and not self._reconcile_needed:
            return
        self._reconcile_needed = False
        self._unknown_held.clear()
        self._spawn(self._reconcile(session))

    async def _reconcile(self, session: Session) -> None:
        """Reads what the session holds and gives back what this worker does not run (never running it later)."""
        sent_before = self._claims_sent
        holdings = await self.io(lambda abandon: self.client.get_session(abandon=abandon), self._session_abort)
        if holdings["sessionId"] != session["sessionId"] or self._session is not session:
            return
        # A role grant whose notice was lost shows here.
        self._tell_followers(lambda f: f.holdings_read(holdings, session))
        # A grant of a claim still open shows in the read before its answer: look again at the next beat.
        if self._claiming or self._pending_claim is not None or self._claims_sent != sent_before:
            self._reconcile_needed = True
            return
        known = {entry.task_id for entry in self._tasks}
        for held in holdings["tasks"]:
            if held["taskId"] in known:
                continue
            self._given_back.add(f"{held['taskId']}:{held['leaseEpoch']}")
            log.warning("giving back task %s, whose grant was never heard of", held["taskId"])
            await self._give_back(held["taskId"], held["leaseEpoch"])

    async def _give_back(self, task_id: str, lease_epoch: int) -> None:
        try:
            await self.io(
                lambda abandon: self.client.release(task_id, {"leaseEpoch": lease_epoch}, abandon=abandon),
                self._session_abort,
            )
        except Exception as error:  # noqa: BLE001 (reported unless the lease is gone anyway)
            if not _lease_gone(error):
                self._report(TaskError(task_id, f"could not be given back: {error}"))

    # Claims

    def _wake_claims(self) -> None:
        """Room for a task was made, a session opened, or the worker stops: a loop waiting for either goes on."""
        if self._room is not None:
            self._room.set()

    def _nudge(self) -> None:
        """Ends the idle wait now, or the next one if the loop is not waiting (a wake, the channel changing)."""
        self._nudged = True
        if self._idle_ended is not None:
            self._idle_ended.set()

    async def _idle_wait(self, seconds: float) -> None:
        """The wait between an empty claim and the next: ``seconds``, or less when nudged or stopped."""
        if seconds <= 0 or self._nudged or self._state != "running":
            return
        ended = asyncio.Event()
        self._idle_ended = ended
        try:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(ended.wait(), seconds)
        finally:
            if self._idle_ended is ended:
                self._idle_ended = None

    async def _claims(self) -> None:
        idle = Backoff(*self._poll)
        while self._state == "running":
            session = self._session
            if session is None:
                if self._reopening is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.shield(self._reopening)
                if self._session is None:
                    await self._stop.sleep(idle.next())
                continue
            free = self._concurrency - len(self._tasks)
            # A claim a completion carries is this loop's too: none is sent beside it.
            if free <= 0 or self._claiming:
                assert self._room is not None
                self._room.clear()
                await self._room.wait()
                continue
            answered = self._take_carried(session) or await self._send_claim(session, free, idle)
            if answered is None:
                continue
            pending, claimed = answered
            if self._state != "running" or self._session is not session:
                await self._hand_back(claimed["tasks"], session)
                continue
            for task in claimed["tasks"]:
                if f"{task['taskId']}:{task['leaseEpoch']}" in self._given_back:
                    self._given_back.discard(f"{task['taskId']}:{task['leaseEpoch']}")
                else:
                    self._run(task, session, pending.sent_at)
            if claimed["tasks"]:
                idle.reset()
                self._idle_claims = 0
                # The claim extended the session on the server, after it was first sent.
                self._acknowledged(session, pending.sent_at)
                if time.monotonic() >= self._valid_until:
                    self._session_lapsed(session)
                continue
            self._idle_claims += 1
            # The server's suggestion wins: its operator sets what idle polling may cost. To a listening worker it is
            # its slow safety poll, and a wake ends the wait first.
            after = claimed.get("retryAfterMs")
            await self._idle_wait(after / 1000 if after is not None else idle.next())
        # The answer of a claim a completion carried that the loop did not take: its tasks go back.
        left, self._carried = self._carried, None
        session = self._session
        if left is not None and session is not None and session["sessionId"] == left.session_id:
            await self._hand_back(left.claimed["tasks"], session)

    async def _hand_back(self, tasks: Sequence[ClaimedTask], session: Session) -> None:
        """Tasks a claim brought after a stop began: back to their queue, unless their session is already gone."""
        if self._session is not session:
            return
        for task in tasks:
            await self._give_back(task["taskId"], task["leaseEpoch"])

    def _begin_claim(self, session: Session) -> _PendingClaim:
        """A claim of the session as this worker makes it now: a new one, or the one whose answer never came."""
        # A claim whose answer never came is sent again with its id, number and first send time: the server answers
        # it with what it granted instead of leasing more this worker would never hear of.
        pending = self._pending_claim
        if pending is None or pending.session_id != session["sessionId"]:
            self._claim_seq += 1
            pending = _PendingClaim(new_claim_id(), self._claim_seq, time.monotonic(), session["sessionId"])
        self._pending_claim = pending
        self._claiming = True
        self._claims_sent += 1
        # A wake from now on is news this claim may not have seen.
        self._nudged = False
        return pending

    def _claim_body(self, session: Session, free: int, pending: _PendingClaim) -> ClaimRequest:
        body: ClaimRequest = {
            "sessionId": session["sessionId"],
            "max": min(free, limits.TASKS_PER_CLAIM),
            "idleClaims": self._idle_claims,
            "claimId": pending.id,
            "claimSeq": pending.seq,
        }
        if self._queues is not None:
            body["queues"] = self._queues
        if self._push.listening:
            body["listening"] = True
        return body

    def _take_carried(self, session: Session) -> tuple[_PendingClaim, ClaimResult] | None:
        """The answer of a claim a completion carried, taken once, if it was made under ``session``."""
        carried, self._carried = self._carried, None
        if carried is None or carried.session_id != session["sessionId"]:
            return None
        return carried.pending, carried.claimed

    def _carry(self, freed: int) -> _CarriedClaim | None:
        """The claim a completion about to be sent may carry, so a busy worker finishes a task and takes its next in
        one call: one while the worker is full and so waits for room (the completion makes ``freed`` slots of it),
        none beside a claim in flight, nor before the loop has taken the answer of the last one carried. Its answer,
        or None if none came (the claim is then sent again with its id), goes to ``answered`` before the completion
        settles."""
        session = self._session
        room = self._concurrency - len(self._tasks)
        free = 0 if self._claiming or self._carried is not None or room > 0 else room + freed
        if session is None or self._state != "running" or self._handler is None or free <= 0:
            return None
        pending = self._begin_claim(session)
        body = self._claim_body(session, free, pending)

        def answered(claimed: ClaimResult | None) -> None:
            self._claiming = False
            if claimed is not None and self._pending_claim is pending:
                self._pending_claim = None
                # The loop takes it, unless the worker stops: then nothing will, and its tasks go back.
                if self._state == "running":
                    self._carried = _Carried(pending, claimed, session["sessionId"])
                else:
                    self._spawn(self._hand_back(claimed["tasks"], session))
            self._wake_claims()

        return _CarriedClaim(body, answered)

    async def _send_claim(
        self, session: Session, free: int, idle: Backoff
    ) -> tuple[_PendingClaim, ClaimResult] | None:
        """Sends a claim on its own: its answer, or None once what went wrong is dealt with."""
        pending = self._begin_claim(session)
        body = self._claim_body(session, free, pending)
        timeout = min(CLAIM_ATTEMPT_SECONDS, session["leaseTtlSeconds"] / 2)
        try:
            claimed = await self.io(
                lambda abandon: self.client.claim(body, timeout=timeout, abandon=abandon), self._session_abort
            )
        except Exception as error:  # noqa: BLE001 (each failure is dealt with here)
            if isinstance(error, SessionLostError):
                self._session_lost(session)
            elif _is_revoked(error):
                self._revoked(error)
            else:
                # A refusal is an answer (a new claim gets a new id); a network failure or a 5xx may hide a grant.
                if isinstance(error, AgentSchedulerError) and 400 <= error.status < 500:
                    self._pending_claim = None
                self._report(error)
                await self._stop.sleep(idle.next())
            return None
        finally:
            self._claiming = False
        if self._pending_claim is pending:
            self._pending_claim = None
        return pending, claimed

    # Tasks

    def _run(self, task: ClaimedTask, session: Session, claim_sent_at: float) -> None:
        margin = self._margin_for(session)
        entry = RunningTask(task, session["sessionId"], claim_sent_at + task["timeoutSeconds"] - margin, margin)
        self._arm_deadline(entry)
        self._tasks.add(entry)
        self._emit("picked", task)
        entry.done = asyncio.create_task(self._execute(entry))

        def finished(_: asyncio.Task[None]) -> None:
            if entry.deadline_timer is not None:
                entry.deadline_timer.cancel()
            self.progress_reports.forget(entry)
            self._tasks.discard(entry)
            self._wake_claims()

        entry.done.add_done_callback(finished)

    def _arm_deadline(self, entry: RunningTask) -> None:
        """Cancels the handler when the attempt's deadline (by the agent's own clock) passes."""
        if entry.deadline_timer is not None:
            entry.deadline_timer.cancel()
        entry.deadline_timer = asyncio.get_running_loop().call_later(
            max(0.0, entry.deadline - time.monotonic()), lambda: self._abort_task(entry, "deadline")
        )

    async def _execute(self, entry: RunningTask) -> None:
        context = TaskContext(self, entry)
        ok, value = True, None
        handler = self._handler
        try:
            if handler is None:
                raise RuntimeError("this worker has no task handler")

            def span_started(traceparent: str) -> None:
                entry.span_traceparent = traceparent

            handler = in_task_span(entry.task, handler, is_async=self._async_handler, on_span=span_started)
            if self._async_handler:
                entry.handler_task = asyncio.ensure_future(cast(Awaitable[Any], handler(entry.task, context)))
                value = await entry.handler_task
            else:
                loop = asyncio.get_running_loop()
                value = await loop.run_in_executor(self._handler_pool, handler, entry.task, context)
        except asyncio.CancelledError:
            if not entry.aborted:
                raise
        except Exception as error:  # noqa: BLE001 (a handler's failure is its task's outcome)
            ok, value = False, error
        # The lease is gone (already reported) or was handed back: the server would refuse any outcome.
        if entry.aborted:
            return
        entry.phase = "finishing"
        try:
            await self._record(entry, ok, value)
        except Exception as error:  # noqa: BLE001
            self._report(error)

    def _abort_task(self, entry: RunningTask | None, reason: AbortReason) -> None:
        if entry is None or not entry.stop(reason):
            return
        log.warning("task %s lost (%s)", entry.task_id, reason)
        # Once finishing, the pending complete or fail tells what happened.
        if entry.phase == "running":
            self._emit("lost", entry.task, reason)

    def _find(self, task_id: str, session_id: str | None, lease_epoch: int | None = None) -> RunningTask | None:
        """The running task of ``task_id`` under ``session_id`` and ``lease_epoch`` (either: any, when None)."""
        for entry in self._tasks:
            if entry.task_id != task_id or entry.aborted:
                continue
            if session_id is not None and entry.session_id != session_id:
                continue
            if lease_epoch is None or entry.task["leaseEpoch"] == lease_epoch:
                return entry
        return None

    # Outcomes

    async def _record(self, entry: RunningTask, ok: bool, value: Any) -> None:
        """Sends a finished task's outcome until it lands, for as long as the lease is good by the agent's own
        reckoning; then nothing more is sent and the task is reported ``lost``."""
        backoff = Backoff(*RESULT_RETRY)
        suspend = value if isinstance(value, Suspend) else None
        snooze = None if suspend else snooze_of(ok, value)
        retry_after: int | None = None
        while True:
            if entry.aborted:
                self._emit("lost", entry.task, _lost_reason(entry))
                return
            try:
                # A snooze or a suspension the server refuses is replaced by a failure for good: a failure whose
                # answer was lost is sent again, never the snooze or suspension, which that failure's end of the
                # lease would refuse as lost.
                if suspend is not None:
                    refusal = await self._suspend(entry, suspend)
                    if refusal is None:
                        return
                    ok, value, suspend = False, RuntimeError(f"the suspension was refused: {refusal.message}"), None
                    await self._fail(entry, value)
                elif snooze is not None:
                    snoozed = await self._snooze(entry, snooze, ok, value)
                    if snoozed:
                        return
                    # Past the task's maxSnoozes: the attempt fails instead, retried after the same delay.
                    ok, value = False, value if not ok else RuntimeError("snoozed more than the task may")
                    snooze, retry_after = None, snooze
                    await self._fail(entry, value, retry_after)
                elif ok:
                    await self._complete(entry, value)
                else:
                    await self._fail(entry, value, retry_after)
                return
            except Exception as error:  # noqa: BLE001 (sent again while the lease lasts)
                if _lease_gone(error):
                    self._emit("lost", entry.task, _lost_reason(entry))
                    session = self._session
                    if isinstance(error, SessionLostError) and session and session["sessionId"] == entry.session_id:
                        self._session_lost(session)
                    return
                if entry.aborted:
                    continue
                self._report(TaskError(entry.task_id, f"its outcome could not be recorded yet; sending again: {error}"))
                await entry.abort.sleep(backoff.next())

    def _attempt_timeout(self) -> float:
        """One attempt of a call about a lease: a heartbeat interval, so a hanging one is sent again in time."""
        return float(self._session["heartbeatIntervalSeconds"]) if self._session else 10.0

    async def _complete(self, entry: RunningTask, result: Any) -> None:
        item: CompleteItem = {"taskId": entry.task_id, "leaseEpoch": entry.task["leaseEpoch"]}
        if result is not None:
            item["result"] = result
        usage = entry.usage()
        if usage is not None:
            item["usage"] = usage
        try:
            size = limits.json_bytes(item)
        except (TypeError, ValueError) as error:
            await self._fail(entry, NonRetryableError(f"the result is not JSON: {error}"))
            return
        settled: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._completions.append(_Completion(item, size, entry, settled))
        if not self._sending:
            self._spawn(self._flush())
        try:
            await settled
        except AgentSchedulerError as error:
            # Only a call of this result alone gets here refused: it would be refused again on every attempt.
            if is_refusal(error):
                await self._fail(entry, NonRetryableError(f"the result was refused: {error.message}"))
                return
            raise
        self._emit("completed", entry.task, result)

    async def _flush(self) -> None:
        """A completion with none in flight goes at once; those that finish meanwhile go together next, up to ten
        and as many as the body has room for. A group refused whole is sent again item by item."""
        self._sending = True
        try:
            while self._completions:
                taken = limits.take_within_budget(self._completions, lambda c: c.bytes, limits.COMPLETIONS_PER_CALL)
                for waiting in taken:
                    if waiting.entry.aborted:
                        _settle(waiting.settled, _aborted())
                group = [w for w in taken if not w.entry.aborted]
                if len(group) == 1:
                    await self._complete_alone(group[0])
                elif group:
                    await self._complete_group(group)
        finally:
            self._sending = False

    async def _complete_alone(self, waiting: _Completion) -> None:
        item = waiting.item
        body = cast(CompleteRequest, {k: v for k, v in item.items() if k != "taskId"})
        timeout = self._attempt_timeout()
        traceparent = waiting.entry.span_traceparent
        carried = self._carry(1)
        try:
            if carried is not None:
                answer = await self.io(
                    lambda abandon: self.client.complete_and_claim(
                        item["taskId"], body, carried.body, timeout=timeout, abandon=abandon, traceparent=traceparent
                    ),
                    waiting.entry.abort,
                )
                carried.answered(answer.get("next"))
            else:
                await self.io(
                    lambda abandon: self.client.complete(
                        item["taskId"], body, timeout=timeout, abandon=abandon, traceparent=traceparent
                    ),
                    waiting.entry.abort,
                )
        except Exception as error:  # noqa: BLE001 (the completion's own outcome)
            if carried is not None:
                carried.answered(None)
            _settle(waiting.settled, error)
            return
        _settle(waiting.settled, None)

    async def _complete_group(self, group: list[_Completion]) -> None:
        timeout = self._attempt_timeout()
        items = [w.item for w in group]
        aborts = [w.entry.abort for w in group]
        carried = self._carry(len(group))
        try:
            # Abandoned as soon as one of its leases runs out; the others are then sent again on their own.
            if carried is not None:
                answer = await self.io(
                    lambda abandon: self.client.complete_tasks_and_claim(
                        items, carried.body, timeout=timeout, abandon=abandon
                    ),
                    *aborts,
                )
                carried.answered(answer.get("next"))
                results = answer["results"]
            else:
                results = await self.io(
                    lambda abandon: self.client.complete_tasks(items, timeout=timeout, abandon=abandon), *aborts
                )
        except Exception as error:  # noqa: BLE001
            if carried is not None:
                carried.answered(None)
            if not is_refusal(error):
                for waiting in group:
                    _settle(waiting.settled, error)
                return
            for waiting in group:
                if waiting.entry.aborted:
                    _settle(waiting.settled, _aborted())
                else:
                    await self._complete_alone(waiting)
            return
        for index, waiting in enumerate(group):
            result: Any = results[index] if index < len(results) else None
            if result is None:
                _settle(waiting.settled, AgentSchedulerError(0, "InvalidResponse", "fewer results than completions"))
            elif result["ok"]:
                _settle(waiting.settled, None)
            else:
                error = result["error"]
                _settle(waiting.settled, error_for_response(result["status"], error["code"], error["message"]))

    async def _fail(self, entry: RunningTask, error: Any, retry_after: int | None = None) -> None:
        body: FailRequest = {"leaseEpoch": entry.task["leaseEpoch"], "error": describe_failure(error)}
        if retry_after is not None:
            body["retryAfterSeconds"] = retry_after
        usage = entry.usage()
        if usage is not None:
            body["usage"] = usage
        timeout = self._attempt_timeout()
        await self.io(
            lambda abandon: self.client.fail(
                entry.task_id, body, timeout=timeout, abandon=abandon, traceparent=entry.span_traceparent
            ),
            entry.abort,
        )
        self._emit("failed", entry.task, error)

    async def _snooze(self, entry: RunningTask, seconds: int, ok: bool, value: Any) -> bool:
        """Releases the task with a delay (no attempt used); False when the server refuses past ``maxSnoozes``."""
        timeout = self._attempt_timeout()
        try:
            await self.io(
                lambda abandon: self.client.release(
                    entry.task_id,
                    {"leaseEpoch": entry.task["leaseEpoch"], "delaySeconds": seconds},
                    timeout=timeout,
                    abandon=abandon,
                    traceparent=entry.span_traceparent,
                ),
                entry.abort,
            )
        except AgentSchedulerError as error:
            if error.code == "SnoozeLimitReached":
                return False
            raise
        self._emit("snoozed", entry.task, seconds)
        return True

    async def _suspend(self, entry: RunningTask, suspend: Suspend) -> AgentSchedulerError | None:
        """Suspends the task on a waitpoint, its lease ended; then hands the waitpoint and its callback URL to the
        handler's ``on_suspended``. The server's refusal (a stack without waitpoints, a value it refuses) is
        answered, for the attempt to fail instead."""
        body = suspend.wait_request(entry.task["leaseEpoch"], entry.pending_checkpoint())
        timeout = self._attempt_timeout()
        try:
            suspended = await self.io(
                lambda abandon: self.client.wait(
                    entry.task_id, body, timeout=timeout, abandon=abandon, traceparent=entry.span_traceparent
                ),
                entry.abort,
            )
        except AgentSchedulerError as error:
            if not is_refusal(error):
                raise
            return error
        self._emit("suspended", entry.task, suspended)
        if suspend.on_suspended is not None:
            try:
                answer = suspend.on_suspended(suspended)
                if inspect.isawaitable(answer):
                    await answer
            except Exception as error:  # noqa: BLE001 (the task is suspended whatever it does)
                self._report(TaskError(entry.task_id, f"was suspended, but its on_suspended failed: {error}"))
        return None

    # Roles of the worker's own

    def _hold_role(self, role: str, handler: RoleHandler) -> None:
        """Volunteers for ``role``, and runs ``handler`` while the agent holds it; a handler that returns gives it
        up, and the worker joins the line again."""
        from .roles import RoleSubscription  # noqa: PLC0415 (roles ride on a Worker: the modules need each other)

        subscription = RoleSubscription(self.client, role, worker=self)
        current: list[Abort] = []
        subscription.on("error", self._report)

        def got(lease: RoleLease) -> None:
            self._emit("got_role", lease)
            abort = Abort()
            current[:] = [abort]
            run = asyncio.ensure_future(self._run_role(subscription, handler, lease["leaseEpoch"], abort))
            self._role_runs[run] = abort
            run.add_done_callback(lambda done: self._role_runs.pop(done, None))

        def lost(lease: RoleLease, reason: str) -> None:
            self._emit("lost_role", lease, reason)
            for abort in current:
                abort.set()
            current.clear()

        subscription.on("got_role", got)
        subscription.on("lost_role", lost)
        self._spawn(self._volunteer(subscription))

    async def _volunteer(self, subscription: RoleSubscription) -> None:
        try:
            await subscription.volunteer()
        except Exception as error:  # noqa: BLE001 (the next session volunteers again)
            self._report(error)

    async def _run_role(
        self, subscription: RoleSubscription, handler: RoleHandler, lease_epoch: int, abort: Abort
    ) -> None:
        context = RoleContext(subscription.role, lease_epoch, abort.event)
        try:
            if inspect.iscoroutinefunction(handler):
                inner = asyncio.ensure_future(cast(Awaitable[None], handler(context)))
                stop = abort.future()
                try:
                    await asyncio.wait({inner, stop}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    abort.forget(stop)
                if not inner.done():
                    inner.cancel()
                    await asyncio.wait({inner})
                if not inner.cancelled():
                    inner.result()
            else:
                await asyncio.to_thread(handler, context)
        except Exception as error:  # noqa: BLE001 (a role handler's failure gives the role up, as a return does)
            if not abort.is_set():
                self._report(error)
        if abort.is_set() or self._state != "running":
            return
        # The handler gave the role up: the next candidate gets it, and this agent joins the line again.
        try:
            await subscription.release()
        except Exception as error:  # noqa: BLE001
            self._report(error)
        await self._stop.sleep(Backoff(*self._poll).next())
        if self._state == "running":
            await self._volunteer(subscription)

    # Stop

    def _on_signal(self, sig: signal.Signals) -> None:
        again = self._stopping is not None
        log.info("%s: %s", sig.name, "stopping now" if again else "stopping")
        self._spawn(self.stop(drain=not again))

    async def _shutdown(self) -> None:
        try:
            if self._claim_loop is not None:
                with contextlib.suppress(Exception):
                    await self._claim_loop
            if self._reopening is not None:
                with contextlib.suppress(Exception):
                    await self._reopening
            # Roles first: their next holders need not wait for the session to expire.
            for follower in list(self._followers):
                try:
                    await follower.release()
                except Exception as error:  # noqa: BLE001
                    self._report(error)
            for abort in self._role_runs.values():
                abort.set()
            if self._role_runs:
                await asyncio.wait(list(self._role_runs), timeout=self._drain_timeout)
            running = [entry.done for entry in self._tasks if entry.done is not None]
            if running and not self._force.is_set():
                force = self._force.future()
                # Never cancelled: that would cancel the handlers it gathers.
                drained = asyncio.gather(*running, return_exceptions=True)
                try:
                    await asyncio.wait(
                        {drained, force}, timeout=self._drain_timeout, return_when=asyncio.FIRST_COMPLETED
                    )
                finally:
                    self._force.forget(force)
            await self._release_running()
            # Outcomes being recorded are let through: their leases are still good.
            finishing = [e.done for e in self._tasks if e.phase == "finishing" and e.done is not None]
            if finishing:
                await asyncio.wait(finishing)
        finally:
            if self._beats is not None:
                self._beats.cancel()
            if self._session_timer is not None:
                self._session_timer.cancel()
            self.progress_reports.stop()
            with contextlib.suppress(Exception):
                await self._push.aclose()
            self._state = "stopped"
            self._io_pool.shutdown(wait=False)
            self._handler_pool.shutdown(wait=False, cancel_futures=True)
            self._stopped.set()

    async def _release_running(self) -> None:
        for entry in [e for e in self._tasks if not e.aborted and e.phase == "running"]:
            entry.stop("released")
            try:
                await self.io(
                    lambda abandon, e=entry: self.client.release(
                        e.task_id, {"leaseEpoch": e.task["leaseEpoch"]}, abandon=abandon
                    ),
                    self._session_abort,
                )
            except Exception as error:  # noqa: BLE001
                if _lease_gone(error):
                    self._emit("lost", entry.task, "lost")
                else:
                    self._report(TaskError(entry.task_id, f"could not be given back: {error}"))
                continue
            self._emit("released", entry.task)

    # Events

    def _spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _emit(self, event: Event, *args: Any) -> None:
        call_listeners(self._listeners, event, args, self._report)

    def _report(self, error: BaseException) -> None:
        log.warning("worker error: %s", error)
        self._emit("error", error)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def _awaited(work: Awaitable[T]) -> T:
    return await work


def _lost_reason(entry: RunningTask) -> LostReason:
    reason = entry.abort_reason
    return "lost" if reason is None or reason == "released" else reason


def _aborted() -> AgentSchedulerError:
    return AgentSchedulerError(0, "Aborted", "the lease ran out while the completion waited")


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
