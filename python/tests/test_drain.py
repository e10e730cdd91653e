"""SIGTERM drains a Worker run by ``Worker.run()`` in its own process: the running task finishes and is recorded,
nothing more is claimed, and the process exits 0."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import time
import unittest
from pathlib import Path

from .stack import ENDPOINT, agent, needs_stack, operator

SRC = str(Path(__file__).resolve().parents[1] / "src")

AGENT = textwrap.dedent(
    """
    import logging, os, sys, time
    logging.basicConfig(level=logging.DEBUG)
    from agent_scheduler import Client, Worker

    def handle(task, ctx):
        print("picked", flush=True)
        time.sleep(1.5)
        return {"drained": True}

    client = Client(os.environ["ENDPOINT"], token=os.environ["TOKEN"])
    Worker(client, handle, poll_interval=(0.02, 0.2)).run()
    print("stopped", flush=True)
    """
)


@needs_stack
class DrainTest(unittest.TestCase):
    def test_sigterm_lets_the_running_task_finish_and_claims_nothing_more(self) -> None:
        ops = operator()
        client = agent("py-drain")
        token = client._transport.token
        first = ops.submit_task({"queue": "py-drain", "payload": {}}).task
        env = {**os.environ, "ENDPOINT": ENDPOINT or "", "TOKEN": token or "", "PYTHONPATH": SRC}
        child = subprocess.Popen(
            [sys.executable, "-c", AGENT], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            assert child.stdout is not None
            # Bounded: an agent that never picks the task fails the test with its log, instead of hanging it.
            ready, _, _ = select.select([child.stdout], [], [], 30)
            if not ready:
                child.kill()
                self.fail(f"the agent picked nothing in 30 s: {child.communicate()[1]}")
            self.assertEqual(child.stdout.readline().strip(), "picked")
            child.send_signal(signal.SIGTERM)
            time.sleep(0.2)
            second = ops.submit_task({"queue": "py-drain", "payload": {}}).task
            try:
                out, err = child.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                child.kill()
                out, err = child.communicate()
                self.fail(f"the agent did not stop: {err}")
        finally:
            if child.poll() is None:
                child.kill()
        self.assertEqual(child.returncode, 0, err)
        self.assertIn("stopped", out)
        done = ops.get_task(first["taskId"])
        self.assertEqual((done["status"], done.get("result")), ("succeeded", {"drained": True}), err)
        self.assertEqual(ops.get_task(second["taskId"])["status"], "queued")


if __name__ == "__main__":
    unittest.main()
