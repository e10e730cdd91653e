"""Roles against the local stack: one holder at a time, handed over when the holder releases (as
``sdk-roles.test.ts`` covers ``RoleSubscription`` for the TypeScript SDK), and a registration without volunteering
(``register_role``)."""

from __future__ import annotations

import asyncio
import unittest

from agent_scheduler import AgentSchedulerError, Client, RoleContext, RoleSubscription, Worker
from agent_scheduler.types import RoleLease

from .stack import ENDPOINT, agent, needs_stack, operator, wait_for

ROLE = "py-leader"


@needs_stack
class RoleSubscriptionTest(unittest.IsolatedAsyncioTestCase):
    async def test_one_holder_at_a_time_and_the_next_in_line_gets_the_role_on_release(self) -> None:
        # Prepare: two agents follow the role, each on a session of its own. (A holder cut off is in test_worker's
        # lease test, which cuts a worker off for longer than its lease.)
        first = RoleSubscription(agent("py-roles"), ROLE)
        second = RoleSubscription(agent("py-roles"), ROLE)
        events: list[str] = []
        overlaps: list[str] = []

        def follow(name: str, subscription: RoleSubscription) -> None:
            def got(_lease: RoleLease) -> None:
                events.append(f"{name} got")
                if first.have_role() and second.have_role():
                    overlaps.append(name)

            def lost(_lease: RoleLease, reason: str) -> None:
                events.append(f"{name} lost {reason}")

            subscription.on("got_role", got)
            subscription.on("lost_role", lost)

        follow("first", first)
        follow("second", second)
        ops = operator()

        async def holder_epoch() -> int:
            roles = await asyncio.to_thread(ops.list_roles)
            return next(r["leaseEpoch"] for r in roles if r["role"] == ROLE)

        try:
            # Act: the first volunteer is granted the role, the second waits in line; the first releases it, and
            # then volunteers again, behind the second.
            granted = (await first.volunteer(), await second.volunteer())
            epoch_of_first = first.lease_epoch
            held_by_first = await holder_epoch()
            await first.release()
            await wait_for(second.have_role, 20)
            epoch_of_second = second.lease_epoch
            held_by_second = await holder_epoch()
            queued_again = await first.volunteer()
            # The second gives it up by closing: the first, in line again, is granted it.
            await second.close()
            await wait_for(first.have_role, 20)
        finally:
            await asyncio.gather(first.close(), second.close())

        # Assess: one holder at a time, each grant a new epoch, the server's holder the one that says it holds it.
        self.assertEqual(granted, (True, False))
        self.assertFalse(queued_again)
        self.assertIsNotNone(epoch_of_first)
        self.assertEqual(held_by_first, epoch_of_first)
        self.assertEqual(held_by_second, epoch_of_second)
        self.assertGreater(epoch_of_second or 0, epoch_of_first or 0)
        self.assertEqual(overlaps, [])
        self.assertEqual(
            events,
            [
                "first got",
                "first lost released",
                "second got",
                "second lost released",
                "first got",
                "first lost released",
            ],
        )

    async def test_a_worker_runs_its_role_handler_while_it_holds_the_role_and_joins_the_line_again(self) -> None:
        # Prepare: a worker with no task handler holds a role; its handler gives the role up on its first grant and
        # keeps it on the next, until the worker stops.
        epochs: list[int] = []
        cancelled: list[bool] = []

        async def lead(ctx: RoleContext) -> None:
            epochs.append(ctx.lease_epoch)
            if len(epochs) == 1:
                return
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                cancelled.append(ctx.cancelled.is_set())
                raise

        worker = Worker(agent("py-roles"), None, roles={"py-worker-leader": lead}, poll_interval=(0.02, 0.2))
        events: list[str] = []
        worker.on("got_role", lambda lease: events.append(f"got {lease['leaseEpoch']}"))
        worker.on("lost_role", lambda lease, reason: events.append(f"lost {lease['leaseEpoch']} {reason}"))

        # Act
        await worker.start()
        await wait_for(lambda: len(epochs) >= 2, 20)
        await worker.stop()

        # Assess: each grant a new epoch; the second handler was cancelled when the stop gave the role up.
        first, second = epochs
        self.assertGreater(second, first)
        self.assertEqual(events, [f"got {first}", f"lost {first} released", f"got {second}", f"lost {second} released"])
        self.assertEqual(cancelled, [True])
        roles = await asyncio.to_thread(operator().list_roles)
        self.assertIsNone(next(r for r in roles if r["role"] == "py-worker-leader")["holder"])



@needs_stack
class RoleRoutesTest(unittest.TestCase):
    def test_an_agent_registers_for_a_role_once_without_volunteering(self) -> None:
        # Prepare: an agent with its own token (its id is in the registration's answer).
        ops = operator()
        assert ENDPOINT is not None
        created = ops.create_agent({"name": "py-registrar", "queues": ["py-roles"]})
        agent_id = created["agent"]["agentId"]
        client = Client(ENDPOINT, token=created["token"])

        # Act: it registers for a role twice, then the operator lists the roles.
        registered = client.register_role("py-registered")
        with self.assertRaises(AgentSchedulerError) as twice:
            client.register_role("py-registered")
        listed = next(r for r in ops.list_roles() if r["role"] == "py-registered")

        # Assess: registered, not in line, and the role held by nobody; a second registration is a conflict.
        expected = {"role": "py-registered", "holder": None, "volunteers": [], "registered": [agent_id]}
        self.assertEqual({k: registered[k] for k in ("role", "holder", "volunteers", "registered")}, expected)
        self.assertEqual({k: listed[k] for k in ("role", "holder", "volunteers", "registered")}, expected)
        self.assertEqual(twice.exception.status, 409)


if __name__ == "__main__":
    unittest.main()
