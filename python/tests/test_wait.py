"""``Client.wait_for_task`` and ``Client.submit_and_wait`` against the local stack: on the push channel the end is
pushed, not polled for; without it the task is read with backoff and its progress reports are heard; a wait past its
timeout raises, at once (as ``push.test.ts`` and ``sdk-worker.test.ts`` cover ``waitForTask`` for the TypeScript
client)."""

from __future__ import annotations

import asyncio
import threading
import time
import unittest
import urllib.parse
from typing import Any

from agent_scheduler import AgentSchedulerError, Client, TaskContext, TaskWaitTimeoutError, Worker
from agent_scheduler.types import ClaimedTask, TaskProgress

from .stack import ENDPOINT, OPERATOR_TOKEN, Network, agent, needs_stack, operator, wait_for

FAST = (0.02, 0.2)


def watcher(network: Network, *, push: bool = True) -> Client:
    """An operator's client whose requests ``network`` sees."""
    assert ENDPOINT is not None
    return Client(ENDPOINT, token=OPERATOR_TOKEN, send=network, push=push)


def reads_of(network: Network, task_id: str) -> list[float]:
    """When each read of the task was answered."""
    return [
        at
        for request, _, at in list(network.answered)
        if request.method == "GET" and urllib.parse.urlsplit(request.url).path == f"/v1/tasks/{task_id}"
    ]


@needs_stack
class WaitTest(unittest.IsolatedAsyncioTestCase):
    async def test_a_wait_on_the_push_channel_hears_the_end_and_reads_the_task_once(self) -> None:
        # Prepare: a handler that holds its task until the test lets it go.
        release = threading.Event()
        returned_at: list[float] = []

        def handler(_task: ClaimedTask, _ctx: TaskContext) -> Any:
            release.wait(10)
            returned_at.append(time.monotonic())
            return {"answer": 42}

        worker = Worker(agent("py-wait"), handler, poll_interval=FAST)
        await worker.start()
        network = Network()
        task = (await asyncio.to_thread(operator().submit_task, {"queue": "py-wait", "payload": {}})).task

        # Act: once the wait watches the task on its socket, and a while later, the handler returns.
        with self.assertLogs("agent_scheduler.waiter", "DEBUG") as logs:
            waiting = asyncio.ensure_future(
                asyncio.to_thread(watcher(network).wait_for_task, task["taskId"], timeout=15)
            )
            await wait_for(lambda: any("watching task" in line for line in logs.output), 10)
            watched_at = time.monotonic()
            await asyncio.sleep(0.4)
            release.set()
            ended = await waiting
        await worker.stop()

        # Assess: once watched, nothing read while the task ran (a wait that polled would have read it by 0.25 s);
        # the end pushed, then the task read once, after the handler returned. (A connect slower than the wait's
        # first 2 s may cost a read before the watch.)
        self.assertEqual(
            (ended["taskId"], ended["status"], ended.get("result")), (task["taskId"], "succeeded", {"answer": 42})
        )
        reads = [at for at in reads_of(network, task["taskId"]) if at > watched_at]
        self.assertEqual(len(reads), 1, reads)
        self.assertGreater(reads[0], returned_at[0])
        self.assertFalse(any("with backoff" in line for line in logs.output), logs.output)

    async def test_submit_and_wait_without_push_reads_with_backoff_and_hears_progress(self) -> None:
        async def handler(_task: ClaimedTask, ctx: TaskContext) -> Any:
            ctx.progress(percent=50, message="half way")
            await asyncio.sleep(0.1)
            return "done"

        worker = Worker(agent("py-wait"), handler, poll_interval=FAST)
        await worker.start()
        network = Network()
        seen: list[TaskProgress] = []

        # Act: reads at once, then 0.25 s, 0.5 s, 1 s apart; the report is seen on one, and once.
        ended = await asyncio.to_thread(
            watcher(network, push=False).submit_and_wait,
            {"queue": "py-wait", "payload": {}},
            timeout=10,
            on_progress=seen.append,
        )
        await worker.stop()

        # Assess
        self.assertEqual((ended["status"], ended.get("result")), ("succeeded", "done"))
        self.assertEqual([(p.get("percent"), p.get("message")) for p in seen], [(50, "half way")])
        self.assertGreaterEqual(len(reads_of(network, ended["taskId"])), 2)
        self.assertEqual(network.calls("/v1/push-ticket"), [])

    async def test_a_wait_past_its_timeout_raises_at_once_and_an_unknown_task_is_the_servers_error(self) -> None:
        # A task in a queue nobody serves.
        ops = operator()
        task = (await asyncio.to_thread(ops.submit_task, {"queue": "py-parked", "payload": {}})).task

        started = time.monotonic()
        with self.assertRaises(TaskWaitTimeoutError) as raised:
            await asyncio.to_thread(ops.wait_for_task, task["taskId"], timeout=0.3)
        took = time.monotonic() - started
        with self.assertRaises(AgentSchedulerError) as unknown:
            await asyncio.to_thread(ops.wait_for_task, "t_" + "a" * 26, timeout=5)

        self.assertEqual((raised.exception.code, raised.exception.task_id), ("WaitTimeout", task["taskId"]))
        # Heard of when the socket connected in time (else the wait had not read it yet).
        self.assertIn(raised.exception.last_status, ("queued", None))
        self.assertIn("did not end within 0.3 s", str(raised.exception))
        self.assertLess(took, 0.3 + 3.0)  # the timeout, and at most 2 s for the socket's closing handshake
        self.assertEqual((unknown.exception.status, unknown.exception.code), (404, "TaskNotFound"))
        with self.assertRaises(RuntimeError):
            ops.wait_for_task(task["taskId"], timeout=0.1)  # blocking, from the event loop's own thread


if __name__ == "__main__":
    unittest.main()
