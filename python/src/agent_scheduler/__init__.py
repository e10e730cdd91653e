"""A Python SDK for agent-scheduler: the HTTP API's :class:`Client` and a :class:`Worker` that runs an agent's
tasks with the TypeScript SDK's semantics (leases reckoned on the agent's own clock, results never dropped
silently, idempotent claims and opens, graceful drain).

Each name is imported from its module when first used (PEP 562), so ``import agent_scheduler`` costs a few
milliseconds and a process pays for asyncio and ``urllib`` only once it uses a :class:`Worker` or sends a request
(and for :mod:`ssl` only once it opens a ``wss://`` push connection).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    AgentSchedulerError,
    LeaseLostError,
    NetworkError,
    NonRetryableError,
    SessionLostError,
    TaskError,
    TaskWaitTimeoutError,
)

if TYPE_CHECKING:
    from .client import Client, PushTicketFor, Submitted
    from .push import PushChannel, PushChannelState, PushFrame, PushOptions
    from .roles import RoleLostReason, RoleSubscription
    from .sigv4 import Credentials, MissingExtraError, SigV4Signer, default_credentials
    from .transport import HttpRequest, HttpResponse, RetryPolicy
    from .worker import Handler, LostReason, RoleContext, RoleHandler, Snooze, Suspend, TaskContext, Worker

__version__ = "0.1.0"

_LAZY = {
    "Client": "client",
    "PushTicketFor": "client",
    "Submitted": "client",
    "PushChannel": "push",
    "PushChannelState": "push",
    "PushFrame": "push",
    "PushOptions": "push",
    "RoleLostReason": "roles",
    "RoleSubscription": "roles",
    "Credentials": "sigv4",
    "MissingExtraError": "sigv4",
    "SigV4Signer": "sigv4",
    "default_credentials": "sigv4",
    "HttpRequest": "transport",
    "HttpResponse": "transport",
    "RetryPolicy": "transport",
    "Handler": "worker",
    "LostReason": "worker",
    "RoleContext": "worker",
    "RoleHandler": "worker",
    "Snooze": "worker",
    "Suspend": "worker",
    "TaskContext": "worker",
    "Worker": "worker",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "AgentSchedulerError",
    "Client",
    "Credentials",
    "Handler",
    "HttpRequest",
    "HttpResponse",
    "LeaseLostError",
    "LostReason",
    "MissingExtraError",
    "NetworkError",
    "NonRetryableError",
    "PushChannel",
    "PushChannelState",
    "PushFrame",
    "PushOptions",
    "PushTicketFor",
    "RetryPolicy",
    "RoleContext",
    "RoleHandler",
    "RoleLostReason",
    "RoleSubscription",
    "SessionLostError",
    "SigV4Signer",
    "Snooze",
    "Submitted",
    "Suspend",
    "TaskContext",
    "TaskError",
    "TaskWaitTimeoutError",
    "Worker",
    "default_credentials",
]
