"""The event listeners a :class:`~agent_scheduler.Worker` and a :class:`~agent_scheduler.RoleSubscription` keep."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Listeners = dict[str, list[Callable[..., Any]]]


def call_listeners(
    listeners: Listeners, event: str, args: tuple[Any, ...], report: Callable[[BaseException], None]
) -> None:
    """Calls each listener of ``event``; one that throws is reported (unless it listens to errors) and the rest run:
    a throwing listener must not break the loops that emit."""
    for listener in listeners.get(event, []):
        try:
            listener(*args)
        except Exception as error:  # noqa: BLE001
            if event != "error":
                report(error)
