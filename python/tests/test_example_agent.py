"""The Python agent example (``examples/python-agent``) end to end against the local stack, run as ``npm run
example:python`` runs it (``run.py``, which starts ``agent.py``), so the example cannot rot unseen."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unittest
from collections import Counter
from pathlib import Path
from typing import Any

from .stack import ENDPOINT, OPERATOR_TOKEN, needs_stack

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python-agent"
SOURCE = Path(__file__).resolve().parents[1] / "src"


@needs_stack
class ExampleAgentTest(unittest.TestCase):
    def test_the_job_runs_its_tools_under_the_rate_limit_fans_in_and_emails_once_approved(self) -> None:
        # Act: the demo as one command, its report as JSON.
        assert ENDPOINT is not None
        env = {
            **os.environ,
            "AGENT_SCHEDULER_ENDPOINT": ENDPOINT,
            "AGENT_SCHEDULER_TOKEN": OPERATOR_TOKEN,
            "PYTHONPATH": str(SOURCE),
        }
        ran = subprocess.run(
            [sys.executable, str(EXAMPLE / "run.py"), "--json", "--timeout", "45"],
            capture_output=True, text=True, timeout=75, env=env, check=False,
        )

        # Assess: the job and every task it made succeeded, and the worker drained when stopped.
        self.assertEqual(ran.returncode, 0, f"{ran.stdout}\n{ran.stderr}")
        report: dict[str, Any] = json.loads(ran.stdout)
        tasks = {t["name"]: t for t in report["tasks"]}
        self.assertTrue(report["succeeded"])
        self.assertEqual(report["worker"], {"exitCode": 0})
        tool_names = ["tool-0 search_web", "tool-1 search_web", "tool-2 weather", "tool-3 exchange_rate"]
        self.assertEqual(sorted(tasks), ["job", "summarise", *tool_names])
        tools = [tasks[name] for name in tool_names]
        self.assertTrue(all(t["status"] == "succeeded" for t in report["tasks"]), report["tasks"])
        # Each task ran once per attempt, the summary once more (asking for approval, then resumed from its waitpoint
        # in the same attempt), and it waited for the four tool calls: the job's follow-up tasks are named by keys, so
        # even a job run again makes no more. An attempt after the first only follows a lease the agent lost (on a
        # starved machine, a load of 14 on two cores, no heartbeat got through for the 6 s of a lease once).
        for t in report["tasks"]:
            self.assertEqual(t["runs"], t["attempt"] + (1 if t["name"] == "summarise" else 0), t)
            if t["attempt"] != 1:
                self.assertIn(f"task {t['taskId']} lost", ran.stderr)
        self.assertEqual(tasks["summarise"]["dependencies"], 4)
        # The approval was asked for, given, and read by the run that sent the email.
        self.assertEqual(report["approval"]["asked"], True)
        self.assertEqual((report["approval"]["answer"], report["approval"]["status"]), ("completed", "completed"))
        email = report["result"]["email"]
        self.assertEqual(email, {"to": "team@example.com", "sent": True, "approval": {"approvedBy": "run.py"}})
        self.assertIn("Hotel Avenida", report["result"]["answer"])
        # The operator saw the job's progress: one of its two reports at least (the Worker sends a task's latest
        # report at most once a second, and a task that ends drops the one not yet sent).
        seen = set(report["progress"].get("job", []))
        self.assertTrue(seen & {"10% asking the model what to do", "50% calling 4 tools"}, report["progress"])
        # Every tool call took a unit of the rate limit, no window held more than its two, and the limit held some
        # calls back: four calls in at least two windows.
        windows = Counter(
            taken["window"] for t in tools for taken in t["rateTaken"] if taken["name"] == "example.tools"
        )
        self.assertEqual(sum(windows.values()), 4, tools)
        self.assertLessEqual(max(windows.values()), 2, windows)
        self.assertGreaterEqual(len(windows), 2, windows)
        self.assertEqual(report["rateLimit"]["mostInAWindow"], max(windows.values()))


if __name__ == "__main__":
    unittest.main()
