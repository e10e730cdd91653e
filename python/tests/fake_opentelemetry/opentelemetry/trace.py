"""The part of ``opentelemetry.trace`` the SDK uses, as the real API behaves: a current span per context (a
``ContextVar``, so a thread pool's thread starts with none), children in their parent's trace, spans kept when ended."""

from __future__ import annotations

import contextlib
import contextvars
import enum
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

FINISHED: list[Span] = []


class TraceFlags(int):
    pass


class TraceState:
    def __init__(self, header: str = "") -> None:
        self.header = header

    @classmethod
    def from_header(cls, headers: list[str]) -> TraceState:
        return cls(",".join(headers))

    def to_header(self) -> str:
        return self.header

    def __bool__(self) -> bool:
        return bool(self.header)


@dataclass(frozen=True)
class SpanContext:
    trace_id: int
    span_id: int
    is_remote: bool
    trace_flags: int = 0
    trace_state: TraceState | None = None

    @property
    def is_valid(self) -> bool:
        return self.trace_id != 0 and self.span_id != 0


INVALID = SpanContext(0, 0, False)


class SpanKind(enum.Enum):
    INTERNAL = 0
    CONSUMER = 4


class StatusCode(enum.Enum):
    UNSET = 0
    ERROR = 2


@dataclass(frozen=True)
class Status:
    status_code: StatusCode
    description: str | None = None


@dataclass
class Span:
    name: str
    context: SpanContext
    parent: SpanContext | None = None
    kind: SpanKind = SpanKind.INTERNAL
    attributes: dict[str, Any] = field(default_factory=dict)
    status: Status = Status(StatusCode.UNSET)
    exceptions: list[BaseException] = field(default_factory=list)

    def get_span_context(self) -> SpanContext:
        return self.context

    def set_status(self, status: Status) -> None:
        self.status = status

    def record_exception(self, exception: BaseException) -> None:
        self.exceptions.append(exception)


class NonRecordingSpan(Span):
    def __init__(self, context: SpanContext) -> None:
        super().__init__("", context)


_CURRENT: contextvars.ContextVar[Span | None] = contextvars.ContextVar("span", default=None)
_NONE = NonRecordingSpan(INVALID)


def get_current_span() -> Span:
    return _CURRENT.get() or _NONE


def set_span_in_context(span: Span) -> dict[str, Span]:
    return {"span": span}


class Tracer:
    @contextlib.contextmanager
    def start_as_current_span(
        self,
        name: str,
        *,
        context: dict[str, Span] | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: dict[str, Any] | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> Iterator[Span]:
        parent = (context or {}).get("span") or get_current_span()
        inherited = parent.context if parent.context.is_valid else None
        span = Span(
            name,
            SpanContext(
                trace_id=inherited.trace_id if inherited else random.getrandbits(128),
                span_id=random.getrandbits(64),
                is_remote=False,
                trace_flags=TraceFlags(1),
            ),
            inherited,
            kind,
            dict(attributes or {}),
        )
        token = _CURRENT.set(span)
        try:
            yield span
        finally:
            _CURRENT.reset(token)
            FINISHED.append(span)


def get_tracer(name: str, version: str | None = None) -> Tracer:
    return Tracer()
