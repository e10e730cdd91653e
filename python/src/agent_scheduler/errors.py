"""Typed errors of the SDK.

Every failed call raises an :class:`AgentSchedulerError` carrying the HTTP status, the server's stable ``code`` and
its request id; the two codes a worker must react to have classes of their own.
"""

from __future__ import annotations


class AgentSchedulerError(Exception):
    """A call the server refused, or that got no answer (``status`` 0)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        #: The HTTP status; 0 when no response was received.
        self.status = status
        #: The server's stable error code (``TaskNotFound``, ``LeaseLost``, …).
        self.code = code
        self.message = message
        self.request_id = request_id
        #: Seconds the server asked the caller to wait before trying again, when it said so.
        self.retry_after = retry_after

    def __str__(self) -> str:
        return f"{self.code} ({self.status}): {self.message}"


class LeaseLostError(AgentSchedulerError):
    """The lease presented is no longer held: expired, reclaimed, cancelled or finished differently."""


class SessionLostError(AgentSchedulerError):
    """The session presented is not the agent's live session; open a new one."""


class NetworkError(AgentSchedulerError):
    """No response was received: the connection failed or the attempt timed out."""


class TaskWaitTimeoutError(AgentSchedulerError):
    """The task did not end within the wait's ``timeout`` (``Client.wait_for_task``); it may still end later."""

    def __init__(self, task_id: str, timeout: float, last_status: str | None) -> None:
        seen = f" (it was {last_status})" if last_status else ""
        super().__init__(0, "WaitTimeout", f"task {task_id} did not end within {timeout:g} s{seen}")
        self.task_id = task_id
        #: The wait's timeout, in seconds.
        self.timeout = timeout
        #: The task's status when last heard of, if it was.
        self.last_status = last_status


class NonRetryableError(Exception):
    """Raise from a task handler when trying again cannot help: the task goes to ``dead``, not back to its queue.

    Any exception with a ``retryable`` attribute set to ``False`` has the same effect.
    """

    retryable = False


class TaskError(Exception):
    """Something went wrong about one task (reported, never raised by the Worker's loops)."""

    def __init__(self, task_id: str, message: str) -> None:
        super().__init__(f"task {task_id} {message}")
        self.task_id = task_id


def error_for_response(
    status: int, code: str, message: str, *, request_id: str | None = None, retry_after: float | None = None
) -> AgentSchedulerError:
    """The error for a non-2xx answer, as the class that matches its code."""
    kind = AgentSchedulerError
    if status == 409 and code == "LeaseLost":
        kind = LeaseLostError
    elif status == 409 and code == "SessionLost":
        kind = SessionLostError
    return kind(status, code, message, request_id=request_id, retry_after=retry_after)


def is_refusal(error: BaseException) -> bool:
    """The server refused a call for what its body carries (too large, nested too deep): sent again, refused again."""
    return isinstance(error, AgentSchedulerError) and error.status in (400, 413)
