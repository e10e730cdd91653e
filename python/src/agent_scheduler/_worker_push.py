"""A Worker on the push channel, as the TypeScript SDK's ``worker-push.ts``: while its socket is up, a ``wake`` for one
of the worker's queues ends the claim loop's idle wait, a role grant brings a heartbeat at once (its notices start the
role's handler), and a cancel cancels the handler of the task it names. A channel that connects or goes down also
ends the wait: the next claim says whether the worker listens."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from .push import PushChannel, PushFrame, PushOptions

log = logging.getLogger("agent_scheduler.worker")


@dataclass(frozen=True)
class PushHost:
    """What listening needs of the Worker; called on its event loop."""

    #: The worker's queues; None: all of the agent's.
    queues: Sequence[str] | None
    #: Whether the worker runs (not stopping nor stopped).
    running: Callable[[], bool]
    has_session: Callable[[], bool]
    #: Ends the claim loop's idle wait now, or the next one.
    nudge: Callable[[], None]
    #: A heartbeat now.
    beat: Callable[[], None]
    #: The task held under a lease epoch was cancelled: its handler is cancelled.
    cancelled: Callable[[str, int], None]
    #: The URL of a fresh agent ticket.
    ticket: Callable[[], Awaitable[str]]


class WorkerPush:
    """The push channel of one Worker; ``options`` None when it polls only."""

    def __init__(self, host: PushHost, options: PushOptions | None) -> None:
        self._host = host
        self._options = options
        self._channel: PushChannel | None = None
        #: The channel :meth:`close` closed, for :meth:`aclose` to wait for.
        self._closed: PushChannel | None = None

    @property
    def listening(self) -> bool:
        """Whether the push channel's socket is up now."""
        return self._channel is not None and self._channel.connected

    def open(self) -> None:
        """Starts the channel (once; from the event loop)."""
        host, options = self._host, self._options
        if options is None or self._channel is not None:
            return
        channel = PushChannel(host.ticket, options)
        self._channel = channel

        # A new connection listens but is not idle yet, and a lost one hears nothing: either way, claim now (saying
        # whether it listens) rather than at the end of a wait set for the other case.
        def connected() -> None:
            log.debug("push channel connected")
            host.nudge()

        def disconnected() -> None:
            if self._channel is not channel:
                return
            log.info("push channel down; polling until it is back")
            host.nudge()

        def unavailable(reason: BaseException) -> None:
            log.info("no push channel; polling: %s", reason)

        def failure(error: BaseException) -> None:
            log.debug("push channel connect failed: %s", error)

        channel.on("frame", self._heard)
        channel.on("connected", connected)
        channel.on("disconnected", disconnected)
        channel.on("unavailable", unavailable)
        channel.on("failure", failure)
        channel.start()

    def close(self) -> None:
        """Closes the channel's sockets and stops reconnecting."""
        channel = self._channel
        self._channel = None
        if channel is not None:
            self._closed = channel
            channel.close()

    async def aclose(self, timeout: float = 2.0) -> None:
        """:meth:`close`, waiting (up to ``timeout`` seconds) for the sockets to close."""
        self.close()
        channel, self._closed = self._closed, None
        if channel is not None:
            await channel.aclose(timeout)

    def _heard(self, frame: PushFrame) -> None:
        host = self._host
        if not host.running():
            return
        if frame["type"] == "wake":
            queues = host.queues
            if queues is None or frame["queue"] in queues:
                host.nudge()
        elif frame["type"] == "cancel":
            host.cancelled(frame["taskId"], frame["leaseEpoch"])
        elif frame["type"] == "role" and host.has_session():
            # The grant is in the session's notices: a heartbeat now brings it (and starts the role's handler).
            host.beat()
