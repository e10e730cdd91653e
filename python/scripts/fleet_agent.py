"""An agent process of the fleet chaos run (``chaos/run-fleet-chaos.ts``) and of the fleet bench
(``bench/run-fleet.ts``): the Python SDK's :class:`Worker`, the twin of ``chaos/fleet-agent.ts``. Both take the same
options, run the same workload and write the same execution log (``chaos/fleet-log.ts``).

Usage: ``PYTHONPATH=python/src python3 python/scripts/fleet_agent.py --endpoint URL --token TOKEN --queue Q
--concurrency N --log PATH [--workload chaos|trivial] [--seed S] [--role NAME] [--timeout-ms MS] [--go PATH]``, each
also read from the environment when absent (``AGENT_SCHEDULER_ENDPOINT``, ``AGENT_SCHEDULER_TOKEN``, ``FLEET_QUEUE``,
``FLEET_CONCURRENCY``, ``FLEET_LOG``, ``FLEET_WORKLOAD``, ``FLEET_SEED``, ``FLEET_ROLE``, ``FLEET_TIMEOUT_MS``,
``FLEET_GO``). With ``--go``, the process logs ``loaded`` and starts its Worker only once that file exists.

The workload is described in ``chaos/fleet-agent.ts``. Handlers are ``async def``: the Worker cancels one whose
lease is over, and its ``end`` is logged then. Stops (draining) on SIGTERM, and when its agent is revoked; then logs
``stopped`` and exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import sys
import time
from typing import Any, Literal

from agent_scheduler import Client, NonRetryableError, RetryPolicy, Worker
from agent_scheduler.types import BatchItemResult, ChildTaskSpec, ClaimedTask
from agent_scheduler.worker import RoleContext, TaskContext

#: What a Worker tells of an outcome, logged as it tells it.
TOLD: tuple[Literal["completed", "failed", "lost"], ...] = ("completed", "failed", "lost")
LONG_SHARE = 0.05
FAIL_SHARE = 0.1
CHILD_SHARE = 0.1


def now_ms() -> int:
    return int(time.time() * 1000)


def created_ids(outcomes: list[BatchItemResult]) -> list[str]:
    """The ids of the tasks a batch submission made or found again, in order."""
    return [outcome["task"]["taskId"] for outcome in outcomes if outcome["ok"] is True]


class Agent:
    """One agent: its options, its draws and its log."""

    def __init__(self, options: argparse.Namespace) -> None:
        self.options = options
        self.queue: str = options.queue
        self.random = random.Random(int(options.seed))  # noqa: S311 (draws of a workload, not secrets)
        # One write per line, straight to the file: a SIGKILL loses none.
        self._log = os.open(options.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def log(self, line: dict[str, Any]) -> None:
        os.write(self._log, (json.dumps(line, separators=(",", ":")) + "\n").encode("utf-8"))

    async def submit_children(self, task: ClaimedTask, ctx: TaskContext) -> None:
        """Submits one or two children of ``task`` by key, and a third of the time submits them again as a retry
        would: the same keys must give the same tasks."""
        keys = ["a"] if self.random.random() < 0.5 else ["a", "b"]
        # Retried as the chaos runs' tasks are (``RETRYING`` in ``chaos/committed-writes.ts``).
        children = [
            ChildTaskSpec(
                key=key,
                queue=self.queue,
                payload={"childOf": task["taskId"]},
                maxAttempts=50,
                timeoutSeconds=20,
                backoffBaseSeconds=1,
                backoffMaxSeconds=1,
            )
            for key in keys
        ]
        again = self.random.random() < 1 / 3
        try:
            first = await ctx.asubmit(children)
        except Exception:  # noqa: BLE001 (a child submission that fails is the run's to retry, not the handler's)
            return
        ids = created_ids(first)
        self.log({"type": "children", "at": now_ms(), "taskId": task["taskId"], "ids": ids})
        if not again or len(ids) < len(keys):
            return
        try:
            second = await ctx.asubmit(children)
        except Exception:  # noqa: BLE001
            return
        ids_again = created_ids(second)
        if len(ids_again) == len(ids) and ids_again != ids:
            detail = f"{task['taskId']}: {','.join(ids)} then {','.join(ids_again)}"
            self.log({"type": "childMismatch", "at": now_ms(), "detail": detail})

    async def chaos_work(self, task: ClaimedTask, ctx: TaskContext) -> Any:
        payload = task["payload"] if isinstance(task["payload"], dict) else {}
        if "n" in payload and self.random.random() < CHILD_SHARE:
            await self.submit_children(task, ctx)
        steps = 60 if self.random.random() < LONG_SHARE else 1
        for step in range(steps):
            if ctx.cancelled.is_set():
                break
            ctx.checkpoint({"step": step, "leaseEpoch": task["leaseEpoch"]})
            await asyncio.sleep(0.05 if steps > 1 else 0.005 + self.random.random() * 0.045)
        if payload.get("doomable"):
            raise NonRetryableError("chaos says never")
        if self.random.random() < FAIL_SHARE:
            raise RuntimeError("chaos says no")
        return {"n": task["taskId"]}

    async def handler(self, task: ClaimedTask, ctx: TaskContext) -> Any:
        lease = {"taskId": task["taskId"], "leaseEpoch": task["leaseEpoch"]}
        self.log({"type": "start", "at": now_ms(), **lease, "attempt": task["attempt"]})
        try:
            if self.options.workload == "trivial":
                result: Any = {"n": task["taskId"]}
            else:
                result = await self.chaos_work(task, ctx)
        except asyncio.CancelledError:
            self.log({"type": "end", "at": now_ms(), **lease, "how": "aborted"})
            raise
        except Exception:
            self.log({"type": "end", "at": now_ms(), **lease, "how": "aborted" if ctx.cancelled.is_set() else "threw"})
            raise
        if ctx.cancelled.is_set():
            self.log({"type": "end", "at": now_ms(), **lease, "how": "aborted"})
        else:
            self.log({"type": "end", "at": now_ms(), **lease, "how": "returned", "result": result})
        return result

    async def hold_role(self, ctx: RoleContext) -> None:
        """Holds the role until cancelled, or gives it up after 0.5 to 2 s so it moves between holders."""
        self.log({"type": "roleStart", "at": now_ms(), "role": ctx.role, "leaseEpoch": ctx.lease_epoch})
        try:
            await asyncio.sleep(0.5 + self.random.random() * 1.5)
        finally:
            self.log({"type": "roleEnd", "at": now_ms(), "role": ctx.role, "leaseEpoch": ctx.lease_epoch})

    def told(self, kind: str) -> Any:
        def listener(task: ClaimedTask, *rest: Any) -> None:
            line: dict[str, Any] = {"type": kind, "at": now_ms(), "taskId": task["taskId"]}
            line["leaseEpoch"] = task["leaseEpoch"]
            if kind == "lost" and rest:
                line["reason"] = str(rest[0])
            self.log(line)

        return listener

    async def start(self) -> Worker:
        """A started Worker: a session that cannot open under the faults is tried again with a new one."""
        client = Client(
            self.options.endpoint,
            token=self.options.token,
            timeout=int(self.options.timeout_ms) / 1000,
            retries=RetryPolicy(max_attempts=4, base_delay=0.02, max_delay=0.2),
        )
        attempt = 0
        while True:
            worker = Worker(
                client,
                self.handler,
                concurrency=int(self.options.concurrency),
                queues=[self.queue],
                poll_interval=(0.02, 0.2),
                drain_timeout=10.0,
                # Polling, as the TypeScript agent: the proxy forwards HTTP requests, not the push channel's socket.
                push=False,
                roles={self.options.role: self.hold_role} if self.options.role else None,
            )
            worker.on("error", lambda _error: None)
            for kind in TOLD:
                worker.on(kind, self.told(kind))
            try:
                await worker.start()
            except Exception:
                attempt += 1
                if attempt > 20:
                    raise
                await asyncio.sleep(0.1)
                continue
            return worker

    async def run(self) -> None:
        if self.options.go:
            self.log({"type": "loaded", "at": now_ms()})
            while not os.path.exists(self.options.go):
                await asyncio.sleep(0.01)
        worker = await self.start()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, lambda: asyncio.ensure_future(worker.stop()))
        self.log({"type": "ready", "at": now_ms(), "language": "python", "pid": os.getpid()})
        while not worker.stopped:
            await asyncio.sleep(0.1)
        self.log({"type": "stopped", "at": now_ms()})


def parse(argv: list[str]) -> argparse.Namespace:
    env = os.environ.get
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--endpoint", default=env("AGENT_SCHEDULER_ENDPOINT"))
    parser.add_argument("--token", default=env("AGENT_SCHEDULER_TOKEN"))
    parser.add_argument("--queue", default=env("FLEET_QUEUE"))
    parser.add_argument("--concurrency", default=env("FLEET_CONCURRENCY", "4"))
    parser.add_argument("--log", default=env("FLEET_LOG"))
    parser.add_argument("--workload", default=env("FLEET_WORKLOAD", "chaos"), choices=["chaos", "trivial"])
    parser.add_argument("--seed", default=env("FLEET_SEED", "1"))
    parser.add_argument("--role", default=env("FLEET_ROLE"))
    parser.add_argument("--timeout-ms", default=env("FLEET_TIMEOUT_MS", "1000"))
    parser.add_argument("--go", default=env("FLEET_GO"))
    options = parser.parse_args(argv)
    for required in ("endpoint", "token", "queue", "log"):
        if not getattr(options, required):
            parser.error(f"--{required} is required")
    return options


if __name__ == "__main__":
    asyncio.run(Agent(parse(sys.argv[1:])).run())
