"""The README's short agent (``python/README.md``, "An agent") as written: at most 15 lines, the same as the
repository's README shows (its "An agent in Python", whose block names this file), and, against the local stack,
it runs a task to its success, then drains and exits on SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import unittest
from pathlib import Path

from .stack import ENDPOINT, needs_stack, operator

README = Path(__file__).resolve().parents[1] / "README.md"
ROOT_README = Path(__file__).resolve().parents[2] / "README.md"
SOURCE = Path(__file__).resolve().parents[1] / "src"
QUEUE = "py-readme"


def readme_agent() -> str:
    """The first Python block under the README's "An agent"."""
    found = re.search(r"^## An agent\n\n```python\n(.*?)^```", README.read_text(encoding="utf-8"), re.S | re.M)
    if found is None:
        raise AssertionError('no ```python block right under "## An agent" in python/README.md')
    return found.group(1)


class ReadmeAgentTest(unittest.TestCase):
    def test_the_agent_is_at_most_15_lines(self) -> None:
        self.assertLessEqual(len(readme_agent().strip().splitlines()), 15)

    def test_the_repository_readme_shows_the_same_agent(self) -> None:
        found = re.search(
            r"^## An agent in Python\n.*?```python\n(.*?)^```", ROOT_README.read_text(encoding="utf-8"), re.S | re.M
        )
        self.assertIsNotNone(found, 'no ```python block under "## An agent in Python" in README.md')
        assert found is not None
        self.assertEqual(found.group(1), readme_agent())

    @needs_stack
    def test_the_agent_runs_a_task_to_its_success_then_drains_on_sigterm(self) -> None:
        # Prepare: a task for the agent, queued before it starts; the agent's token in the variables it reads.
        assert ENDPOINT is not None
        ops = operator()
        created = ops.create_agent({"name": "py-readme", "queues": [QUEUE], "maxConcurrency": 4})
        task = ops.submit_task({"queue": QUEUE, "payload": {"x": 21}}).task
        env = {**os.environ, "AGENT_SCHEDULER_ENDPOINT": ENDPOINT, "AGENT_SCHEDULER_TOKEN": created["token"]}
        env["PYTHONPATH"] = str(SOURCE)

        # Act: the README's code as a program; once the task has ended, SIGTERM.
        process = subprocess.Popen(
            [sys.executable, "-c", readme_agent()], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            deadline = time.monotonic() + 15
            status = "queued"
            while status not in ("succeeded", "dead") and time.monotonic() < deadline and process.poll() is None:
                time.sleep(0.05)
                status = ops.get_task(task["taskId"])["status"]
        finally:
            process.send_signal(signal.SIGTERM)
            _, stderr = process.communicate(timeout=30)

        # Assess: the task's result is the handler's, at its first attempt; the agent drained and exited cleanly.
        done = ops.get_task(task["taskId"])
        self.assertEqual((done["status"], done["attempt"], done.get("result")), ("succeeded", 1, {"doubled": 42}))
        self.assertEqual(process.returncode, 0, stderr)


if __name__ == "__main__":
    unittest.main()
