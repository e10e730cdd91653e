"""A typed client of the v1 HTTP API: one method per route, for operators and for agents.

Retries are safe by construction: a submit always carries an idempotency key, a claim a claim id, a session open an
open id, and the server answers a repeated complete, fail or release with the outcome it already committed.
Registering an agent is not idempotent, so it is retried only when the server says the request was not processed.
Calls block; the :class:`~agent_scheduler.Worker` runs them on threads of its own.

:meth:`Client.wait_for_task` and :meth:`Client.submit_and_wait` wait for a task to end on the push channel while it is
up, reading the task with backoff while it is not (``_waiter.py``).
"""

from __future__ import annotations

import re
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from . import limits
from ._ids import new_claim_id, new_open_id, next_open_seq
from ._tracing import with_trace_context
from .errors import AgentSchedulerError
from .transport import RetryMode, RetryPolicy, Send, Signer, Transport, urllib_send
from .types import (
    AgentSpec,
    BatchItemResult,
    ChildTaskSpec,
    ClaimRequest,
    ClaimResult,
    Completed,
    CompletedMany,
    CompleteItem,
    CompleteRequest,
    CompleteWaitpointRequest,
    CreatedAgent,
    FailRequest,
    Health,
    HeartbeatRequest,
    HeartbeatResult,
    OpenSessionRequest,
    ProgressItem,
    ProgressItemResult,
    ProgressRequest,
    PushTicket,
    QueueStats,
    RateLimit,
    RateLimitTerms,
    RejectWaitpointRequest,
    ReleaseRequest,
    ReleaseRoleRequest,
    ReleaseRoleResult,
    Role,
    Session,
    SessionHoldings,
    Task,
    TaskLinks,
    TaskPage,
    TaskProgress,
    TaskSpec,
    VolunteerRequest,
    VolunteerResult,
    Waitpoint,
    WaitpointPage,
    WaitRequest,
    WaitResult,
    WithdrawRequest,
    WithdrawRoleResult,
)

if TYPE_CHECKING:
    from .push import PushOptions

T = TypeVar("T")

PushTicketFor = Literal["agent", "operator"]
"""Who a push ticket is for: the agent whose token the client holds, or an operator."""

#: An agent's bearer token: ``<agentId>.<secret>``.
_AGENT_TOKEN = re.compile(r"^a_[a-z2-7]{26}\.[A-Za-z0-9_-]{43}$")

#: The ``nextError`` of a completion whose claim was not carried: the server is older than carried claims.
CLAIM_NOT_CARRIED = {
    "code": "ClaimNotCarried",
    "message": "the server takes no claim with a completion; send it with claim()",
}


@dataclass(frozen=True)
class Submitted:
    """A submitted task, and whether this call created it (false: its idempotency key already named it)."""

    task: Task
    created: bool
    #: Submitted with ``debounce``: whether it joined an open window.
    debounced: bool | None = None


def _segment(value: str) -> str:
    return urllib.parse.quote(value, safe="")


class Client:
    """The HTTP API. ``token``: an agent's or the operator's bearer token; ``signer``: SigV4 for IAM routes.

    ``send`` replaces how a request goes on the wire (tests lose answers through it); ``retries`` and ``timeout``
    (seconds per attempt) shape every call. ``push``: the push channel :meth:`wait_for_task` listens on (True: with
    the default :class:`~agent_scheduler.PushOptions`); False reads the task with backoff instead.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        token: str | None = None,
        signer: Signer | None = None,
        send: Send | None = None,
        retries: RetryPolicy | None = None,
        timeout: float = 30.0,
        push: bool | PushOptions = True,
    ) -> None:
        self._token = token
        self._push: bool | PushOptions = push
        #: The server refused a claim carried by a completion as an unknown field: it is older than them.
        self._claims_not_carried = False
        self._transport = Transport(
            endpoint,
            token=token,
            signer=signer,
            send=send or urllib_send,
            retries=retries or RetryPolicy(),
            timeout=timeout,
        )

    def _call(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Mapping[str, str | int | None] | None = None,
        retry: RetryMode = "always",
        timeout: float | None = None,
        abandon: threading.Event | None = None,
        traceparent: str | None = None,
    ) -> Any:
        # A task's outcome names the handler's span (``traceparent``): a server recording spans makes its span of the
        # call that span's child.
        headers = {"traceparent": traceparent} if traceparent else None
        return self._transport.request(
            method, path, body=body, query=query, retry=retry, timeout=timeout, abandon=abandon, headers=headers
        )[1]

    # Operators

    def submit_task(self, spec: TaskSpec) -> Submitted:
        """Submits a task; the same idempotency key (one is added if missing) goes with every attempt."""
        traced = with_trace_context([spec])[0]
        body = cast(TaskSpec, {**traced, "idempotencyKey": spec.get("idempotencyKey") or str(uuid.uuid4())})
        status, answer = self._transport.request("POST", "/v1/tasks", body=body)
        debounced = answer.get("debounced")
        return Submitted(answer["task"], status == 201, debounced if isinstance(debounced, bool) else None)

    def submit_tasks(self, specs: Sequence[TaskSpec]) -> list[BatchItemResult]:
        """Submits tasks in as few calls as the body limit allows (25 at most a call); outcomes in order."""
        tasks = [
            cast(TaskSpec, {**s, "idempotencyKey": s.get("idempotencyKey") or str(uuid.uuid4())})
            for s in with_trace_context(specs)
        ]
        return in_bodies(
            tasks, lambda chunk: self._call("POST", "/v1/tasks/batch", body={"tasks": chunk})["results"]
        )

    def get_task(self, task_id: str, *, include_payload: bool = False) -> Task:
        """A task; with ``include_payload``, its payload too."""
        query = {"include": "payload"} if include_payload else None
        return self._call("GET", f"/v1/tasks/{_segment(task_id)}", query=query)["task"]

    def get_task_links(self, task_id: str) -> TaskLinks:
        """The tasks linked to a task, each with its status: its parent and root, the children its agent submitted and
        the tasks that depend on it (up to 50 each), the tasks it depends on, and its failure hook."""
        return self._call("GET", f"/v1/tasks/{_segment(task_id)}/links")["links"]

    def list_tasks(
        self,
        *,
        queue: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> TaskPage:
        """One page of tasks, newest first; pass ``nextCursor`` back as ``cursor`` for the next."""
        page = self._call(
            "GET", "/v1/tasks", query={"queue": queue, "status": status, "limit": limit, "cursor": cursor}
        )
        if page.get("nextCursor") is None:
            page.pop("nextCursor", None)
        return page

    def cancel_task(self, task_id: str, *, cascade: bool | None = None) -> Task:
        """Cancels an open task (with ``cascade``, its open descendants too)."""
        body = None if cascade is None else {"cascade": cascade}
        return self._call("POST", f"/v1/tasks/{_segment(task_id)}/cancel", body=body)["task"]

    def redrive_task(self, task_id: str) -> Task:
        """Sends a dead task back to its queue."""
        return self._call("POST", f"/v1/tasks/{_segment(task_id)}/redrive")["task"]

    def wait_for_task(
        self,
        task_id: str,
        *,
        timeout: float | None = None,
        on_progress: Callable[[TaskProgress], None] | None = None,
    ) -> Task:
        """Blocks until the task has ended (``succeeded``, ``dead``, ``cancelled`` or ``expired``) and answers it, as
        :meth:`get_task` reads it. Listens on the push channel while it is up (the task is watched, its end pushed,
        then read once); reads the task with backoff (0.25 s doubling to 5 s) while the channel is down or the client
        has ``push=False``. ``on_progress(progress)`` hears each progress report of the task's holder, newest last,
        on this thread. Raises :class:`~agent_scheduler.TaskWaitTimeoutError` after ``timeout`` seconds, the server's
        error for a task that does not exist. From ``async`` code: ``await asyncio.to_thread(client.wait_for_task,
        …)``."""
        from ._waiter import TaskWait, run_blocking  # noqa: PLC0415 (asyncio comes with the first wait)

        wait = TaskWait(
            task_id,
            get_task=self.get_task,
            ticket=lambda: self.push_ticket("operator"),
            push=self._push_options(),
            on_progress=on_progress,
        )
        return run_blocking(wait.run(timeout))

    def submit_and_wait(
        self,
        spec: TaskSpec,
        *,
        timeout: float | None = None,
        on_progress: Callable[[TaskProgress], None] | None = None,
    ) -> Task:
        """Submits a task (:meth:`submit_task`), then waits for it to end (:meth:`wait_for_task`); ``timeout`` counts
        from the call."""
        started = time.monotonic()
        task = self.submit_task(spec).task
        left = None if timeout is None else max(0.0, timeout - (time.monotonic() - started))
        return self.wait_for_task(task["taskId"], timeout=left, on_progress=on_progress)

    def _push_options(self) -> PushOptions | None:
        if self._push is False:
            return None
        if self._push is True:
            from .push import PushOptions  # noqa: PLC0415 (the push channel comes with its first use)

            return PushOptions()
        return self._push

    def push_ticket(
        self,
        kind: PushTicketFor | None = None,
        *,
        timeout: float | None = None,
        abandon: threading.Event | None = None,
    ) -> PushTicket:
        """A ticket to open one push connection, good once within 60 seconds: an agent's (it hears wakes for its
        queues, its role grants and the cancels of its tasks) or an operator's (it can watch tasks). ``kind``
        default: ``agent`` when the client holds an agent's token, ``operator`` otherwise. A deployment without a
        push channel answers 404 (``PushUnavailable``)."""
        agent = kind == "agent" if kind is not None else bool(self._token and _AGENT_TOKEN.match(self._token))
        path = "/v1/agent/push-ticket" if agent else "/v1/push-ticket"
        return self._call("POST", path, timeout=timeout, abandon=abandon)

    def list_waitpoints(self, *, limit: int | None = None, cursor: str | None = None) -> WaitpointPage:
        """Open waitpoints, oldest first, one page at a time; pass ``nextCursor`` back as ``cursor`` for the next."""
        page = self._call("GET", "/v1/waitpoints", query={"status": "open", "limit": limit, "cursor": cursor})
        if not isinstance(page.get("nextCursor"), str):
            page.pop("nextCursor", None)
        return page

    def get_waitpoint(self, waitpoint_id: str) -> Waitpoint:
        """A waitpoint: open, or how it ended and when."""
        return self._call("GET", f"/v1/waitpoints/{_segment(waitpoint_id)}")["waitpoint"]

    def complete_waitpoint(self, waitpoint_id: str, body: CompleteWaitpointRequest | None = None) -> Waitpoint:
        """Completes a waitpoint: its task resumes, its next claim carrying ``data`` (``ctx.waitpoint``). The same
        answer sent again is answered as it was."""
        return self._call("POST", f"/v1/waitpoints/{_segment(waitpoint_id)}/complete", body=body or {})["waitpoint"]

    def reject_waitpoint(self, waitpoint_id: str, body: RejectWaitpointRequest) -> Waitpoint:
        """Rejects a waitpoint: its task resumes, its next claim carrying ``reason``."""
        return self._call("POST", f"/v1/waitpoints/{_segment(waitpoint_id)}/reject", body=body)["waitpoint"]

    def list_roles(self) -> list[Role]:
        """Every role: its holder and grant epoch, its volunteers in line and the agents registered for it."""
        return self._call("GET", "/v1/roles")["roles"]

    def list_queues(self) -> list[QueueStats]:
        """Every queue's counts and controls."""
        return self._call("GET", "/v1/queues")["queues"]

    def list_rate_limits(self) -> list[RateLimit]:
        """The named rate limits in force (set, or as the construct declares them), each with its window open now."""
        return self._call("GET", "/v1/rate-limits")["rateLimits"]

    def get_rate_limit(self, name: str) -> RateLimit:
        """One named rate limit and its window open now; for a ``perKey`` limit, the keys that used it most."""
        return self._call("GET", f"/v1/rate-limits/{_segment(name)}")["rateLimit"]

    def set_rate_limit(self, name: str, terms: RateLimitTerms) -> RateLimit:
        """Sets a named rate limit's terms: a new limit, or new terms for one in force (a declared one's included,
        which these then replace). Raising a budget lets its waiting tasks run within the window; lowering it stops
        grants once the window's use reaches it."""
        return self._call("POST", f"/v1/rate-limits/{_segment(name)}", body=terms)["rateLimit"]

    def create_agent(self, spec: AgentSpec) -> CreatedAgent:
        """Registers an agent; its bearer token is in the answer, shown this once."""
        return self._call("POST", "/v1/agents", body=spec, retry="unprocessed")

    def revoke_agent(self, agent_id: str) -> None:
        """Revokes an agent at once: its session ends, its tasks are taken back. Revoking twice is harmless."""
        self._call("DELETE", f"/v1/agents/{_segment(agent_id)}")

    def health(self) -> Health:
        """Open to anyone: whether the API answers."""
        return self._call("GET", "/v1/health")

    def openapi(self) -> dict[str, Any]:
        """The OpenAPI document of the API."""
        return self._call("GET", "/v1/openapi.json")

    # Agents

    def open_session(
        self,
        *,
        open_id: str | None = None,
        open_seq: int | None = None,
        labels: Mapping[str, str | Sequence[str]] | None = None,
        timeout: float | None = None,
    ) -> Session:
        """Opens the agent's session (a session it had before ends, its tasks taken back).

        Every attempt carries one open id (a new one unless given) and a number, so a retry after a lost answer, or
        a copy delivered late, gets the session the first attempt opened instead of ending it.
        """
        body: OpenSessionRequest = {"openId": open_id or new_open_id(), "openSeq": open_seq or next_open_seq()}
        if labels is not None:
            body["labels"] = {k: v if isinstance(v, str) else list(v) for k, v in labels.items()}
        try:
            return self._call("POST", "/v1/agent/session", body=body, timeout=timeout)
        except AgentSchedulerError as error:
            # A server older than open numbers refuses the field, having opened nothing.
            if error.status != 400 or '"openSeq"' not in error.message:
                raise
        del body["openSeq"]
        return self._call("POST", "/v1/agent/session", body=body, timeout=timeout)

    def get_session(self, *, abandon: threading.Event | None = None) -> SessionHoldings:
        """What the agent's live session holds: its tasks with their epochs, and its roles."""
        return self._call("GET", "/v1/agent/session", abandon=abandon)["session"]

    def heartbeat(
        self, body: HeartbeatRequest, *, timeout: float | None = None, abandon: threading.Event | None = None
    ) -> HeartbeatResult:
        """Keeps the session, and every lease it holds, alive; may carry a checkpoint per task, and deadline
        extensions (``extend``: the attempt ends no sooner than ``seconds`` after the server has the beat, never past
        the task's ``maxTimeoutSeconds``), answered in ``extended`` with the seconds now left to each."""
        result = self._call("POST", "/v1/agent/heartbeat", body=body, timeout=timeout, abandon=abandon)
        result.setdefault("held", [])
        return result

    def claim(
        self, body: ClaimRequest, *, timeout: float | None = None, abandon: threading.Event | None = None
    ) -> ClaimResult:
        """Claims tasks. Every attempt carries one claim id (a new one unless given), so a retry after a lost answer
        gets what the first attempt granted instead of leasing more the agent would never hear of."""
        sent: ClaimRequest = {**body, "claimId": body.get("claimId") or new_claim_id()}
        result = self._call("POST", "/v1/agent/claim", body=sent, timeout=timeout, abandon=abandon)
        if not isinstance(result.get("retryAfterMs"), (int, float)):
            result.pop("retryAfterMs", None)
        return result

    def complete(
        self,
        task_id: str,
        body: CompleteRequest,
        *,
        timeout: float | None = None,
        abandon: threading.Event | None = None,
        traceparent: str | None = None,
    ) -> Task:
        """Records a task's result under its lease (``leaseEpoch``); ``traceparent``: the span it was made in."""
        path = f"/v1/agent/tasks/{_segment(task_id)}/complete"
        return self._call("POST", path, body=body, timeout=timeout, abandon=abandon, traceparent=traceparent)["task"]

    def complete_and_claim(
        self,
        task_id: str,
        body: CompleteRequest,
        claim: ClaimRequest,
        *,
        timeout: float | None = None,
        abandon: threading.Event | None = None,
        traceparent: str | None = None,
    ) -> Completed:
        """Completes a task and, in the same call, claims (``claim``, as :meth:`claim` takes it): a busy agent's next
        task comes with the answer to its last, one request instead of two. The claim carries one id on every attempt
        (a new one unless given). ``next`` is its answer; without it, ``nextError`` says why it was not made (as
        :meth:`claim` would have raised it), or that the server is older than carried claims (``ClaimNotCarried``):
        the completion stands either way, and the claim can be sent with :meth:`claim` under the same id."""
        path = f"/v1/agent/tasks/{_segment(task_id)}/complete"

        def carrying(claim_next: ClaimRequest) -> Completed:
            sent: CompleteRequest = {**body, "claimNext": claim_next}
            answer = self._call("POST", path, body=sent, timeout=timeout, abandon=abandon, traceparent=traceparent)
            return _claim_after(answer)

        def alone() -> Completed:
            return {"task": self.complete(task_id, body, timeout=timeout, abandon=abandon, traceparent=traceparent)}

        return self._carrying(claim, carrying, alone)

    def complete_tasks_and_claim(
        self,
        items: Sequence[CompleteItem],
        claim: ClaimRequest,
        *,
        timeout: float | None = None,
        abandon: threading.Event | None = None,
    ) -> CompletedMany:
        """As :meth:`complete_and_claim`, for up to 10 completions in one call (:meth:`complete_tasks`)."""

        def carrying(claim_next: ClaimRequest) -> CompletedMany:
            sent = {"tasks": list(items), "claimNext": claim_next}
            answer = self._call("POST", "/v1/agent/tasks/complete", body=sent, timeout=timeout, abandon=abandon)
            return _claim_after(answer)

        def alone() -> CompletedMany:
            return {"results": self.complete_tasks(items, timeout=timeout, abandon=abandon)}

        return self._carrying(claim, carrying, alone)

    def _carrying(self, claim: ClaimRequest, send: Callable[[ClaimRequest], T], alone: Callable[[], T]) -> T:
        """A completion call that carries ``claim`` (with an id, the same on every attempt), or, to a server older
        than carried claims (it refuses the unknown field, having changed nothing; remembered, so later calls go
        without), the completion alone, answered with ``nextError`` ``ClaimNotCarried``."""
        if not self._claims_not_carried:
            try:
                return send({**claim, "claimId": claim.get("claimId") or new_claim_id()})
            except AgentSchedulerError as error:
                if error.code != "ValidationError" or '"claimNext"' not in error.message:
                    raise
                self._claims_not_carried = True
        answer = cast(dict[str, Any], alone())
        answer["nextError"] = dict(CLAIM_NOT_CARRIED)
        return cast(T, answer)

    def complete_tasks(
        self,
        items: Sequence[CompleteItem],
        *,
        timeout: float | None = None,
        abandon: threading.Event | None = None,
    ) -> list[BatchItemResult]:
        """Completes up to 10 leases in one call; each item has its own outcome."""
        body = {"tasks": list(items)}
        return self._call("POST", "/v1/agent/tasks/complete", body=body, timeout=timeout, abandon=abandon)["results"]

    def fail(
        self,
        task_id: str,
        body: FailRequest,
        *,
        timeout: float | None = None,
        abandon: threading.Event | None = None,
        traceparent: str | None = None,
    ) -> Task:
        """Records a failed attempt; retried by the server unless ``error.retryable`` is false or none are left."""
        path = f"/v1/agent/tasks/{_segment(task_id)}/fail"
        return self._call("POST", path, body=body, timeout=timeout, abandon=abandon, traceparent=traceparent)["task"]

    def release(
        self,
        task_id: str,
        body: ReleaseRequest,
        *,
        timeout: float | None = None,
        abandon: threading.Event | None = None,
        traceparent: str | None = None,
    ) -> Task:
        """Gives the task back without it counting as an attempt (with ``delaySeconds``: a snooze)."""
        path = f"/v1/agent/tasks/{_segment(task_id)}/release"
        return self._call("POST", path, body=body, timeout=timeout, abandon=abandon, traceparent=traceparent)["task"]

    def report_progress(
        self,
        task_id: str,
        body: ProgressRequest,
        *,
        timeout: float | None = None,
        abandon: threading.Event | None = None,
    ) -> TaskProgress:
        """Reports the progress of a held task (``percent``, ``message``, ``data``), fenced by its lease; answers
        the report as kept. Shown on the task (``get_task``) for people watching."""
        path = f"/v1/agent/tasks/{_segment(task_id)}/progress"
        return self._call("POST", path, body=body, timeout=timeout, abandon=abandon)["progress"]

    def report_progress_batch(
        self,
        items: Sequence[ProgressItem],
        *,
        timeout: float | None = None,
        abandon: threading.Event | None = None,
    ) -> list[ProgressItemResult]:
        """Reports the progress of up to 100 held tasks in one call; each report has its own outcome."""
        body = {"tasks": list(items)}
        return self._call("POST", "/v1/agent/tasks/progress", body=body, timeout=timeout, abandon=abandon)["results"]

    def wait(
        self,
        task_id: str,
        body: WaitRequest,
        *,
        timeout: float | None = None,
        abandon: threading.Event | None = None,
        traceparent: str | None = None,
    ) -> WaitResult:
        """Suspends a held task on a waitpoint: the lease ends, no attempt is used, and the task resumes when the
        waitpoint is completed, rejected or times out. The answer's ``callbackUrl`` completes it (shown once: a retry
        of this call after a lost answer gets a new one, and the first stops working)."""
        path = f"/v1/agent/tasks/{_segment(task_id)}/wait"
        return self._call("POST", path, body=body, timeout=timeout, abandon=abandon, traceparent=traceparent)

    def register_role(self, role: str) -> Role:
        """Declares a role without volunteering for it; a second registration by the same agent is a 409."""
        return self._call("POST", f"/v1/agent/roles/{_segment(role)}/register", body={}, retry="unprocessed")["role"]

    def volunteer_for_role(
        self, role: str, body: VolunteerRequest, *, abandon: threading.Event | None = None
    ) -> VolunteerResult:
        """Joins the role's candidates under the session; granted at once if the role is free. Volunteering twice
        under one session is a 409 (``RoleAlreadyVolunteered``), so a retried call whose first answer was lost says
        so; a grant it made is reported again by the next heartbeat."""
        return self._call("POST", f"/v1/agent/roles/{_segment(role)}/volunteer", body=body, abandon=abandon)

    def withdraw_from_role(
        self, role: str, body: WithdrawRequest, *, abandon: threading.Event | None = None
    ) -> WithdrawRoleResult:
        """Leaves the role's candidates, so the role is not granted to this agent later. If the agent holds the role
        under that session, it is given up in the same move and the next volunteer gets it."""
        return self._call("POST", f"/v1/agent/roles/{_segment(role)}/withdraw", body=body, abandon=abandon)

    def release_role(
        self, role: str, body: ReleaseRoleRequest, *, abandon: threading.Event | None = None
    ) -> ReleaseRoleResult:
        """Gives a held role up (its grant named by ``leaseEpoch``); the next live volunteer is granted it at once."""
        return self._call("POST", f"/v1/agent/roles/{_segment(role)}/release", body=body, abandon=abandon)

    def submit_children(
        self,
        parent_task_id: str,
        lease_epoch: int,
        tasks: Sequence[ChildTaskSpec],
        *,
        abandon: threading.Event | None = None,
    ) -> list[BatchItemResult]:
        """Submits follow-up tasks of a task this agent holds, fenced by its lease; each is named by its ``key``, so
        a retry, or the parent run again, gets the same tasks back. In as many calls as the body limit needs."""

        def send(chunk: list[ChildTaskSpec]) -> list[BatchItemResult]:
            body = {"parentTaskId": parent_task_id, "leaseEpoch": lease_epoch, "tasks": chunk}
            return self._call("POST", "/v1/agent/tasks/batch", body=body, abandon=abandon)["results"]

        return in_bodies(with_trace_context(tasks), send)


def _claim_after(answer: Any) -> Any:
    """A completion's answer with the carried claim's as :meth:`Client.claim` gives it: ``retryAfterMs`` only when it
    is a number, ``next`` and ``nextError`` only when present."""
    following = answer.get("next")
    if isinstance(following, dict):
        claimed = cast(dict[str, Any], following)
        if not isinstance(claimed.get("retryAfterMs"), (int, float)):
            claimed.pop("retryAfterMs", None)
    else:
        answer.pop("next", None)
    if not isinstance(answer.get("nextError"), dict):
        answer.pop("nextError", None)
    return answer


def in_bodies(items: list[T], send: Callable[[list[T]], list[BatchItemResult]]) -> list[BatchItemResult]:
    """A batch in as few calls as the body limit allows, outcomes in order.

    A call refused as too large (413) is sent again item by item, so only an item too large on its own is refused:
    its outcome is the server's answer to it alone.
    """
    if not items or len(items) > limits.TASKS_PER_SUBMIT:
        return send(items)
    left: list[tuple[T, int]] = [(item, limits.json_bytes(item)) for item in items]
    outcomes: list[BatchItemResult] = []
    while left:
        chunk = [item for item, _ in limits.take_within_budget(left, lambda p: p[1], limits.TASKS_PER_SUBMIT)]
        try:
            outcomes.extend(send(chunk))
        except AgentSchedulerError as error:
            if error.status != 413:
                raise
            if len(chunk) > 1:
                left[:0] = [(item, limits.BODY_BYTES) for item in chunk]
            else:
                outcomes.append(
                    {"ok": False, "status": error.status, "error": {"code": error.code, "message": error.message}}
                )
    return outcomes
