"""A busy Worker carries its next claim on its completions (``claimNext``), against the local stack: a backlog is run
with one claim call and a completion per task; a completion whose answer was lost leaks no task; a server older than
carried claims is completed and claimed apart (as ``carried-claims.test.ts`` covers them for the TypeScript SDK)."""

from __future__ import annotations

import asyncio
import json
import unittest
from collections.abc import Callable
from typing import Any

from agent_scheduler import HttpRequest, HttpResponse, RetryPolicy, TaskContext, Worker
from agent_scheduler.types import ClaimedTask

from .stack import Network, agent, needs_stack, operator, wait_for

FAST = (0.02, 0.2)


class OlderServer:
    """A ``send`` to a server older than carried claims: its strict bodies refuse the field, having done nothing. The
    bodies of the completions sent are kept, refused ones included."""

    def __init__(self, send: Callable[[HttpRequest, float], HttpResponse]) -> None:
        self._send = send
        self.completions: list[dict[str, Any]] = []

    def __call__(self, request: HttpRequest, timeout: float) -> HttpResponse:
        if request.url.endswith("/complete"):
            self.completions.append(json.loads(request.body or b"{}"))
        if request.body is not None and b'"claimNext"' in request.body:
            body = {"error": {"code": "ValidationError", "message": 'body: Unrecognized key: "claimNext"'}}
            return HttpResponse(400, {"content-type": "application/json"}, json.dumps(body).encode())
        return self._send(request, timeout)


def brought_a_task(request: HttpRequest, response: HttpResponse) -> bool:
    """A completion whose answer carries a granted task."""
    if not request.url.endswith("/complete") or response.status != 200:
        return False
    return bool(json.loads(response.body).get("next", {}).get("tasks"))


def claim_ids(requests: list[HttpRequest]) -> list[str]:
    """The claim id of every claim sent, on its own or carried by a completion."""
    ids: list[str] = []
    for request in requests:
        body = json.loads(request.body or b"{}")
        if request.url.endswith("/v1/agent/claim"):
            ids.append(body["claimId"])
        elif request.url.endswith("/complete") and "claimNext" in body:
            ids.append(body["claimNext"]["claimId"])
    return ids


@needs_stack
class CarriedClaimsTest(unittest.IsolatedAsyncioTestCase):
    async def run_backlog(
        self, queue: str, count: int, network: Network, *, send: Any = None, retries: RetryPolicy | None = None
    ) -> list[str]:
        """Submits ``count`` tasks and runs them with a worker of one slot until all succeeded, each once under its
        first lease; answers their ids. ``send`` and ``retries`` replace the agent client's."""
        ops = operator()
        ids = [
            (await asyncio.to_thread(ops.submit_task, {"queue": queue, "payload": {"i": i}})).task["taskId"]
            for i in range(count)
        ]
        runs: list[str] = []

        async def handler(task: ClaimedTask, _ctx: TaskContext) -> Any:
            runs.append(task["taskId"])
            return {"ok": True}

        client = agent(queue, network=network)
        if send is not None:
            client._transport.send = send
        if retries is not None:
            client._transport.retries = retries
        worker = Worker(client, handler, poll_interval=FAST)
        completed: set[str] = set()
        worker.on("completed", lambda task, _result: completed.add(task["taskId"]))
        await worker.start()
        try:
            await wait_for(lambda: completed >= set(ids), 20)
        finally:
            await worker.stop()
        for task_id in ids:
            done = await asyncio.to_thread(ops.get_task, task_id)
            self.assertEqual((done["status"], done["attempt"], done["leaseEpoch"]), ("succeeded", 1, 1), task_id)
        self.assertEqual(sorted(runs), sorted(ids))
        return ids

    async def test_a_busy_worker_takes_its_next_task_with_each_completion(self) -> None:
        network = Network()
        await self.run_backlog("py-carry", 4, network)

        # The first task came by the claim route; the three others with the completions before them.
        granting = [body for body, answer in network.calls("/v1/agent/claim") if answer and answer["tasks"]]
        completions = network.calls("/complete")
        carried = [answer["next"] for _, answer in completions if answer.get("next", {}).get("tasks")]
        self.assertEqual(len(granting), 1)
        self.assertEqual(len(completions), 4)
        self.assertEqual(len(carried), 3)
        claims = [body["claimNext"] for body, _ in completions]
        self.assertTrue(all(c["claimId"] and c["claimSeq"] for c in claims), claims)
        self.assertEqual(len({c["claimId"] for c in claims}), 4)

    async def test_a_lost_answer_to_a_completion_that_carried_a_claim_leaks_no_task(self) -> None:
        # The answer of the first completion that brought a task is lost, with no retry of the call to hide it: the
        # Worker sends the claim again with its id, and the server answers it with the task it granted, which runs
        # once (run_backlog checks every lease's epoch is 1).
        network = Network()
        network.lose(brought_a_task)
        await self.run_backlog("py-lost", 3, network, retries=RetryPolicy(max_attempts=1))

        self.assertEqual(len(network.lost_requests), 1)
        lost = json.loads(network.lost_requests[0].body or b"{}")["claimNext"]["claimId"]
        self.assertGreaterEqual(claim_ids(network.sent).count(lost), 2)

    async def test_a_server_older_than_carried_claims_is_completed_and_claimed_apart(self) -> None:
        network = Network()
        older = OlderServer(network)
        await self.run_backlog("py-old", 3, network, send=older)

        # Refused once (the older server changes nothing), the completion sent again alone; then remembered: later
        # completions go without, and the claims on their own.
        self.assertEqual([("claimNext" in body) for body in older.completions], [True, False, False, False])
        granting = [body for body, answer in network.calls("/v1/agent/claim") if answer and answer["tasks"]]
        self.assertEqual(len(granting), 3)


if __name__ == "__main__":
    unittest.main()
