"""The Worker against the local stack: the scenarios the TypeScript Worker's end-to-end tests cover
(``sdk-worker.test.ts``, ``sdk-lost-answers.test.ts``, ``sdk-bodies.test.ts``), side by side."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import unittest
from typing import Any, cast

from agent_scheduler import RoleSubscription, TaskContext, Worker
from agent_scheduler.limits import BODY_BYTES
from agent_scheduler.types import ClaimedTask

from .stack import Network, agent, needs_stack, operator, task_status, wait_for

FAST = (0.02, 0.2)


@needs_stack
class WorkerTest(unittest.IsolatedAsyncioTestCase):
    async def test_lifecycle_sync_and_async_handlers_checkpoints_and_follow_ups(self) -> None:
        # Prepare: a plain function doubles, an async one submits a follow-up and checkpoints.
        ops = operator()
        plain = (await asyncio.to_thread(ops.submit_task, {"queue": "py-lifecycle", "payload": {"x": 20}})).task
        followed = (
            await asyncio.to_thread(ops.submit_task, {"queue": "py-lifecycle", "payload": {"spawn": True}})
        ).task

        def handler(task: ClaimedTask, ctx: TaskContext) -> Any:
            payload = task["payload"]
            if payload.get("spawn"):
                ctx.checkpoint({"step": 1})
                results = ctx.submit([{"key": "child", "queue": "py-lifecycle", "payload": {"x": 1}}])
                return {"child": results[0]["ok"]}
            return {"doubled": payload["x"] * 2}

        worker = Worker(agent("py-lifecycle", max_concurrency=2), handler, concurrency=2, poll_interval=FAST)
        completed: list[str] = []
        worker.on("completed", lambda task, _result: completed.append(task["taskId"]))

        # Act
        await worker.start()
        await wait_for(lambda: plain["taskId"] in completed and followed["taskId"] in completed and len(completed) >= 3)
        await worker.stop()

        # Assess
        done = await asyncio.to_thread(ops.get_task, plain["taskId"])
        self.assertEqual((done["status"], done.get("result"), done["attempt"]), ("succeeded", {"doubled": 40}, 1))
        parent = await asyncio.to_thread(ops.get_task, followed["taskId"])
        self.assertEqual(parent.get("result"), {"child": True})
        self.assertTrue(worker.stopped)

    async def test_an_async_handler_and_a_role_are_ended_before_the_server_could_give_them_to_another(self) -> None:
        # Prepare: the network goes down under a running handler, and a role held on the same session, for longer
        # than the lease lasts; another agent waits in line for the role (the roles' own test is test_roles).
        network = Network()
        ops = operator()
        task = (await asyncio.to_thread(ops.submit_task, {"queue": "py-lease", "payload": {}})).task
        runs: list[int] = []
        cancelled_at: list[float] = []
        started = asyncio.Event()

        async def handler(claimed: ClaimedTask, _ctx: TaskContext) -> Any:
            runs.append(claimed["attempt"])
            if claimed["attempt"] > 1:
                return {"second": True}
            started.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                cancelled_at.append(time.monotonic())
                raise
            return {"first": True}

        client = agent("py-lease", network=network)
        worker = Worker(client, handler, poll_interval=FAST)
        role = RoleSubscription(client, "py-lease-leader", worker=worker)
        rival = RoleSubscription(agent("py-lease"), "py-lease-leader")
        roles: list[tuple[str, float]] = []
        role.on("lost_role", lambda _lease, reason: roles.append((f"lost {reason}", time.monotonic())))
        rival.on("got_role", lambda _lease: roles.append(("rival got", time.monotonic())))
        lost: list[str] = []
        worker.on("lost", lambda _task, reason: lost.append(reason))
        await worker.start()
        volunteered = (await role.volunteer(), await rival.volunteer())
        await asyncio.wait_for(started.wait(), 15)
        cut_at = time.monotonic()
        network.cut = True

        # Act: the handler is cancelled and the role given up by the agent's own reckoning (within the 6 s lease),
        # then the network comes back, the rival is granted the role and the task runs again once the server has
        # taken them back.
        await wait_for(lambda: cancelled_at, 10)
        network.cut = False
        await wait_for(lambda: len(runs) >= 2 and rival.have_role(), 30)
        await wait_for(lambda: worker.in_flight == 0, 10)
        await asyncio.gather(worker.stop(), rival.close())

        # Assess
        self.assertLess(cancelled_at[0] - cut_at, 6.0)
        self.assertEqual(lost[:1], ["expired"])
        self.assertEqual(volunteered, (True, False))
        self.assertEqual([what for what, _ in roles[:2]], ["lost session", "rival got"])
        self.assertLess(roles[0][1] - cut_at, 6.0)
        completes = [r for r in network.sent if r.url.endswith("/complete")]
        self.assertTrue(all(json.loads(r.body or b"{}").get("result") != {"first": True} for r in completes))
        done = await asyncio.to_thread(ops.get_task, task["taskId"])
        self.assertEqual((done["status"], done.get("result")), ("succeeded", {"second": True}))

    async def test_a_sync_handler_hears_a_cancel_through_ctx_cancelled(self) -> None:
        ops = operator()
        task = (await asyncio.to_thread(ops.submit_task, {"queue": "py-lease", "payload": {"sync": True}})).task
        picked = threading.Event()
        heard: list[str | None] = []

        def handler(_task: ClaimedTask, ctx: TaskContext) -> Any:
            picked.set()
            if ctx.cancelled.wait(15):
                heard.append(ctx.lost_reason)
            return {"ignored": True}

        worker = Worker(agent("py-lease"), handler, poll_interval=FAST)
        await worker.start()
        await asyncio.to_thread(picked.wait, 15)
        await asyncio.to_thread(ops.cancel_task, task["taskId"])
        await wait_for(lambda: heard, 10)
        await worker.stop()
        self.assertEqual(heard, ["cancelled"])
        self.assertEqual(await task_status(ops, task["taskId"]), "cancelled")

    async def test_a_complete_whose_answer_is_lost_is_sent_again_and_lands_once(self) -> None:
        network = Network()
        network.lose(lambda request, response: request.url.endswith("/complete") and response.status == 200)
        ops = operator()
        task = (await asyncio.to_thread(ops.submit_task, {"queue": "py-complete", "payload": {}})).task
        runs: list[str] = []

        def handler(claimed: ClaimedTask, _ctx: TaskContext) -> Any:
            runs.append(claimed["taskId"])
            return {"ok": True}

        worker = Worker(agent("py-complete", network=network), handler, poll_interval=FAST)
        events: list[str] = []
        worker.on("completed", lambda *_: events.append("completed"))
        worker.on("lost", lambda *_: events.append("lost"))
        await worker.start()
        await wait_for(lambda: events, 15)
        await worker.stop()

        self.assertEqual(network.lost, 1)
        self.assertEqual((runs, events), ([task["taskId"]], ["completed"]))
        done = await asyncio.to_thread(ops.get_task, task["taskId"])
        self.assertEqual((done["status"], done["attempt"], done.get("result")), ("succeeded", 1, {"ok": True}))

    async def test_an_outage_shorter_than_the_lease_costs_nothing(self) -> None:
        network = Network()
        ops = operator()
        task = (await asyncio.to_thread(ops.submit_task, {"queue": "py-outage", "payload": {}})).task
        started = asyncio.Event()

        async def handler(_task: ClaimedTask, _ctx: TaskContext) -> Any:
            started.set()
            await asyncio.sleep(3)
            return {"survived": True}

        worker = Worker(agent("py-outage", network=network), handler, poll_interval=FAST)
        events: list[str] = []
        worker.on("completed", lambda *_: events.append("completed"))
        worker.on("lost", lambda *_: events.append("lost"))
        await worker.start()
        await asyncio.wait_for(started.wait(), 15)
        network.cut = True
        await asyncio.sleep(2)  # beats fail; the lease (6 s) outlasts them
        network.cut = False
        await wait_for(lambda: events, 15)
        await worker.stop()

        self.assertEqual(events, ["completed"])
        done = await asyncio.to_thread(ops.get_task, task["taskId"])
        self.assertEqual((done["status"], done["attempt"]), ("succeeded", 1))

    async def test_completions_are_grouped_under_the_body_limit(self) -> None:
        # Prepare: eight handlers finish together, each with a 60 KB result: no call may pass 300 KB.
        network = Network()
        ops = operator()
        count = 8
        specs: list[Any] = [{"queue": "py-group", "payload": {"i": i}} for i in range(count)]
        results = await asyncio.to_thread(ops.submit_tasks, specs)
        ids = [cast(Any, r)["task"]["taskId"] for r in results if r["ok"]]
        self.assertEqual(len(ids), count)
        picked = 0
        all_picked = asyncio.Event()

        async def handler(claimed: ClaimedTask, _ctx: TaskContext) -> Any:
            nonlocal picked
            picked += 1
            if picked == count:
                all_picked.set()
            await all_picked.wait()
            return {"i": claimed["payload"]["i"], "blob": "x" * 60_000}

        worker = Worker(
            agent("py-group", max_concurrency=count, network=network), handler, concurrency=count, poll_interval=FAST
        )
        completed: list[str] = []
        worker.on("completed", lambda task, _r: completed.append(task["taskId"]))
        await worker.start()
        await wait_for(lambda: len(completed) == count, 30)
        await worker.stop()

        calls = [r for r in network.sent if r.url.endswith("/complete")]
        sizes = [len(r.body or b"") for r in calls]
        grouped = [r for r in calls if r.url.endswith("/tasks/complete")]
        self.assertTrue(all(size <= BODY_BYTES for size in sizes), sizes)
        self.assertTrue(grouped, "no completions went together")
        self.assertLess(len(calls), count)
        for task_id in ids:
            self.assertEqual(await task_status(ops, task_id), "succeeded")


if __name__ == "__main__":
    unittest.main()
