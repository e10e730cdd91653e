"""A Worker on the push channel against the local stack (whose server tells a listening agent to wait a minute
between empty claims): a submission wakes an idle worker at once, and a cancel reaches a running handler on the
socket, with no heartbeat to bring it (as ``push.test.ts`` covers them for the TypeScript Worker)."""

from __future__ import annotations

import asyncio
import time
import unittest
from typing import Any

from agent_scheduler import TaskContext, Worker
from agent_scheduler.types import ClaimedTask

from .stack import Network, agent, needs_stack, operator, task_status, wait_for

#: Longer than the test: a worker that was not woken would not claim again before it ends.
SLOW_POLL = (30.0, 30.0)


@needs_stack
class PushTest(unittest.IsolatedAsyncioTestCase):
    async def test_a_submission_wakes_an_idle_worker_long_before_it_would_poll(self) -> None:
        # Prepare: a worker whose claims are seen, idle on a listening claim the server answered with its minute.
        network = Network()
        picked: list[tuple[str, float]] = []

        async def handler(_task: ClaimedTask, _ctx: TaskContext) -> Any:
            return "ok"

        worker = Worker(agent("py-push", network=network), handler, poll_interval=SLOW_POLL)
        worker.on("picked", lambda task: picked.append((task["taskId"], time.monotonic())))
        await worker.start()
        listening = lambda: [c for c in network.calls("/v1/agent/claim") if c[0].get("listening")]  # noqa: E731
        await wait_for(lambda: any(answer and answer["tasks"] == [] for _, answer in listening()), 10)
        claims_while_idle = len(network.calls("/v1/agent/claim"))

        # Act
        submitted_at = time.monotonic()
        ops = operator()
        task = (await asyncio.to_thread(ops.submit_task, {"queue": "py-push", "payload": {}})).task
        await wait_for(lambda: picked, 10)
        await wait_for(lambda: worker.in_flight == 0, 10)
        await worker.stop()

        # Assess: picked by the one claim the wake brought (and maybe the next, listening again), the idle worker having
        # claimed nothing meanwhile, its wait being the server's minute; within a twelfth of that of the submission
        # (about 0.3 s on a quiet machine; a starved one takes a second or two for each call).
        self.assertEqual(picked[0][0], task["taskId"])
        self.assertLess(picked[0][1] - submitted_at, 5.0)
        claims = network.calls("/v1/agent/claim")
        self.assertLessEqual(len(claims) - claims_while_idle, 2)
        self.assertGreaterEqual(listening()[0][1]["retryAfterMs"], 30_000)
        self.assertEqual(await task_status(ops, task["taskId"]), "succeeded")

    async def test_a_cancel_reaches_a_running_handler_on_the_socket(self) -> None:
        # Prepare: a handler runs; then no heartbeat gets through, so a cancel can reach it only on the socket (the
        # lease, from the claim, outlasts the test).
        network = Network()
        ops = operator()
        task = (await asyncio.to_thread(ops.submit_task, {"queue": "py-cancel", "payload": {}})).task
        started = asyncio.Event()
        cancelled: list[tuple[str | None, float]] = []

        async def handler(_task: ClaimedTask, ctx: TaskContext) -> Any:
            started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.append((ctx.lost_reason, time.monotonic()))
                raise

        worker = Worker(agent("py-cancel", network=network), handler, poll_interval=SLOW_POLL)
        await worker.start()
        await asyncio.wait_for(started.wait(), 10)
        await wait_for(lambda: worker.listening, 10)
        network.block = lambda request: request.url.endswith("/v1/agent/heartbeat")
        beats_before = len(network.calls("/v1/agent/heartbeat"))

        # Act
        sent_at = time.monotonic()
        await asyncio.to_thread(ops.cancel_task, task["taskId"])
        await wait_for(lambda: cancelled, 10)
        await worker.stop()

        # Assess
        self.assertEqual(cancelled[0][0], "cancelled")
        self.assertLess(cancelled[0][1] - sent_at, 5.0)
        self.assertEqual(len(network.calls("/v1/agent/heartbeat")), beats_before)
        self.assertEqual(await task_status(ops, task["taskId"]), "cancelled")


if __name__ == "__main__":
    unittest.main()
