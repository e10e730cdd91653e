"""Writes ``src/agent_scheduler/types.py`` from the API's OpenAPI document.

Usage: ``python scripts/generate_types.py openapi.json > src/agent_scheduler/types.py`` (the document is served at
``/v1/openapi.json``). ``tests/test_openapi_types.py`` fails when the file and the document differ, so a change of
the API shows as a failed test, and this script writes the new file.
"""

from __future__ import annotations

import json
import sys
from typing import Any

# (TypedDict name, schema pointer): a component name, then `/field` for a property, `[]` for array items, `{}` for
# additionalProperties, `|n` (after a component name or a step) for the n-th oneOf/anyOf branch. Nested objects named
# here are typed by their name.
COVERED: list[tuple[str, str]] = [
    ("Health", "Health"),
    ("TaskError", "Task/error"),
    ("FailureOf", "ClaimedTask/failureOf"),
    ("WaitpointResult", "ClaimedTask/waitpoint"),
    ("DependencyOutcome", "ClaimedTask/dependencies{}"),
    ("TaskProgress", "TaskProgress"),
    ("Task", "Task"),
    ("TaskSummary", "TaskSummary"),
    ("TaskPage", "TaskPage"),
    ("TaskResponse", "TaskResponse"),
    ("LinkedTask", "LinkedTask"),
    ("TaskLinks", "TaskLinks"),
    ("TaskLinksResponse", "TaskLinksResponse"),
    ("SubmitResponse", "SubmitResponse"),
    ("TaskSpec", "TaskSpec"),
    ("SubmitTasksRequest", "SubmitTasksRequest"),
    ("CancelRequest", "CancelRequest"),
    ("BatchItemOk", "BatchItemResult|0"),
    ("BatchItemError", "BatchItemResult|1"),
    ("BatchResults", "BatchResults"),
    ("AgentSpec", "AgentSpec"),
    ("Agent", "Agent"),
    ("CreatedAgent", "CreatedAgent"),
    ("Revoked", "Revoked"),
    ("QueueStats", "QueueStats"),
    ("QueueList", "QueueList"),
    ("RateLimitTerms", "RateLimitTerms"),
    ("RateLimit", "RateLimit"),
    ("RateLimitList", "RateLimitList"),
    ("OpenSessionRequest", "OpenSessionRequest"),
    ("Session", "Session"),
    ("RoleLease", "RoleLease"),
    ("HeldTask", "SessionHoldings/tasks[]"),
    ("SessionHoldings", "SessionHoldings"),
    ("SessionResponse", "SessionResponse"),
    ("CheckpointItem", "HeartbeatRequest/checkpoints[]"),
    ("ExtendItem", "HeartbeatRequest/extend[]"),
    ("HeartbeatRequest", "HeartbeatRequest"),
    ("LostLease", "HeartbeatResult/lostLeases[]"),
    ("RolesChanged", "HeartbeatResult/roles"),
    ("ExtendedDeadline", "HeartbeatResult/extended[]"),
    ("HeartbeatResult", "HeartbeatResult"),
    ("ClaimRequest", "ClaimRequest"),
    ("ClaimedTask", "ClaimedTask"),
    ("ClaimResult", "ClaimResult"),
    ("CompleteRequest", "CompleteRequest"),
    ("CompleteItem", "CompleteTasksRequest/tasks[]"),
    ("CompleteTasksRequest", "CompleteTasksRequest"),
    ("ClaimError", "Completed/nextError"),
    ("Completed", "Completed"),
    ("CompletedMany", "CompletedMany"),
    ("FailError", "FailRequest/error"),
    ("FailRequest", "FailRequest"),
    ("ReleaseRequest", "ReleaseRequest"),
    ("ChildTaskSpec", "SubmitChildrenRequest/tasks[]"),
    ("SubmitChildrenRequest", "SubmitChildrenRequest"),
    ("ProgressRequest", "ProgressRequest"),
    ("ProgressResponse", "ProgressResponse"),
    ("ProgressItem", "ProgressBatchRequest/tasks[]"),
    ("ProgressBatchRequest", "ProgressBatchRequest"),
    ("ProgressItemOk", "ProgressResults/results[]|0"),
    ("ProgressItemError", "ProgressResults/results[]|1"),
    ("ProgressResults", "ProgressResults"),
    ("Waitpoint", "Waitpoint"),
    ("WaitpointPage", "WaitpointPage"),
    ("WaitpointResponse", "WaitpointResponse"),
    ("CompleteWaitpointRequest", "CompleteWaitpointRequest"),
    ("RejectWaitpointRequest", "RejectWaitpointRequest"),
    ("WaitRequest", "WaitRequest"),
    ("WaitResult", "WaitResult"),
    ("Role", "Role"),
    ("RoleList", "RoleList"),
    ("RoleResponse", "RoleResponse"),
    ("VolunteerRequest", "VolunteerRequest"),
    ("VolunteerResult", "VolunteerResult"),
    ("ReleaseRoleRequest", "ReleaseRoleRequest"),
    ("ReleaseRoleResult", "ReleaseRoleResult"),
    ("WithdrawRequest", "WithdrawRequest"),
    ("WithdrawRoleResult", "WithdrawRoleResult"),
    ("PushTicket", "PushTicket"),
]

# The routes the client covers: (method, path) -> (request body, 2xx answer), by TypedDict name.
ROUTES: list[tuple[str, str, str | None, str]] = [
    ("GET", "/v1/health", None, "Health"),
    ("POST", "/v1/tasks", "TaskSpec", "SubmitResponse"),
    ("GET", "/v1/tasks", None, "TaskPage"),
    ("POST", "/v1/tasks/batch", "SubmitTasksRequest", "BatchResults"),
    ("GET", "/v1/tasks/{taskId}", None, "TaskResponse"),
    ("GET", "/v1/tasks/{taskId}/links", None, "TaskLinksResponse"),
    ("POST", "/v1/tasks/{taskId}/cancel", "CancelRequest", "TaskResponse"),
    ("POST", "/v1/tasks/{taskId}/redrive", None, "TaskResponse"),
    ("GET", "/v1/queues", None, "QueueList"),
    ("POST", "/v1/agents", "AgentSpec", "CreatedAgent"),
    ("DELETE", "/v1/agents/{agentId}", None, "Revoked"),
    ("POST", "/v1/agent/session", "OpenSessionRequest", "Session"),
    ("GET", "/v1/agent/session", None, "SessionResponse"),
    ("POST", "/v1/agent/heartbeat", "HeartbeatRequest", "HeartbeatResult"),
    ("POST", "/v1/agent/claim", "ClaimRequest", "ClaimResult"),
    ("POST", "/v1/agent/tasks/{taskId}/complete", "CompleteRequest", "Completed"),
    ("POST", "/v1/agent/tasks/complete", "CompleteTasksRequest", "CompletedMany"),
    ("POST", "/v1/agent/tasks/{taskId}/fail", "FailRequest", "TaskResponse"),
    ("POST", "/v1/agent/tasks/{taskId}/release", "ReleaseRequest", "TaskResponse"),
    ("POST", "/v1/agent/tasks/batch", "SubmitChildrenRequest", "BatchResults"),
    ("POST", "/v1/agent/tasks/{taskId}/progress", "ProgressRequest", "ProgressResponse"),
    ("POST", "/v1/agent/tasks/progress", "ProgressBatchRequest", "ProgressResults"),
    ("POST", "/v1/agent/tasks/{taskId}/wait", "WaitRequest", "WaitResult"),
    ("GET", "/v1/waitpoints", None, "WaitpointPage"),
    ("GET", "/v1/waitpoints/{waitpointId}", None, "WaitpointResponse"),
    ("POST", "/v1/waitpoints/{waitpointId}/complete", "CompleteWaitpointRequest", "WaitpointResponse"),
    ("POST", "/v1/waitpoints/{waitpointId}/reject", "RejectWaitpointRequest", "WaitpointResponse"),
    ("GET", "/v1/roles", None, "RoleList"),
    ("POST", "/v1/agent/roles/{role}/register", None, "RoleResponse"),
    ("POST", "/v1/agent/roles/{role}/volunteer", "VolunteerRequest", "VolunteerResult"),
    ("POST", "/v1/agent/roles/{role}/release", "ReleaseRoleRequest", "ReleaseRoleResult"),
    ("POST", "/v1/agent/roles/{role}/withdraw", "WithdrawRequest", "WithdrawRoleResult"),
    ("POST", "/v1/push-ticket", None, "PushTicket"),
    ("POST", "/v1/agent/push-ticket", None, "PushTicket"),
]


def resolve(document: dict[str, Any], pointer: str) -> dict[str, Any]:
    """The schema `pointer` names (see COVERED), `$ref`s followed."""
    schemas: dict[str, Any] = document["components"]["schemas"]
    name, _, rest = pointer.partition("/")
    branch = None
    if "|" in name:
        name, branch = name.split("|")
    schema = deref(document, schemas[name])
    if branch is not None:
        schema = deref(document, (schema.get("oneOf") or schema["anyOf"])[int(branch)])
    for step in [s for s in rest.split("/") if s] if rest else []:
        path, _, step_branch = step.partition("|")
        field = path.rstrip("[]{}")
        schema = deref(document, schema["properties"][field])
        suffix = path[len(field) :]
        while suffix:
            schema = deref(document, schema["items"] if suffix.startswith("[]") else schema["additionalProperties"])
            suffix = suffix[2:]
        if step_branch:
            schema = deref(document, (schema.get("oneOf") or schema["anyOf"])[int(step_branch)])
    return schema


def deref(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def python_type(document: dict[str, Any], schema: dict[str, Any], names: dict[int, str]) -> str:
    ref = schema.get("$ref")
    target = deref(document, schema)
    if id(target) in names:
        return names[id(target)]
    if ref is not None:
        return python_type(document, target, names)
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return " | ".join(dict.fromkeys(python_type(document, s, names) for s in schema[key]))
    if "const" in schema:
        return f"Literal[{json.dumps(schema['const']).replace('true', 'True').replace('false', 'False')}]"
    if "enum" in schema:
        return "Literal[" + ", ".join(json.dumps(v) for v in schema["enum"]) + "]"
    kind = schema.get("type")
    if kind == "string":
        return "str"
    if kind == "integer":
        return "int"
    if kind == "number":
        return "float"
    if kind == "boolean":
        return "bool"
    if kind == "null":
        return "None"
    if kind == "array":
        return f"list[{python_type(document, schema['items'], names)}]"
    if kind == "object":
        extra = schema.get("additionalProperties")
        if not schema.get("properties") and isinstance(extra, dict) and extra:
            return f"dict[str, {python_type(document, extra, names)}]"
        return "dict[str, Any]"
    return "Any"


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as file:
        document = json.load(file)
    names = {id(resolve(document, pointer)): name for name, pointer in COVERED}
    out = [
        '"""The wire shapes of the routes the client covers, as the OpenAPI document declares them.',
        "",
        "Written by ``scripts/generate_types.py`` from ``/v1/openapi.json``; ``tests/test_openapi_types.py`` holds",
        "every field of every TypedDict here to the document, and back. Required fields are declared on a",
        "``_…Required`` base, optional ones on the class itself (``total=False``), as Python 3.10 has no",
        "``NotRequired``.",
        '"""',
        "",
        "from typing import Any, Literal, TypedDict",
        "",
    ]
    for name, pointer in COVERED:
        schema = resolve(document, pointer)
        required = set(schema.get("required", []))
        fields = schema.get("properties", {})
        req = [(k, v) for k, v in fields.items() if k in required]
        opt = [(k, v) for k, v in fields.items() if k not in required]
        doc = f'    """``{pointer}`` in the OpenAPI document."""'
        if req and opt:
            out += ["", f"class _{name}Required(TypedDict):"]
            out += [f"    {k}: {python_type(document, v, names)}" for k, v in req]
            out += ["", "", f"class {name}(_{name}Required, total=False):", doc, ""]
            out += [f"    {k}: {python_type(document, v, names)}" for k, v in opt]
        else:
            total = "" if req or not opt else ", total=False"
            out += ["", f"class {name}(TypedDict{total}):", doc, ""]
            out += [f"    {k}: {python_type(document, v, names)}" for k, v in (req or opt)]
        out.append("")
    out += [
        "",
        "BatchItemResult = BatchItemOk | BatchItemError",
        "ProgressItemResult = ProgressItemOk | ProgressItemError",
        "",
        "#: Each TypedDict above and the schema it is held to (see ``scripts/generate_types.py``).",
        "OPENAPI_SCHEMAS: dict[str, str] = {",
        *[f'    "{name}": "{pointer}",' for name, pointer in COVERED],
        "}",
        "",
        "#: The routes the client covers: (method, path) to (request body, answer), by TypedDict name.",
        "OPENAPI_ROUTES: dict[tuple[str, str], tuple[str | None, str]] = {",
        *[
            f'    ("{m}", "{p}"): ({json.dumps(rq) if rq else "None"}, "{rs}"),'
            for m, p, rq, rs in ROUTES
        ],
        "}",
    ]
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
