"""Roles: one agent at a time holds each (a leader, the one that runs a schedule), as the TypeScript SDK's
``RoleSubscription``.

A :class:`RoleSubscription` follows one role for an agent: :meth:`~RoleSubscription.volunteer` joins the role's
candidates, ``got_role`` fires when this agent is granted it, ``lost_role`` when the grant ends (released, taken away,
or the session lost), and :meth:`~RoleSubscription.have_role` says whether it holds it now.

A role lives as long as the agent's session: the subscription rides on a :class:`~agent_scheduler.Worker`'s session
and heartbeats (one write keeps every task and role of the agent). The session is reckoned on the agent's own clock,
so a holder cut off from the server loses the role by that reckoning (``lost_role`` with ``session``) before the
server could give it to another agent. Without a worker the subscription keeps a session of its own, which replaces
any other session of the same agent: an agent that also runs tasks gives its Worker to the subscription instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from ._listeners import Listeners, call_listeners
from .client import Client
from .errors import AgentSchedulerError, SessionLostError
from .types import HeartbeatResult, RoleLease, Session, SessionHoldings
from .worker import Worker

__all__ = ["RoleLostReason", "RoleSubscription"]

T = TypeVar("T")
log = logging.getLogger("agent_scheduler.roles")

RoleLostReason = Literal["released", "lost", "session"]
"""Why a grant of a role ended: this agent gave it up (or its worker stopped); the server gave it to another volunteer
while this agent was away; or the agent's session ended (or is over by the agent's own reckoning), and every role it
held with it."""

RoleEvent = Literal["got_role", "lost_role", "error"]


@dataclass(frozen=True)
class _Held:
    lease_epoch: int
    session_id: str


@dataclass(frozen=True)
class _Volunteering:
    session_id: str
    done: asyncio.Future[bool]


class RoleSubscription:
    """Follows ``role`` for the agent of ``client``, on the session of ``worker`` (default: a session of its own).

    Events (:meth:`on`): ``got_role(lease)``, ``lost_role(lease, reason)``, ``error(exception)``; ``lease`` is
    ``{"role": …, "leaseEpoch": …}``. Listeners run on the event loop and must not block. Use it from the event loop
    the worker runs on.
    """

    def __init__(self, client: Client, role: str, *, worker: Worker | None = None) -> None:
        self.client = client
        self.role = role
        self._owns_worker = worker is None
        self._worker = worker if worker is not None else Worker(client, None)
        self._held: _Held | None = None
        #: The highest epoch this agent held: a late notice of an older grant is not news.
        self._latest_epoch = 0
        self._wanted = False
        #: The epoch of a grant given up here whose release failed: still this agent's on the server.
        self._unreleased: int | None = None
        self._volunteering: _Volunteering | None = None
        self._listeners: Listeners = {}
        self._background: set[asyncio.Future[Any]] = set()
        self._unfollow = self._worker.follow(self)

    def on(self, event: RoleEvent, listener: Callable[..., Any]) -> None:
        """Calls ``listener`` on ``event``."""
        self._listeners.setdefault(event, []).append(listener)

    @property
    def worker(self) -> Worker:
        """The worker whose session holds the role."""
        return self._worker

    def have_role(self) -> bool:
        """Whether this agent holds the role now (as far as its last word from the server says, and its session
        lasts by its own reckoning)."""
        return self._held is not None and self._held.session_id == self._worker.session_id

    @property
    def lease_epoch(self) -> int | None:
        """The epoch of the grant held, to fence work done in the role; None when not held."""
        return self._held.lease_epoch if self._held is not None and self.have_role() else None

    async def volunteer(self) -> bool:
        """Joins the role's candidates, now and again under every new session, until :meth:`release` or
        :meth:`close`. Returns whether the role was granted at once; ``got_role`` fires either way when it is."""
        self._wanted = True
        if self._owns_worker and not self._worker.started:
            await self._worker.start()
        # Released while the session was opening.
        if not self._wanted:
            return False
        session_id = self._worker.session_id
        # Without a session the worker is opening one, and its opening volunteers.
        return await self._volunteer_under(session_id) if session_id else False

    async def release(self) -> None:
        """Gives the role up (if held) and stops volunteering: the next live volunteer is granted it, and a
        candidacy still waiting leaves the line, so the role is not granted to this agent later. :meth:`volunteer`
        joins again."""
        self._wanted = False
        volunteering = self._volunteering
        # A volunteer call still in flight would land after the withdraw and leave this agent in line: its answer
        # comes first (a grant it brings is then released below).
        if volunteering is not None:
            await asyncio.wait({volunteering.done})
            # What it came to was heard by whoever awaited it, or reported.
            if not volunteering.done.cancelled():
                volunteering.done.exception()
        self._volunteering = None
        held = self._held.lease_epoch if self._held is not None else self._take_unreleased()
        if held is None:
            if volunteering is not None:
                await self._withdraw(volunteering.session_id)
            return
        # Stop acting in the role first: the release hands it to the next volunteer the moment it commits, before
        # its answer is back here.
        self._lose("released")
        try:
            await self._call(lambda: self.client.release_role(self.role, {"leaseEpoch": held}))
        except AgentSchedulerError as error:
            # Gone already: it was taken while this agent was away.
            if error.code == "RoleNotHeld":
                return
            # Still ours on the server, and idle: the next release (or close) gives it back.
            self._unreleased = held
            raise

    async def close(self) -> None:
        """Releases the role, stops following it and, if the subscription keeps its own session, ends it."""
        try:
            await self.release()
        finally:
            self._unfollow()
            if self._owns_worker:
                await self._worker.stop(drain=False)

    # What the worker's session says (called by the worker on its event loop)

    def session_opened(self, session: Session) -> None:
        if self._wanted:
            self._background_call(self._volunteer_under(session["sessionId"]))

    def heartbeat_answered(self, result: HeartbeatResult, session: Session) -> None:
        roles = result["roles"]
        for lease in roles["lost"]:
            if lease["role"] == self.role and self._held is not None and self._held.lease_epoch == lease["leaseEpoch"]:
                self._lose("lost")
        for lease in roles["picked"]:
            if lease["role"] != self.role:
                continue
            if self._wanted:
                self._gain(lease["leaseEpoch"], session["sessionId"])
            else:
                # Granted after this agent stopped wanting it: give it to the next volunteer rather than sit on it.
                self._give_back(lease["leaseEpoch"])

    def holdings_read(self, holdings: SessionHoldings, session: Session) -> None:
        """What the session holds, read after a notice may have been lost: a grant this agent never heard of."""
        lease = next((r for r in holdings["roles"] if r["role"] == self.role), None)
        if lease is None or (self._held is not None and self._held.lease_epoch == lease["leaseEpoch"]):
            return
        if self._wanted:
            self._gain(lease["leaseEpoch"], session["sessionId"])
        else:
            self._give_back(lease["leaseEpoch"])

    def session_ended(self, session: Session) -> None:
        if self._held is not None and self._held.session_id == session["sessionId"]:
            self._lose("session")

    # Inside

    async def _call(self, call: Callable[[], T]) -> T:
        return await self._worker.io(lambda _: call())

    def _take_unreleased(self) -> int | None:
        epoch, self._unreleased = self._unreleased, None
        return epoch

    async def _withdraw(self, session_id: str) -> None:
        """Leaves the line under ``session_id``; if the server had granted the role meanwhile, that grant is given
        up too."""
        # A session that is over took its candidacy with it.
        with contextlib.suppress(SessionLostError):
            await self._call(lambda: self.client.withdraw_from_role(self.role, {"sessionId": session_id}))

    def _volunteer_under(self, session_id: str) -> asyncio.Future[bool]:
        if self._volunteering is not None and self._volunteering.session_id == session_id:
            return self._volunteering.done

        async def volunteer() -> bool:
            try:
                result = await self._call(
                    lambda: self.client.volunteer_for_role(self.role, {"sessionId": session_id})
                )
            except Exception as error:
                if self._volunteering is not None and self._volunteering.session_id == session_id:
                    self._volunteering = None
                # Already a candidate under this session (a retried call): a grant shows in the next heartbeat.
                if isinstance(error, AgentSchedulerError) and error.code == "RoleAlreadyVolunteered":
                    return self.have_role()
                # The worker opens a new session and this volunteers again under it.
                if isinstance(error, SessionLostError):
                    return False
                raise
            epoch = result.get("leaseEpoch")
            if result["picked"] and epoch is not None:
                self._gain(epoch, session_id)
            return result["picked"] and self.have_role()

        done = asyncio.ensure_future(volunteer())
        self._volunteering = _Volunteering(session_id, done)
        return done

    def _give_back(self, lease_epoch: int) -> None:
        """Releases a grant this agent no longer wants. One it held (or holds) is :meth:`release`'s to give up."""
        if lease_epoch <= self._latest_epoch:
            return

        async def give_back() -> None:
            try:
                await self._call(lambda: self.client.release_role(self.role, {"leaseEpoch": lease_epoch}))
            except AgentSchedulerError as error:
                # Passed on already.
                if error.code != "RoleNotHeld":
                    raise

        self._background_call(give_back())

    def _gain(self, lease_epoch: int, session_id: str) -> None:
        if lease_epoch <= self._latest_epoch:
            return
        # A grant made under a session this agent has since given up (its answer came late): that session's roles
        # pass on without it, and acting on it could overlap the next holder.
        if session_id != self._worker.session_id:
            return
        if self._held is not None:
            self._lose("lost")
        self._latest_epoch = lease_epoch
        self._held = _Held(lease_epoch, session_id)
        log.info("role %s granted (epoch %d)", self.role, lease_epoch)
        self._emit("got_role", self._lease(lease_epoch))

    def _lose(self, reason: RoleLostReason) -> None:
        held = self._held
        if held is None:
            return
        self._held = None
        # The server no longer counts this agent among the candidates: a later volunteer() must ask it again.
        if self._volunteering is not None and self._volunteering.session_id == held.session_id:
            self._volunteering = None
        log.info("role %s lost (%s)", self.role, reason)
        self._emit("lost_role", self._lease(held.lease_epoch), reason)

    def _lease(self, lease_epoch: int) -> RoleLease:
        return {"role": self.role, "leaseEpoch": lease_epoch}

    def _background_call(self, work: Awaitable[Any]) -> None:
        future = asyncio.ensure_future(work)
        self._background.add(future)

        def settled(done: asyncio.Future[Any]) -> None:
            self._background.discard(done)
            if not done.cancelled() and done.exception() is not None:
                self._report(done.exception())

        future.add_done_callback(settled)

    def _emit(self, event: RoleEvent, *args: Any) -> None:
        call_listeners(self._listeners, event, args, self._report)

    def _report(self, error: BaseException | None) -> None:
        if error is None:
            return
        log.warning("role %s: %s", self.role, error)
        self._emit("error", error)
