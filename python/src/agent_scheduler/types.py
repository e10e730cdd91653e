"""The wire shapes of the routes the client covers, as the OpenAPI document declares them.

Written by ``scripts/generate_types.py`` from ``/v1/openapi.json``; ``tests/test_openapi_types.py`` holds
every field of every TypedDict here to the document, and back. Required fields are declared on a
``_…Required`` base, optional ones on the class itself (``total=False``), as Python 3.10 has no
``NotRequired``.
"""

from typing import Any, Literal, TypedDict


class Health(TypedDict):
    """``Health`` in the OpenAPI document."""

    status: Literal["ok"]


class TaskError(TypedDict):
    """``Task/error`` in the OpenAPI document."""

    message: str
    retryable: bool


class _FailureOfRequired(TypedDict):
    taskId: str


class FailureOf(_FailureOfRequired, total=False):
    """``ClaimedTask/failureOf`` in the OpenAPI document."""

    error: dict[str, Any]


class _WaitpointResultRequired(TypedDict):
    id: str
    outcome: Literal["completed", "rejected", "timedOut"]


class WaitpointResult(_WaitpointResultRequired, total=False):
    """``ClaimedTask/waitpoint`` in the OpenAPI document."""

    data: Any
    reason: str


class _DependencyOutcomeRequired(TypedDict):
    status: Literal["succeeded", "dead", "cancelled", "expired"]


class DependencyOutcome(_DependencyOutcomeRequired, total=False):
    """``ClaimedTask/dependencies{}`` in the OpenAPI document."""

    result: Any
    resultOmitted: Literal[True]
    error: dict[str, Any]


class _TaskProgressRequired(TypedDict):
    at: str
    attempt: int


class TaskProgress(_TaskProgressRequired, total=False):
    """``TaskProgress`` in the OpenAPI document."""

    percent: float
    message: str
    data: Any


class _TaskRequired(TypedDict):
    taskId: str
    queue: str
    priority: Literal["critical", "high", "normal", "low"]
    status: Literal["waiting", "queued", "leased", "suspended", "succeeded", "dead", "cancelled", "expired"]
    attempt: int
    maxAttempts: int
    timeoutSeconds: int
    maxSnoozes: int
    leaseEpoch: int
    payloadBytes: int
    createdAt: str
    updatedAt: str


class Task(_TaskRequired, total=False):
    """``Task`` in the OpenAPI document."""

    maxTimeoutSeconds: int
    snoozes: int
    owner: str
    result: Any
    error: TaskError
    checkpoint: Any
    idempotencyKey: str
    notBefore: str
    leaseDeadline: str
    expiresAt: str
    failureOf: dict[str, Any]
    onFailureTaskId: str
    dependencyCount: int
    onDependencyFailure: Literal["cancel", "run"]
    waitingOn: list[str]
    failedDependency: str
    parentTaskId: str
    rootTaskId: str
    concurrencyKey: str
    debounce: dict[str, Any]
    waitpointId: str
    rateLimits: list[dict[str, Any]]
    require: dict[str, str]
    traceparent: str
    tracestate: str
    rateTaken: list[dict[str, Any]]
    progress: TaskProgress
    cascade: dict[str, Any]
    needsAttention: Literal[True]
    finishedAt: str
    payload: Any
    payloadGone: Literal[True]


class _TaskSummaryRequired(TypedDict):
    taskId: str
    queue: str
    priority: Literal["critical", "high", "normal", "low"]
    status: Literal["waiting", "queued", "leased", "suspended", "succeeded", "dead", "cancelled", "expired"]
    attempt: int
    maxAttempts: int
    timeoutSeconds: int
    maxSnoozes: int
    leaseEpoch: int
    payloadBytes: int
    createdAt: str
    updatedAt: str


class TaskSummary(_TaskSummaryRequired, total=False):
    """``TaskSummary`` in the OpenAPI document."""

    maxTimeoutSeconds: int
    snoozes: int
    owner: str
    error: dict[str, Any]
    idempotencyKey: str
    notBefore: str
    leaseDeadline: str
    expiresAt: str
    failureOf: dict[str, Any]
    onFailureTaskId: str
    dependencyCount: int
    onDependencyFailure: Literal["cancel", "run"]
    waitingOn: list[str]
    failedDependency: str
    parentTaskId: str
    rootTaskId: str
    concurrencyKey: str
    debounce: dict[str, Any]
    waitpointId: str
    rateLimits: list[dict[str, Any]]
    require: dict[str, str]
    traceparent: str
    tracestate: str
    rateTaken: list[dict[str, Any]]
    needsAttention: Literal[True]
    finishedAt: str


class _TaskPageRequired(TypedDict):
    tasks: list[TaskSummary]


class TaskPage(_TaskPageRequired, total=False):
    """``TaskPage`` in the OpenAPI document."""

    nextCursor: str


class TaskResponse(TypedDict):
    """``TaskResponse`` in the OpenAPI document."""

    task: Task


class _LinkedTaskRequired(TypedDict):
    taskId: str


class LinkedTask(_LinkedTaskRequired, total=False):
    """``LinkedTask`` in the OpenAPI document."""

    status: Literal["waiting", "queued", "leased", "suspended", "succeeded", "dead", "cancelled", "expired"]
    queue: str


class _TaskLinksRequired(TypedDict):
    taskId: str
    children: list[LinkedTask]
    dependencies: list[LinkedTask]
    dependents: list[LinkedTask]


class TaskLinks(_TaskLinksRequired, total=False):
    """``TaskLinks`` in the OpenAPI document."""

    parent: LinkedTask
    root: LinkedTask
    failureOf: LinkedTask
    onFailure: LinkedTask
    childrenTruncated: Literal[True]
    dependentsTruncated: Literal[True]


class TaskLinksResponse(TypedDict):
    """``TaskLinksResponse`` in the OpenAPI document."""

    links: TaskLinks


class _SubmitResponseRequired(TypedDict):
    task: Task


class SubmitResponse(_SubmitResponseRequired, total=False):
    """``SubmitResponse`` in the OpenAPI document."""

    debounced: bool


class _TaskSpecRequired(TypedDict):
    queue: str
    payload: Any


class TaskSpec(_TaskSpecRequired, total=False):
    """``TaskSpec`` in the OpenAPI document."""

    priority: Literal["critical", "high", "normal", "low"]
    maxAttempts: int
    timeoutSeconds: int
    maxTimeoutSeconds: int
    delaySeconds: int
    backoffBaseSeconds: int
    backoffMaxSeconds: int
    ttlSeconds: int
    expiresAt: str
    concurrencyKey: str
    maxSnoozes: int
    rateLimits: list[dict[str, Any]]
    require: dict[str, Literal["*"] | str]
    idempotencyKey: str
    dependsOn: list[str]
    onDependencyFailure: Literal["cancel", "run"]
    onFailure: dict[str, Any]
    debounce: dict[str, Any]
    traceparent: str
    tracestate: str


class SubmitTasksRequest(TypedDict):
    """``SubmitTasksRequest`` in the OpenAPI document."""

    tasks: list[TaskSpec]


class CancelRequest(TypedDict, total=False):
    """``CancelRequest`` in the OpenAPI document."""

    cascade: bool


class _BatchItemOkRequired(TypedDict):
    ok: Literal[True]
    task: Task


class BatchItemOk(_BatchItemOkRequired, total=False):
    """``BatchItemResult|0`` in the OpenAPI document."""

    created: bool
    debounced: bool


class BatchItemError(TypedDict):
    """``BatchItemResult|1`` in the OpenAPI document."""

    ok: Literal[False]
    error: dict[str, Any]
    status: int


class BatchResults(TypedDict):
    """``BatchResults`` in the OpenAPI document."""

    results: list[BatchItemOk | BatchItemError]


class _AgentSpecRequired(TypedDict):
    name: str
    queues: list[str]


class AgentSpec(_AgentSpecRequired, total=False):
    """``AgentSpec`` in the OpenAPI document."""

    maxConcurrency: int
    interactive: bool
    labels: dict[str, str | list[str]]


class _AgentRequired(TypedDict):
    agentId: str
    name: str
    queues: list[str]
    maxConcurrency: int
    interactive: bool
    labels: dict[str, list[str]]
    createdAt: str


class Agent(_AgentRequired, total=False):
    """``Agent`` in the OpenAPI document."""

    revokedAt: str
    online: bool
    state: Literal["online", "idle", "offline"]
    lastHeartbeatAt: str
    tasksHeld: int


class CreatedAgent(TypedDict):
    """``CreatedAgent`` in the OpenAPI document."""

    agent: Agent
    token: str


class Revoked(TypedDict):
    """``Revoked`` in the OpenAPI document."""

    revoked: Literal[True]


class _QueueStatsRequired(TypedDict):
    name: str
    paused: bool
    limits: dict[str, Any]
    depth: dict[str, Any]
    running: int
    oldestAgeSeconds: float
    truncated: bool


class QueueStats(_QueueStatsRequired, total=False):
    """``QueueStats`` in the OpenAPI document."""

    enforcedLimits: dict[str, Any]


class QueueList(TypedDict):
    """``QueueList`` in the OpenAPI document."""

    queues: list[QueueStats]


class _RateLimitTermsRequired(TypedDict):
    limit: float
    per: Literal["second", "minute", "hour", "day"]


class RateLimitTerms(_RateLimitTermsRequired, total=False):
    """``RateLimitTerms`` in the OpenAPI document."""

    burst: float
    perKey: bool


class _RateLimitRequired(TypedDict):
    name: str
    limit: float
    per: Literal["second", "minute", "hour", "day"]
    source: Literal["set", "declared"]
    window: dict[str, Any]


class RateLimit(_RateLimitRequired, total=False):
    """``RateLimit`` in the OpenAPI document."""

    burst: float
    perKey: bool
    updatedAt: str
    keys: list[dict[str, Any]]


class RateLimitList(TypedDict):
    """``RateLimitList`` in the OpenAPI document."""

    rateLimits: list[RateLimit]


class OpenSessionRequest(TypedDict, total=False):
    """``OpenSessionRequest`` in the OpenAPI document."""

    openId: str
    openSeq: int
    labels: dict[str, str | list[str]]


class Session(TypedDict):
    """``Session`` in the OpenAPI document."""

    sessionId: str
    leaseTtlSeconds: int
    heartbeatIntervalSeconds: int
    expiresAt: str


class RoleLease(TypedDict):
    """``RoleLease`` in the OpenAPI document."""

    role: str
    leaseEpoch: int


class HeldTask(TypedDict):
    """``SessionHoldings/tasks[]`` in the OpenAPI document."""

    taskId: str
    queue: str
    leaseEpoch: int
    attempt: int
    leaseDeadline: str


class SessionHoldings(TypedDict):
    """``SessionHoldings`` in the OpenAPI document."""

    sessionId: str
    expiresAt: str
    tasks: list[HeldTask]
    roles: list[RoleLease]


class SessionResponse(TypedDict):
    """``SessionResponse`` in the OpenAPI document."""

    session: SessionHoldings


class CheckpointItem(TypedDict):
    """``HeartbeatRequest/checkpoints[]`` in the OpenAPI document."""

    taskId: str
    leaseEpoch: int
    checkpoint: Any


class ExtendItem(TypedDict):
    """``HeartbeatRequest/extend[]`` in the OpenAPI document."""

    taskId: str
    leaseEpoch: int
    seconds: int


class _HeartbeatRequestRequired(TypedDict):
    sessionId: str


class HeartbeatRequest(_HeartbeatRequestRequired, total=False):
    """``HeartbeatRequest`` in the OpenAPI document."""

    checkpoints: list[CheckpointItem]
    extend: list[ExtendItem]


class LostLease(TypedDict):
    """``HeartbeatResult/lostLeases[]`` in the OpenAPI document."""

    taskId: str
    leaseEpoch: int


class RolesChanged(TypedDict):
    """``HeartbeatResult/roles`` in the OpenAPI document."""

    picked: list[RoleLease]
    lost: list[RoleLease]


class ExtendedDeadline(TypedDict):
    """``HeartbeatResult/extended[]`` in the OpenAPI document."""

    taskId: str
    leaseEpoch: int
    seconds: float
    leaseDeadline: str


class _HeartbeatResultRequired(TypedDict):
    cancelled: list[str]
    lost: list[str]
    lostLeases: list[LostLease]
    roles: RolesChanged
    held: list[str]
    expiresAt: str


class HeartbeatResult(_HeartbeatResultRequired, total=False):
    """``HeartbeatResult`` in the OpenAPI document."""

    extended: list[ExtendedDeadline]


class _ClaimRequestRequired(TypedDict):
    sessionId: str


class ClaimRequest(_ClaimRequestRequired, total=False):
    """``ClaimRequest`` in the OpenAPI document."""

    claimId: str
    claimSeq: int
    max: int
    queues: list[str]
    idleClaims: int
    listening: bool


class _ClaimedTaskRequired(TypedDict):
    taskId: str
    queue: str
    priority: Literal["critical", "high", "normal", "low"]
    payload: Any
    attempt: int
    leaseEpoch: int
    leaseDeadline: str
    timeoutSeconds: int


class ClaimedTask(_ClaimedTaskRequired, total=False):
    """``ClaimedTask`` in the OpenAPI document."""

    checkpoint: Any
    failureOf: FailureOf
    dependencies: dict[str, DependencyOutcome]
    parentTaskId: str
    rootTaskId: str
    waitpoint: WaitpointResult
    traceparent: str
    tracestate: str


class _ClaimResultRequired(TypedDict):
    tasks: list[ClaimedTask]


class ClaimResult(_ClaimResultRequired, total=False):
    """``ClaimResult`` in the OpenAPI document."""

    retryAfterMs: int


class _CompleteRequestRequired(TypedDict):
    leaseEpoch: int


class CompleteRequest(_CompleteRequestRequired, total=False):
    """``CompleteRequest`` in the OpenAPI document."""

    result: Any
    usage: dict[str, float]
    claimNext: ClaimRequest


class _CompleteItemRequired(TypedDict):
    taskId: str
    leaseEpoch: int


class CompleteItem(_CompleteItemRequired, total=False):
    """``CompleteTasksRequest/tasks[]`` in the OpenAPI document."""

    result: Any
    usage: dict[str, float]


class _CompleteTasksRequestRequired(TypedDict):
    tasks: list[CompleteItem]


class CompleteTasksRequest(_CompleteTasksRequestRequired, total=False):
    """``CompleteTasksRequest`` in the OpenAPI document."""

    claimNext: ClaimRequest


class ClaimError(TypedDict):
    """``Completed/nextError`` in the OpenAPI document."""

    code: str
    message: str


class _CompletedRequired(TypedDict):
    task: Task


class Completed(_CompletedRequired, total=False):
    """``Completed`` in the OpenAPI document."""

    next: ClaimResult
    nextError: ClaimError


class _CompletedManyRequired(TypedDict):
    results: list[BatchItemOk | BatchItemError]


class CompletedMany(_CompletedManyRequired, total=False):
    """``CompletedMany`` in the OpenAPI document."""

    next: ClaimResult
    nextError: dict[str, Any]


class _FailErrorRequired(TypedDict):
    message: str


class FailError(_FailErrorRequired, total=False):
    """``FailRequest/error`` in the OpenAPI document."""

    retryable: bool


class _FailRequestRequired(TypedDict):
    leaseEpoch: int
    error: FailError


class FailRequest(_FailRequestRequired, total=False):
    """``FailRequest`` in the OpenAPI document."""

    retryAfterSeconds: int
    usage: dict[str, float]


class _ReleaseRequestRequired(TypedDict):
    leaseEpoch: int


class ReleaseRequest(_ReleaseRequestRequired, total=False):
    """``ReleaseRequest`` in the OpenAPI document."""

    delaySeconds: int


class _ChildTaskSpecRequired(TypedDict):
    queue: str
    payload: Any
    key: str


class ChildTaskSpec(_ChildTaskSpecRequired, total=False):
    """``SubmitChildrenRequest/tasks[]`` in the OpenAPI document."""

    priority: Literal["critical", "high", "normal", "low"]
    maxAttempts: int
    timeoutSeconds: int
    maxTimeoutSeconds: int
    delaySeconds: int
    backoffBaseSeconds: int
    backoffMaxSeconds: int
    ttlSeconds: int
    expiresAt: str
    concurrencyKey: str
    maxSnoozes: int
    rateLimits: list[dict[str, Any]]
    require: dict[str, Literal["*"] | str]
    dependsOn: list[str]
    onDependencyFailure: Literal["cancel", "run"]
    onFailure: dict[str, Any]
    traceparent: str
    tracestate: str


class SubmitChildrenRequest(TypedDict):
    """``SubmitChildrenRequest`` in the OpenAPI document."""

    parentTaskId: str
    leaseEpoch: int
    tasks: list[ChildTaskSpec]


class _ProgressRequestRequired(TypedDict):
    leaseEpoch: int


class ProgressRequest(_ProgressRequestRequired, total=False):
    """``ProgressRequest`` in the OpenAPI document."""

    percent: float
    message: str
    data: Any


class ProgressResponse(TypedDict):
    """``ProgressResponse`` in the OpenAPI document."""

    progress: TaskProgress


class _ProgressItemRequired(TypedDict):
    taskId: str
    leaseEpoch: int


class ProgressItem(_ProgressItemRequired, total=False):
    """``ProgressBatchRequest/tasks[]`` in the OpenAPI document."""

    percent: float
    message: str
    data: Any


class ProgressBatchRequest(TypedDict):
    """``ProgressBatchRequest`` in the OpenAPI document."""

    tasks: list[ProgressItem]


class ProgressItemOk(TypedDict):
    """``ProgressResults/results[]|0`` in the OpenAPI document."""

    ok: Literal[True]
    progress: TaskProgress


class ProgressItemError(TypedDict):
    """``ProgressResults/results[]|1`` in the OpenAPI document."""

    ok: Literal[False]
    error: dict[str, Any]
    status: int


class ProgressResults(TypedDict):
    """``ProgressResults`` in the OpenAPI document."""

    results: list[ProgressItemOk | ProgressItemError]


class _WaitpointRequired(TypedDict):
    waitpointId: str
    taskId: str
    status: Literal["open", "completed", "rejected", "timedOut", "cancelled"]
    onTimeout: Literal["resume", "fail"]
    timeoutAt: str
    createdAt: str


class Waitpoint(_WaitpointRequired, total=False):
    """``Waitpoint`` in the OpenAPI document."""

    resolvedAt: str


class _WaitpointPageRequired(TypedDict):
    waitpoints: list[Waitpoint]


class WaitpointPage(_WaitpointPageRequired, total=False):
    """``WaitpointPage`` in the OpenAPI document."""

    nextCursor: str


class WaitpointResponse(TypedDict):
    """``WaitpointResponse`` in the OpenAPI document."""

    waitpoint: Waitpoint


class CompleteWaitpointRequest(TypedDict, total=False):
    """``CompleteWaitpointRequest`` in the OpenAPI document."""

    data: Any


class RejectWaitpointRequest(TypedDict):
    """``RejectWaitpointRequest`` in the OpenAPI document."""

    reason: str


class _WaitRequestRequired(TypedDict):
    leaseEpoch: int
    timeoutSeconds: int


class WaitRequest(_WaitRequestRequired, total=False):
    """``WaitRequest`` in the OpenAPI document."""

    onTimeout: Literal["resume", "fail"]
    checkpoint: Any


class WaitResult(TypedDict):
    """``WaitResult`` in the OpenAPI document."""

    task: Task
    waitpoint: Waitpoint
    callbackUrl: str


class Role(TypedDict):
    """``Role`` in the OpenAPI document."""

    role: str
    holder: str | None
    leaseEpoch: int
    since: str | None
    volunteers: list[str]
    registered: list[str]


class RoleList(TypedDict):
    """``RoleList`` in the OpenAPI document."""

    roles: list[Role]


class RoleResponse(TypedDict):
    """``RoleResponse`` in the OpenAPI document."""

    role: Role


class VolunteerRequest(TypedDict):
    """``VolunteerRequest`` in the OpenAPI document."""

    sessionId: str


class _VolunteerResultRequired(TypedDict):
    picked: bool
    role: Role


class VolunteerResult(_VolunteerResultRequired, total=False):
    """``VolunteerResult`` in the OpenAPI document."""

    leaseEpoch: int


class ReleaseRoleRequest(TypedDict):
    """``ReleaseRoleRequest`` in the OpenAPI document."""

    leaseEpoch: int


class _ReleaseRoleResultRequired(TypedDict):
    released: Literal[True]
    role: Role


class ReleaseRoleResult(_ReleaseRoleResultRequired, total=False):
    """``ReleaseRoleResult`` in the OpenAPI document."""

    nextHolder: str


class _WithdrawRequestRequired(TypedDict):
    sessionId: str


class WithdrawRequest(_WithdrawRequestRequired, total=False):
    """``WithdrawRequest`` in the OpenAPI document."""

    leaseEpoch: int


class _WithdrawRoleResultRequired(TypedDict):
    withdrawn: bool
    released: bool
    role: Role


class WithdrawRoleResult(_WithdrawRoleResultRequired, total=False):
    """``WithdrawRoleResult`` in the OpenAPI document."""

    nextHolder: str


class PushTicket(TypedDict):
    """``PushTicket`` in the OpenAPI document."""

    ticket: str
    url: str
    expiresAt: str


BatchItemResult = BatchItemOk | BatchItemError
ProgressItemResult = ProgressItemOk | ProgressItemError

#: Each TypedDict above and the schema it is held to (see ``scripts/generate_types.py``).
OPENAPI_SCHEMAS: dict[str, str] = {
    "Health": "Health",
    "TaskError": "Task/error",
    "FailureOf": "ClaimedTask/failureOf",
    "WaitpointResult": "ClaimedTask/waitpoint",
    "DependencyOutcome": "ClaimedTask/dependencies{}",
    "TaskProgress": "TaskProgress",
    "Task": "Task",
    "TaskSummary": "TaskSummary",
    "TaskPage": "TaskPage",
    "TaskResponse": "TaskResponse",
    "LinkedTask": "LinkedTask",
    "TaskLinks": "TaskLinks",
    "TaskLinksResponse": "TaskLinksResponse",
    "SubmitResponse": "SubmitResponse",
    "TaskSpec": "TaskSpec",
    "SubmitTasksRequest": "SubmitTasksRequest",
    "CancelRequest": "CancelRequest",
    "BatchItemOk": "BatchItemResult|0",
    "BatchItemError": "BatchItemResult|1",
    "BatchResults": "BatchResults",
    "AgentSpec": "AgentSpec",
    "Agent": "Agent",
    "CreatedAgent": "CreatedAgent",
    "Revoked": "Revoked",
    "QueueStats": "QueueStats",
    "QueueList": "QueueList",
    "RateLimitTerms": "RateLimitTerms",
    "RateLimit": "RateLimit",
    "RateLimitList": "RateLimitList",
    "OpenSessionRequest": "OpenSessionRequest",
    "Session": "Session",
    "RoleLease": "RoleLease",
    "HeldTask": "SessionHoldings/tasks[]",
    "SessionHoldings": "SessionHoldings",
    "SessionResponse": "SessionResponse",
    "CheckpointItem": "HeartbeatRequest/checkpoints[]",
    "ExtendItem": "HeartbeatRequest/extend[]",
    "HeartbeatRequest": "HeartbeatRequest",
    "LostLease": "HeartbeatResult/lostLeases[]",
    "RolesChanged": "HeartbeatResult/roles",
    "ExtendedDeadline": "HeartbeatResult/extended[]",
    "HeartbeatResult": "HeartbeatResult",
    "ClaimRequest": "ClaimRequest",
    "ClaimedTask": "ClaimedTask",
    "ClaimResult": "ClaimResult",
    "CompleteRequest": "CompleteRequest",
    "CompleteItem": "CompleteTasksRequest/tasks[]",
    "CompleteTasksRequest": "CompleteTasksRequest",
    "ClaimError": "Completed/nextError",
    "Completed": "Completed",
    "CompletedMany": "CompletedMany",
    "FailError": "FailRequest/error",
    "FailRequest": "FailRequest",
    "ReleaseRequest": "ReleaseRequest",
    "ChildTaskSpec": "SubmitChildrenRequest/tasks[]",
    "SubmitChildrenRequest": "SubmitChildrenRequest",
    "ProgressRequest": "ProgressRequest",
    "ProgressResponse": "ProgressResponse",
    "ProgressItem": "ProgressBatchRequest/tasks[]",
    "ProgressBatchRequest": "ProgressBatchRequest",
    "ProgressItemOk": "ProgressResults/results[]|0",
    "ProgressItemError": "ProgressResults/results[]|1",
    "ProgressResults": "ProgressResults",
    "Waitpoint": "Waitpoint",
    "WaitpointPage": "WaitpointPage",
    "WaitpointResponse": "WaitpointResponse",
    "CompleteWaitpointRequest": "CompleteWaitpointRequest",
    "RejectWaitpointRequest": "RejectWaitpointRequest",
    "WaitRequest": "WaitRequest",
    "WaitResult": "WaitResult",
    "Role": "Role",
    "RoleList": "RoleList",
    "RoleResponse": "RoleResponse",
    "VolunteerRequest": "VolunteerRequest",
    "VolunteerResult": "VolunteerResult",
    "ReleaseRoleRequest": "ReleaseRoleRequest",
    "ReleaseRoleResult": "ReleaseRoleResult",
    "WithdrawRequest": "WithdrawRequest",
    "WithdrawRoleResult": "WithdrawRoleResult",
    "PushTicket": "PushTicket",
}

#: The routes the client covers: (method, path) to (request body, answer), by TypedDict name.
OPENAPI_ROUTES: dict[tuple[str, str], tuple[str | None, str]] = {
    ("GET", "/v1/health"): (None, "Health"),
    ("POST", "/v1/tasks"): ("TaskSpec", "SubmitResponse"),
    ("GET", "/v1/tasks"): (None, "TaskPage"),
    ("POST", "/v1/tasks/batch"): ("SubmitTasksRequest", "BatchResults"),
    ("GET", "/v1/tasks/{taskId}"): (None, "TaskResponse"),
    ("GET", "/v1/tasks/{taskId}/links"): (None, "TaskLinksResponse"),
    ("POST", "/v1/tasks/{taskId}/cancel"): ("CancelRequest", "TaskResponse"),
    ("POST", "/v1/tasks/{taskId}/redrive"): (None, "TaskResponse"),
    ("GET", "/v1/queues"): (None, "QueueList"),
    ("POST", "/v1/agents"): ("AgentSpec", "CreatedAgent"),
    ("DELETE", "/v1/agents/{agentId}"): (None, "Revoked"),
    ("POST", "/v1/agent/session"): ("OpenSessionRequest", "Session"),
    ("GET", "/v1/agent/session"): (None, "SessionResponse"),
    ("POST", "/v1/agent/heartbeat"): ("HeartbeatRequest", "HeartbeatResult"),
    ("POST", "/v1/agent/claim"): ("ClaimRequest", "ClaimResult"),
    ("POST", "/v1/agent/tasks/{taskId}/complete"): ("CompleteRequest", "Completed"),
    ("POST", "/v1/agent/tasks/complete"): ("CompleteTasksRequest", "CompletedMany"),
    ("POST", "/v1/agent/tasks/{taskId}/fail"): ("FailRequest", "TaskResponse"),
    ("POST", "/v1/agent/tasks/{taskId}/release"): ("ReleaseRequest", "TaskResponse"),
    ("POST", "/v1/agent/tasks/batch"): ("SubmitChildrenRequest", "BatchResults"),
    ("POST", "/v1/agent/tasks/{taskId}/progress"): ("ProgressRequest", "ProgressResponse"),
    ("POST", "/v1/agent/tasks/progress"): ("ProgressBatchRequest", "ProgressResults"),
    ("POST", "/v1/agent/tasks/{taskId}/wait"): ("WaitRequest", "WaitResult"),
    ("GET", "/v1/waitpoints"): (None, "WaitpointPage"),
    ("GET", "/v1/waitpoints/{waitpointId}"): (None, "WaitpointResponse"),
    ("POST", "/v1/waitpoints/{waitpointId}/complete"): ("CompleteWaitpointRequest", "WaitpointResponse"),
    ("POST", "/v1/waitpoints/{waitpointId}/reject"): ("RejectWaitpointRequest", "WaitpointResponse"),
    ("GET", "/v1/roles"): (None, "RoleList"),
    ("POST", "/v1/agent/roles/{role}/register"): (None, "RoleResponse"),
    ("POST", "/v1/agent/roles/{role}/volunteer"): ("VolunteerRequest", "VolunteerResult"),
    ("POST", "/v1/agent/roles/{role}/release"): ("ReleaseRoleRequest", "ReleaseRoleResult"),
    ("POST", "/v1/agent/roles/{role}/withdraw"): ("WithdrawRequest", "WithdrawRoleResult"),
    ("POST", "/v1/push-ticket"): (None, "PushTicket"),
    ("POST", "/v1/agent/push-ticket"): (None, "PushTicket"),
}
