"""One trace for a task's life, through the Python SDK, against the local stack: a span submits a task, the
Worker runs its handler in a child of that span, and the follow-up the handler submits runs in the same trace (as
``sdk-tracing.test.ts`` covers it for the TypeScript SDK).

The ``opentelemetry-api`` package cannot be installed where the suite runs: the test puts a stand-in for the few
names of ``opentelemetry.trace`` the SDK calls on ``sys.path`` (``fake_opentelemetry``), and takes it off after."""

from __future__ import annotations

import asyncio
import importlib
import sys
import unittest
from pathlib import Path
from typing import Any

from agent_scheduler import TaskContext, Worker, _tracing
from agent_scheduler.types import ClaimedTask

from .stack import Network, agent, needs_stack, operator, wait_for

FAKE = str(Path(__file__).resolve().parent / "fake_opentelemetry")
QUEUE = "py-traced"


@needs_stack
class TracingTest(unittest.IsolatedAsyncioTestCase):
    def setUp(self) -> None:
        sys.path.insert(0, FAKE)
        _tracing._trace = _tracing._UNSET  # looked for again, with the stand-in on the path
        self.trace: Any = importlib.import_module("opentelemetry.trace")

    def tearDown(self) -> None:
        sys.path.remove(FAKE)
        for name in [n for n in sys.modules if n == "opentelemetry" or n.startswith("opentelemetry.")]:
            del sys.modules[name]
        _tracing._trace = _tracing._UNSET

    async def test_the_handler_and_its_follow_up_run_in_the_submitters_trace(self) -> None:
        # Prepare: a span submits two tasks, one that fails; a third is submitted outside any span.
        trace = self.trace
        ops = operator()
        # (``asyncio.to_thread`` runs the call in a copy of the current context, the span with it.)
        with trace.get_tracer("test").start_as_current_span("submitter") as submitter:
            task = await asyncio.to_thread(ops.submit_task, {"queue": QUEUE, "payload": {"step": "first"}})
            failing = await asyncio.to_thread(
                ops.submit_task, {"queue": QUEUE, "payload": {"step": "fail"}, "maxAttempts": 1}
            )
        plain = await asyncio.to_thread(ops.submit_task, {"queue": QUEUE, "payload": {"step": "plain"}})
        ids = submitter.get_span_context()
        follow_ups: list[str] = []

        def handler(claimed: ClaimedTask, ctx: TaskContext) -> Any:
            step = claimed["payload"]["step"]
            if step == "fail":
                raise RuntimeError("refused on purpose")
            if step == "first":
                [child] = ctx.submit([{"key": "next", "queue": QUEUE, "payload": {"step": "next"}}])
                if "task" in child:
                    follow_ups.append(child["task"]["taskId"])
            return {"step": step}

        def span_of(task_id: str) -> Any:
            return next(
                (s for s in trace.FINISHED if s.attributes.get("agent_scheduler.task.id") == task_id), None
            )

        # Act: a Worker runs them all.
        network = Network()
        worker = Worker(agent(QUEUE, max_concurrency=3, network=network), handler, poll_interval=(0.02, 0.2))
        await worker.start()
        try:
            submitted = [task.task["taskId"], failing.task["taskId"], plain.task["taskId"]]
            await wait_for(lambda: follow_ups and all(span_of(t) for t in [*submitted, *follow_ups]), 10)
        finally:
            await worker.stop()

        # Assess: the submitted tasks carry the submitter's context; the plain one none.
        self.assertEqual(task.task.get("traceparent"), f"00-{ids.trace_id:032x}-{ids.span_id:016x}-01")
        self.assertNotIn("traceparent", plain.task)
        first = span_of(task.task["taskId"])
        self.assertEqual(first.name, f"agent-scheduler.task {QUEUE}")
        self.assertEqual(first.kind, trace.SpanKind.CONSUMER)
        self.assertEqual(
            {k: first.attributes[k] for k in ("agent_scheduler.queue", "agent_scheduler.task.attempt")},
            {"agent_scheduler.queue": QUEUE, "agent_scheduler.task.attempt": 1},
        )
        self.assertEqual(first.attributes["agent_scheduler.task.lease_epoch"], 1)
        # The handler's span is a child of the submitter's, and the follow-up's of the handler's.
        self.assertEqual((first.context.trace_id, first.parent.span_id), (ids.trace_id, ids.span_id))
        self.assertTrue(first.parent.is_remote)
        self.assertEqual(first.status.status_code, trace.StatusCode.UNSET)
        following = span_of(follow_ups[0])
        self.assertEqual(
            (following.context.trace_id, following.parent.span_id), (ids.trace_id, first.context.span_id)
        )
        failed = span_of(failing.task["taskId"])
        self.assertEqual(failed.context.trace_id, ids.trace_id)
        self.assertEqual(failed.status, trace.Status(trace.StatusCode.ERROR, "refused on purpose"))
        # Outside any span, the task's handler starts a trace of its own.
        alone = span_of(plain.task["taskId"])
        self.assertIsNone(alone.parent)
        self.assertNotEqual(alone.context.trace_id, ids.trace_id)
        # Each outcome sent on its own (a failure always; a completion unless grouped with others) carries its
        # handler span's context, so that a server recording spans makes its span of the call that span's child.
        alone = {r.url.rsplit("/", 2)[-2]: r.headers.get("traceparent") for r in network.sent if "/tasks/t_" in r.url}
        self.assertIn(failing.task["taskId"], alone)
        for task_id, sent in alone.items():
            handled = span_of(task_id).context
            self.assertEqual(sent, f"00-{handled.trace_id:032x}-{handled.span_id:016x}-01", task_id)
        read = await asyncio.to_thread(ops.get_task, follow_ups[0])
        self.assertEqual(read.get("traceparent"), f"00-{ids.trace_id:032x}-{first.context.span_id:016x}-01")
