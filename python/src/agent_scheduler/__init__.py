"""A Python SDK for agent-scheduler: the HTTP API's :class:`Client` and a :class:`Worker` that runs an agent's
tasks with the TypeScript SDK's semantics (leases reckoned on the agent's own clock, results never dropped
silently, idempotent claims and opens, graceful drain)."""

from .client import Client, Submitted
from .errors import (
    AgentSchedulerError,
    LeaseLostError,
    NetworkError,
    NonRetryableError,
    SessionLostError,
    TaskError,
)
from .roles import RoleLostReason, RoleSubscription
from .sigv4 import Credentials, MissingExtraError, SigV4Signer, default_credentials
from .transport import HttpRequest, HttpResponse, RetryPolicy
from .worker import Handler, LostReason, RoleContext, RoleHandler, Snooze, Suspend, TaskContext, Worker

__version__ = "0.1.0"

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
    "Worker",
    "default_credentials",
]
