"""OpenTelemetry, when the application has it: the ``opentelemetry-api`` package (module ``opentelemetry``) is
optional, imported the first time it is wanted and never required. Without it a submission carries no trace
context it was not given and a Worker starts no span; nothing more is sent either way (the context rides in the
body).

The trace context is W3C's (``traceparent``, ``tracestate``), made from the current span's context rather than
through the application's propagator: the scheduler keeps that format whatever the application sends elsewhere.
A handler's span is a child of the context its task was submitted with, as the TypeScript SDK's is, so that a
task's life, and the follow-ups its handler submits, form one trace.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
S = TypeVar("S", bound=Mapping[str, Any])

TRACER_NAME = "agent-scheduler"
_TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
_UNSET: Any = object()
_trace: Any = _UNSET


def _api() -> Any:
    """``opentelemetry.trace`` if it can be imported; None otherwise (looked for once)."""
    global _trace
    if _trace is _UNSET:
        try:
            _trace = importlib.import_module("opentelemetry.trace")
        except ImportError:
            _trace = None
    return _trace


def current_trace_context() -> dict[str, str] | None:
    """The W3C trace context of the current span, if there is one and it is valid."""
    trace = _api()
    if trace is None:
        return None
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    found = {"traceparent": f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"}
    state = context.trace_state.to_header() if context.trace_state else ""
    if state:
        found["tracestate"] = state
    return found


def with_trace_context(specs: Sequence[S]) -> list[S]:
    """Specifications with the current span's trace context where they name none; as they are otherwise."""
    if all("traceparent" in s or "tracestate" in s for s in specs):
        return list(specs)
    found = current_trace_context()
    if found is None:
        return list(specs)
    return [s if "traceparent" in s or "tracestate" in s else {**s, **found} for s in specs]  # type: ignore[misc]


def _parent(trace: Any, task: Mapping[str, Any]) -> Any:
    """The context the task was submitted with, as a remote parent; None (the current context) without one."""
    match = _TRACEPARENT.match(str(task.get("traceparent", "")))
    if match is None:
        return None
    trace_state = trace.TraceState.from_header([task["tracestate"]]) if task.get("tracestate") else None
    span_context = trace.SpanContext(
        trace_id=int(match.group(1), 16),
        span_id=int(match.group(2), 16),
        is_remote=True,
        trace_flags=trace.TraceFlags(int(match.group(3), 16)),
        trace_state=trace_state,
    )
    return trace.set_span_in_context(trace.NonRecordingSpan(span_context))


def _span(trace: Any, task: Mapping[str, Any]) -> Any:
    return trace.get_tracer(TRACER_NAME).start_as_current_span(
        f"agent-scheduler.task {task['queue']}",
        context=_parent(trace, task),
        kind=trace.SpanKind.CONSUMER,
        attributes={
            "agent_scheduler.task.id": task["taskId"],
            "agent_scheduler.queue": task["queue"],
            "agent_scheduler.task.attempt": task["attempt"],
            "agent_scheduler.task.lease_epoch": task["leaseEpoch"],
            "messaging.system": "agent-scheduler",
            "messaging.operation.type": "process",
            "messaging.destination.name": task["queue"],
            "messaging.message.id": task["taskId"],
        },
        record_exception=False,
        set_status_on_exception=False,
    )


def _failed(trace: Any, span: Any, error: Exception) -> None:
    span.record_exception(error)
    span.set_status(trace.Status(trace.StatusCode.ERROR, str(error)))


def _ignored(_: str) -> None:
    return None


def _traceparent(span: Any) -> str:
    context = span.get_span_context()
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def in_task_span(
    task: Mapping[str, Any],
    handler: Callable[..., T],
    *,
    is_async: bool,
    on_span: Callable[[str], None] | None = None,
) -> Callable[..., T]:
    """The handler, run in a span (``agent-scheduler.task <queue>``, kind consumer) whose parent is the task's
    trace context, with its id, queue, attempt and lease epoch, marked an error when it raises. It starts where the
    handler runs (a plain function's thread too), so its ``submit`` carries the span's context; ``on_span`` is told
    the span's own context, which the task's outcome is sent with. Without ``opentelemetry``, the handler itself."""
    trace = _api()
    if trace is None:
        return handler
    told = on_span or _ignored
    if is_async:

        @functools.wraps(handler)
        async def run_async(*args: Any) -> Any:
            with _span(trace, task) as span:
                told(_traceparent(span))
                try:
                    return await handler(*args)  # type: ignore[misc]
                except Exception as error:
                    _failed(trace, span, error)
                    raise

        return run_async  # type: ignore[return-value]

    @functools.wraps(handler)
    def run(*args: Any) -> T:
        with _span(trace, task) as span:
            told(_traceparent(span))
            try:
                return handler(*args)
            except Exception as error:
                _failed(trace, span, error)
                raise

    return run
