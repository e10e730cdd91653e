"""What a handler can do through its ``TaskContext`` beyond returning a result, against the local stack: suspend on a
waitpoint and resume with its outcome, report progress, extend its deadline, report the rate-limit units it used (as
``sdk-worker.test.ts`` covers them for the TypeScript Worker)."""

from __future__ import annotations

import asyncio
import json
import time
import unittest
from typing import Any

from agent_scheduler import TaskContext, Worker
from agent_scheduler.types import ClaimedTask, WaitResult

from .stack import Network, agent, needs_stack, operator, task_status, wait_for

FAST = (0.02, 0.2)


@needs_stack
class TaskContextTest(unittest.IsolatedAsyncioTestCase):
    async def test_a_suspended_task_resumes_with_the_waitpoint_outcome_and_succeeds(self) -> None:
        # Prepare: a plain-function handler suspends its first run (raising the suspension), keeping a checkpoint
        # for the run that resumes.
        ops = operator()
        task = (await asyncio.to_thread(ops.submit_task, {"queue": "py-waitpoint", "payload": {"plan": "deploy"}})).task
        runs: list[tuple[Any, Any]] = []
        suspended: list[WaitResult] = []

        def handler(claimed: ClaimedTask, ctx: TaskContext) -> Any:
            runs.append((ctx.waitpoint, claimed.get("checkpoint")))
            if ctx.waitpoint is None:
                ctx.checkpoint({"planned": True})
                raise ctx.suspend(600, on_suspended=suspended.append)  # or returned
            return {"deployed": ctx.waitpoint["outcome"] == "completed", "data": ctx.waitpoint.get("data")}

        worker = Worker(agent("py-waitpoint"), handler, poll_interval=FAST)
        events: list[str] = []
        worker.on("suspended", lambda _task, result: events.append(result["waitpoint"]["status"]))
        worker.on("completed", lambda *_: events.append("completed"))
        await worker.start()
        await wait_for(lambda: suspended, 15)
        waitpoint_id = suspended[0]["waitpoint"]["waitpointId"]
        status_while_waiting = await task_status(ops, task["taskId"])
        listed = await asyncio.to_thread(ops.list_waitpoints)

        # Act: an operator answers the waitpoint.
        answered = await asyncio.to_thread(ops.complete_waitpoint, waitpoint_id, {"data": {"approved": True}})
        await wait_for(lambda: "completed" in events, 15)
        await worker.stop()

        # Assess: one suspension, then one run that read the answer and the checkpoint; no attempt used.
        self.assertEqual(status_while_waiting, "suspended")
        self.assertIn(waitpoint_id, [w["waitpointId"] for w in listed["waitpoints"]])
        self.assertEqual(answered["status"], "completed")
        self.assertTrue(suspended[0]["callbackUrl"].startswith("http"))
        self.assertEqual(events, ["open", "completed"])
        resumed_with = {"id": waitpoint_id, "outcome": "completed", "data": {"approved": True}}
        self.assertEqual(runs, [(None, None), (resumed_with, {"planned": True})])
        done = await asyncio.to_thread(ops.get_task, task["taskId"])
        self.assertEqual(
            (done["status"], done["attempt"], done.get("result")),
            ("succeeded", 1, {"deployed": True, "data": {"approved": True}}),
        )

    async def test_progress_is_coalesced_and_shown_on_the_task(self) -> None:
        # Prepare: a handler reports twenty times in about a second, then waits until the operator has seen it.
        network = Network()
        ops = operator()
        task = (await asyncio.to_thread(ops.submit_task, {"queue": "py-progress", "payload": {}})).task
        seen = asyncio.Event()
        refused: list[str] = []

        async def handler(_task: ClaimedTask, ctx: TaskContext) -> Any:
            for step in range(1, 21):
                ctx.progress(percent=step * 5, message=f"step {step}", data={"step": step})
                await asyncio.sleep(0.05)
            bad_reports: list[dict[str, Any]] = [{"percent": 101}, {"message": ""}, {}]
            for bad in bad_reports:
                try:
                    ctx.progress(**bad)
                except (TypeError, ValueError) as error:
                    refused.append(type(error).__name__)
            await asyncio.wait_for(seen.wait(), 10)
            return "reported"

        worker = Worker(agent("py-progress", network=network), handler, poll_interval=FAST)
        await worker.start()

        # Act: the operator reads the task until the last report shows.
        deadline = time.monotonic() + 10
        progress: Any = None
        while time.monotonic() < deadline:
            progress = (await asyncio.to_thread(ops.get_task, task["taskId"])).get("progress")
            if progress and progress.get("percent") == 100:
                break
            await asyncio.sleep(0.1)
        seen.set()
        await wait_for(lambda: worker.in_flight == 0, 10)
        await worker.stop()

        # Assess: the latest report, sent in a few calls rather than twenty.
        self.assertEqual(
            (progress["percent"], progress["message"], progress["data"], progress["attempt"]),
            (100, "step 20", {"step": 20}, 1),
        )
        calls = [json.loads(r.body or b"{}") for r in network.sent if r.url.endswith("/v1/agent/tasks/progress")]
        self.assertLessEqual(len(calls), 3, calls)
        self.assertEqual(calls[-1]["tasks"][0]["message"], "step 20")
        self.assertEqual(refused, ["ValueError", "ValueError", "TypeError"])
        self.assertEqual(await task_status(ops, task["taskId"]), "succeeded")

    async def test_a_handler_that_extends_its_deadline_runs_past_its_first_one(self) -> None:
        # Prepare: a 4 s attempt (3 s from the claim's send by the worker's reckoning, less its margin), extendable
        # to 30 s; the handler extends it by 4 s every second and runs past 4 s from its start (so past the grant's).
        # An extension may take two seconds to come back on a loaded machine and the attempt still lasts.
        ops = operator()
        spec: Any = {"queue": "py-extend", "payload": {}, "maxAttempts": 1}
        spec |= {"timeoutSeconds": 4, "maxTimeoutSeconds": 30}
        task = (await asyncio.to_thread(ops.submit_task, spec)).task
        left: list[float] = []
        ran: list[float] = []

        def handler(_task: ClaimedTask, ctx: TaskContext) -> Any:
            started = time.monotonic()
            while time.monotonic() - started < 4.2:
                left.append(ctx.extend_deadline(4))
                time.sleep(min(1.0, max(0.0, 4.2 - (time.monotonic() - started))))
            ran.append(time.monotonic() - started)
            return {"cancelled": ctx.cancelled.is_set()}

        worker = Worker(agent("py-extend"), handler, poll_interval=FAST)
        lost: list[str] = []
        worker.on("lost", lambda _task, reason: lost.append(reason))
        await worker.start()

        # Act
        await wait_for(lambda: worker.in_flight == 0 and (ran or lost), 15)
        await worker.stop()

        # Assess: each extension left about three seconds (four less the margin, less the beat's way there and back);
        # the attempt ran past its first deadline, was never cancelled and succeeded.
        self.assertEqual(lost, [], left)
        self.assertGreaterEqual(len(left), 4)
        self.assertTrue(all(0.5 < seconds <= 3 for seconds in left), left)
        self.assertGreater(ran[0], 4)
        done = await asyncio.to_thread(ops.get_task, task["taskId"])
        self.assertEqual((done["status"], done["attempt"], done.get("result")), ("succeeded", 1, {"cancelled": False}))

    async def test_a_handler_reports_the_units_it_used_and_the_completion_settles_what_the_grant_took(self) -> None:
        # Prepare: a day's budget of tokens; the task's grant takes an estimate of 500.
        ops = operator()
        limit = "/v1/rate-limits/py.tokens"
        await asyncio.to_thread(ops._call, "POST", limit, body={"limit": 10_000, "per": "day"})
        before = (await asyncio.to_thread(ops._call, "GET", limit))["rateLimit"]["window"].get("used", 0)
        spec: Any = {"queue": "py-usage", "payload": {}, "rateLimits": [{"name": "py.tokens", "units": 500}]}
        task = (await asyncio.to_thread(ops.submit_task, spec)).task
        refused: list[str] = []

        def handler(_task: ClaimedTask, ctx: TaskContext) -> Any:
            # Two model calls, counted as they go; a bad count raises and adds nothing.
            ctx.usage("py.tokens", 300)
            ctx.usage({"py.tokens": 420})
            five = {"py.tokens": 1, "b": 1, "c": 1, "d": 1, "e": 1}
            bad: list[Any] = [("py.tokens", -1), ("py.tokens", float("nan")), ("py.tokens", True), (five,)]
            for args in bad:
                try:
                    ctx.usage(*args)
                except (TypeError, ValueError) as error:
                    refused.append(type(error).__name__)
            return "summarised"

        network = Network()
        worker = Worker(agent("py-usage", network=network), handler, poll_interval=FAST)
        await worker.start()

        # Act
        await wait_for(lambda: network.calls("/complete"), 10)
        await worker.stop()

        # Assess: 500 taken at the grant, 720 used: the day's window holds 720 more than before.
        self.assertEqual(refused, ["ValueError", "ValueError", "TypeError", "ValueError"])
        done = await asyncio.to_thread(ops.get_task, task["taskId"])
        self.assertEqual((done["status"], done.get("result")), ("succeeded", "summarised"))
        self.assertEqual([(t["name"], t["units"]) for t in done.get("rateTaken", [])], [("py.tokens", 500)])
        after = (await asyncio.to_thread(ops._call, "GET", limit))["rateLimit"]["window"]["used"]
        self.assertEqual(after, before + 720)
        self.assertEqual([body["usage"] for body, _ in network.calls("/complete")], [{"py.tokens": 720}])


if __name__ == "__main__":
    unittest.main()
