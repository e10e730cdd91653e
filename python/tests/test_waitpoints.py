"""An operator's waitpoint routes against the local stack: a waitpoint read while open and once answered
(``get_waitpoint``), the open ones listed a page at a time (``list_waitpoints``), a rejection that the resumed run
reads (``reject_waitpoint``), and a waitpoint closed by its task's cancellation. (Completing one, and the run that
resumes from it, is in ``test_task_context``.)"""

from __future__ import annotations

import asyncio
import unittest
from typing import Any

from agent_scheduler import AgentSchedulerError, Client, TaskContext, Worker
from agent_scheduler.types import ClaimedTask, Waitpoint, WaitResult

from .stack import agent, needs_stack, operator, task_status, wait_for

FAST = (0.02, 0.2)
QUEUE = "py-waitpoints"


def open_waitpoints(ops: Client) -> tuple[list[Waitpoint], int]:
    """Every open waitpoint, read a page of one at a time, and the most a page held."""
    found: list[Waitpoint] = []
    most = 0
    cursor: str | None = None
    for _ in range(100):
        page = ops.list_waitpoints(limit=1, cursor=cursor)
        found.extend(page["waitpoints"])
        most = max(most, len(page["waitpoints"]))
        cursor = page.get("nextCursor")
        if cursor is None:
            return found, most
    raise AssertionError("more than 100 pages of open waitpoints")


@needs_stack
class WaitpointRoutesTest(unittest.IsolatedAsyncioTestCase):
    async def test_a_rejected_task_resumes_with_the_reason_and_a_cancelled_one_closes_its_waitpoint(self) -> None:
        # Prepare: two tasks, each suspended by its first run on one worker; a resumed run returns what it read.
        ops = operator()
        rejected_id, cancelled_id = [
            (await asyncio.to_thread(ops.submit_task, {"queue": QUEUE, "payload": {"n": n}})).task["taskId"]
            for n in (1, 2)
        ]
        waitpoints: dict[str, str] = {}
        resumed: list[tuple[str, Any]] = []

        def handler(task: ClaimedTask, ctx: TaskContext) -> Any:
            if ctx.waitpoint is None:

                def suspended(result: WaitResult) -> None:
                    waitpoints[task["taskId"]] = result["waitpoint"]["waitpointId"]

                return ctx.suspend(600, on_suspended=suspended)
            resumed.append((task["taskId"], ctx.waitpoint))
            return {"outcome": ctx.waitpoint["outcome"], "reason": ctx.waitpoint.get("reason")}

        worker = Worker(agent(QUEUE, max_concurrency=2), handler, concurrency=2, poll_interval=FAST)
        completed: list[str] = []
        worker.on("completed", lambda task, _result: completed.append(task["taskId"]))
        await worker.start()
        try:
            await wait_for(lambda: len(waitpoints) == 2, 15)
            to_reject, to_cancel = waitpoints[rejected_id], waitpoints[cancelled_id]

            # Act: the operator reads one, pages through the open ones, rejects the first (twice: the same answer
            # again is answered as it was; another answer is refused), and cancels the second's task.
            while_open = await asyncio.to_thread(ops.get_waitpoint, to_reject)
            listed, most_on_a_page = await asyncio.to_thread(open_waitpoints, ops)
            rejected = await asyncio.to_thread(ops.reject_waitpoint, to_reject, {"reason": "not this week"})
            rejected_again = await asyncio.to_thread(ops.reject_waitpoint, to_reject, {"reason": "not this week"})
            with self.assertRaises(AgentSchedulerError) as completed_too:
                await asyncio.to_thread(ops.complete_waitpoint, to_reject, {"data": {}})
            await wait_for(lambda: rejected_id in completed, 15)
            await asyncio.to_thread(ops.cancel_task, cancelled_id)
            answered = await asyncio.to_thread(ops.get_waitpoint, to_reject)
            closed = await asyncio.to_thread(ops.get_waitpoint, to_cancel)
            listed_after, _ = await asyncio.to_thread(open_waitpoints, ops)
        finally:
            await worker.stop()

        # Assess: read while open, then as it ended and when.
        self.assertEqual(
            (while_open["waitpointId"], while_open["taskId"], while_open["status"], while_open["onTimeout"]),
            (to_reject, rejected_id, "open", "resume"),
        )
        self.assertNotIn("resolvedAt", while_open)
        self.assertEqual((answered["status"], rejected["status"], rejected_again["status"]), ("rejected",) * 3)
        self.assertIn("resolvedAt", answered)
        self.assertEqual((completed_too.exception.status, completed_too.exception.code), (409, "WaitpointResolved"))
        # Both were listed while open, one to a page; neither once answered or closed.
        listed_ids = [w["waitpointId"] for w in listed]
        self.assertLessEqual({to_reject, to_cancel}, set(listed_ids))
        self.assertEqual(most_on_a_page, 1)
        self.assertTrue({to_reject, to_cancel}.isdisjoint(w["waitpointId"] for w in listed_after))
        # The rejected task resumed once, reading the rejection and its reason, and succeeded at its first attempt.
        self.assertEqual(resumed, [(rejected_id, {"id": to_reject, "outcome": "rejected", "reason": "not this week"})])
        done = await asyncio.to_thread(ops.get_task, rejected_id)
        self.assertEqual(
            (done["status"], done["attempt"], done.get("result")),
            ("succeeded", 1, {"outcome": "rejected", "reason": "not this week"}),
        )
        # The cancelled task's waitpoint closed with it, and it never ran again.
        self.assertEqual(closed["status"], "cancelled")
        self.assertEqual(await task_status(ops, cancelled_id), "cancelled")


if __name__ == "__main__":
    unittest.main()
