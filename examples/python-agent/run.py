"""The Python agent's demo (``npm run example:python``, with ``npm start`` running): one job, from its submission to
its approved email, told as it happens.

As an operator, it sets the terms of the ``example.tools`` rate limit, registers an agent and starts ``agent.py`` as
that agent, submits a job, and watches the job's tasks (status and progress) until its summary ends. When the agent
asks for approval to send an email, it approves (``complete_waitpoint``), or rejects with ``--reject REASON``
(``reject_waitpoint``); with ``--by-hand`` it waits for a person to answer in the console or with the CLI. Then it
stops the worker (which drains), revokes the agent and says what happened; ``--json`` prints that as JSON instead.

Endpoint and operator token: ``AGENT_SCHEDULER_ENDPOINT`` and ``AGENT_SCHEDULER_TOKEN``, else the
``.agent-scheduler/local.json`` that ``npm start`` writes, found from the current folder up as the CLI finds it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agent import JOB_QUEUE, LABEL, SUMMARY_QUEUE, TOOL_RATE_LIMIT
from agent_scheduler import AgentSchedulerError, Client
from agent_scheduler.types import RateLimitTerms, Task

HERE = Path(__file__).resolve().parent
QUESTION = "What would a three-night team offsite in Lisbon cost?"
NOTIFY = "team@example.com"
#: The tools' provider allows two calls a second: windows of a second (aligned to UTC) of two calls each.
TOOL_TERMS: RateLimitTerms = {"limit": 2, "per": "second"}
ENDED = frozenset({"succeeded", "dead", "cancelled", "expired"})
#: How often the operator reads the job's open tasks.
POLL_SECONDS = 0.2


@dataclass(frozen=True)
class Options:
    """How the operator answers the approval (with ``reason`` for a rejection), how long the job may take, and
    whether to print the report as JSON rather than the story."""

    answer: Literal["approve", "reject", "by-hand"]
    reason: str
    timeout: float
    json: bool

    def say(self, line: str) -> None:
        if not self.json:
            print(line, flush=True)


@dataclass
class Watched:
    """One task of the job, as the operator last read it, and the progress reports seen on it."""

    name: str
    task: Task
    progress: list[str] = field(default_factory=list[str])


def connection() -> tuple[str, str, str]:
    """The endpoint, the operator token and where they came from."""
    endpoint = os.environ.get("AGENT_SCHEDULER_ENDPOINT")
    token = os.environ.get("AGENT_SCHEDULER_TOKEN")
    if endpoint and token:
        return endpoint, token, "the environment"
    for folder in [Path.cwd(), *Path.cwd().parents]:
        local = folder / ".agent-scheduler" / "local.json"
        if local.is_file():
            saved = json.loads(local.read_text(encoding="utf-8"))
            if "operatorToken" not in saved:
                raise SystemExit(f"{local} has no operator token (the stack signs with AWS): start it without --iam")
            return saved["endpoint"], saved["operatorToken"], str(local)
    raise SystemExit(
        "no agent-scheduler found: start one with `npm start` in another terminal "
        "(or set AGENT_SCHEDULER_ENDPOINT and AGENT_SCHEDULER_TOKEN)"
    )


class Demo:
    """Submits the job and watches it to its end, answering the approval it asks for."""

    def __init__(self, ops: Client, options: Options) -> None:
        self.ops = ops
        self.options = options
        self.say = options.say
        self.tasks: dict[str, Watched] = {}
        self.job_id = ""
        self.summarise_id = ""
        self.approval: dict[str, Any] = {"asked": False}

    def run(self) -> None:
        """Submits the job; returns once its summary has ended, or the job failed; raises ``TimeoutError`` when
        neither came in time."""
        payload = {"kind": "job", "question": QUESTION, "notify": NOTIFY}
        job = self.ops.submit_task({"queue": JOB_QUEUE, "payload": payload, "require": LABEL}).task
        self.job_id = job["taskId"]
        self.tasks[self.job_id] = Watched("job", job)
        self.say(f"job {self.job_id} submitted to {JOB_QUEUE}: {QUESTION!r}")
        deadline = time.monotonic() + self.options.timeout
        while not self.over():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the job did not end within {self.options.timeout:.0f} s")
            time.sleep(POLL_SECONDS)
            for watched in list(self.tasks.values()):
                if watched.task["status"] not in ENDED:
                    self.look(watched)

    def over(self) -> bool:
        job = self.tasks[self.job_id].task
        if job["status"] in ENDED and job["status"] != "succeeded":
            return True
        summary = self.tasks.get(self.summarise_id)
        return summary is not None and summary.task["status"] in ENDED

    def look(self, watched: Watched) -> None:
        """Reads a task again and tells what changed: its status, a progress report, the job's follow-up tasks,
        the approval its summary waits for."""
        before = watched.task
        task = self.ops.get_task(before["taskId"])
        watched.task = task
        if task["status"] != before["status"]:
            self.say(f"  {watched.name:<22} {task['status']}")
        progress = task.get("progress")
        if progress is not None:
            line = f"{progress.get('percent', 0):.0f}% {progress.get('message', '')}"
            if line not in watched.progress:
                watched.progress.append(line)
                self.say(f"  {watched.name:<22} progress {line}")
        if task["taskId"] == self.job_id and task["status"] == "succeeded":
            self.follow(task.get("result", {}))
        if task["status"] == "suspended" and not self.approval["asked"]:
            self.ask(task)

    def follow(self, result: dict[str, Any]) -> None:
        """Watches the tasks the job submitted: a task per tool call, and the summary that depends on them."""
        for i, tool_id in enumerate(result["tools"]):
            tool = self.ops.get_task(tool_id, include_payload=True)
            self.tasks[tool_id] = Watched(f"tool-{i} {tool.get('payload', {}).get('tool', '')}", tool)
        self.summarise_id = result["summarise"]
        self.tasks[self.summarise_id] = Watched("summarise", self.ops.get_task(self.summarise_id))
        self.say(f"  the job made {len(result['tools'])} tool calls and a summary that waits for them")

    def ask(self, task: Task) -> None:
        """The summary waits on a waitpoint for someone to approve its email: answer it (or say how to)."""
        waitpoint = self.ops.get_waitpoint(task.get("waitpointId", ""))
        wid = waitpoint["waitpointId"]
        # What the agent saved when it suspended: the email it wants to send.
        saved: dict[str, Any] = task.get("checkpoint") or {}
        email: dict[str, Any] = saved.get("email", {})
        self.approval = {"asked": True, "waitpointId": wid, "status": waitpoint["status"]}
        self.say(f"approval needed (waitpoint {wid}): email {email.get('to')} {email.get('subject')!r}")
        if self.options.answer == "approve":
            answered = self.ops.complete_waitpoint(wid, {"data": {"approvedBy": "run.py"}})
            self.say("  approved (complete_waitpoint)")
        elif self.options.answer == "reject":
            answered = self.ops.reject_waitpoint(wid, {"reason": self.options.reason})
            self.say(f"  rejected (reject_waitpoint): {self.options.reason}")
        else:
            self.say(f"  approve it in the console, or: npx agent-scheduler waitpoints complete {wid} --data '{{}}'")
            self.say(f"  or reject it: npx agent-scheduler waitpoints reject {wid} --reason 'not now'")
            return
        self.approval["answer"] = answered["status"]

    def report(self, seconds: float) -> dict[str, Any]:
        """What happened, from the server's records: every task's end and runs, the windows of the rate limit the
        tool calls took from, the approval, the progress seen and the summary's result."""
        tasks = [self.ops.get_task(task_id) for task_id in self.tasks]
        windows = Counter(
            taken["window"] for t in tasks for taken in t.get("rateTaken", []) if taken["name"] == TOOL_RATE_LIMIT
        )
        if self.approval.get("waitpointId"):
            self.approval["status"] = self.ops.get_waitpoint(self.approval["waitpointId"])["status"]
        summary = next((t for t in tasks if t["taskId"] == self.summarise_id), None)
        return {
            "job": self.job_id,
            "succeeded": summary is not None and all(t["status"] == "succeeded" for t in tasks),
            "seconds": round(seconds, 2),
            "tasks": [
                {
                    "name": self.tasks[t["taskId"]].name,
                    "taskId": t["taskId"],
                    "queue": t["queue"],
                    "status": t["status"],
                    "attempt": t["attempt"],
                    # Each grant of a lease, so each run of the handler, moves the epoch on by one.
                    "runs": t["leaseEpoch"],
                    "dependencies": t.get("dependencyCount", 0),
                    "rateTaken": t.get("rateTaken", []),
                    **({"error": t["error"]} if "error" in t else {}),
                }
                for t in tasks
            ],
            "rateLimit": {
                "name": TOOL_RATE_LIMIT,
                "terms": TOOL_TERMS,
                "windows": len(windows),
                "mostInAWindow": max(windows.values(), default=0),
            },
            "approval": self.approval,
            "progress": {w.name: w.progress for w in self.tasks.values() if w.progress},
            "result": summary.get("result") if summary else None,
        }


def start_agent(endpoint: str, token: str) -> subprocess.Popen[bytes]:
    """``agent.py`` in a process of its own, as the agent whose token it is; its log goes to standard error."""
    env = {**os.environ, "AGENT_SCHEDULER_ENDPOINT": endpoint, "AGENT_SCHEDULER_TOKEN": token}
    return subprocess.Popen([sys.executable, str(HERE / "agent.py")], env=env, stdout=sys.stderr)  # noqa: S603


def stop_agent(process: subprocess.Popen[bytes]) -> int | None:
    """SIGTERM drains the worker: running tasks finish, no new claims. Its exit code (None if it had to be killed)."""
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return None


def run_demo(endpoint: str, token: str, options: Options) -> dict[str, Any]:
    """Sets the rate limit, runs ``agent.py`` as a new agent, submits the job and watches it: the report."""
    ops = Client(endpoint, token=token)
    ops.set_rate_limit(TOOL_RATE_LIMIT, TOOL_TERMS)
    options.say(f"rate limit {TOOL_RATE_LIMIT}: {TOOL_TERMS['limit']} calls a {TOOL_TERMS['per']}")
    created = ops.create_agent(
        {"name": "python-agent", "queues": [JOB_QUEUE, SUMMARY_QUEUE], "maxConcurrency": 4, "labels": {**LABEL}}
    )
    agent_id = created["agent"]["agentId"]
    options.say(f"agent {agent_id} registered; agent.py runs as it")
    worker = start_agent(endpoint, created["token"])
    demo = Demo(ops, options)
    started = time.monotonic()
    try:
        demo.run()
    except TimeoutError as error:
        print(error, file=sys.stderr)
    finally:
        seconds = time.monotonic() - started
        exit_code = stop_agent(worker)
        ops.revoke_agent(agent_id)
    return {**demo.report(seconds), "worker": {"exitCode": exit_code}}


def print_summary(report: dict[str, Any]) -> None:
    print(f"\ndone in {report['seconds']} s: the job {'succeeded' if report['succeeded'] else 'did not succeed'}")
    for t in report["tasks"]:
        windows = ", ".join(f"window {taken['window'][11:23]}" for taken in t["rateTaken"])
        print(f"  {t['name']:<22} {t['taskId']} {t['status']:<9} runs {t['runs']}  {windows}".rstrip())
    limit = report["rateLimit"]
    print(
        f"rate limit {limit['name']}: the tool calls took {limit['windows']} windows of a second, at most "
        f"{limit['mostInAWindow']} in one (the limit: {TOOL_TERMS['limit']})"
    )
    result: dict[str, Any] = report["result"] or {}
    print(f"answer: {result.get('answer')}")
    print(f"email: {json.dumps(result.get('email'))}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The Python agent's demo, against a running `npm start`.")
    answers = parser.add_mutually_exclusive_group()
    answers.add_argument("--reject", metavar="REASON", help="reject the email instead of approving it")
    answers.add_argument("--by-hand", action="store_true", help="wait for a person to answer (console or CLI)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON, nothing else on stdout")
    parser.add_argument("--timeout", type=float, help="seconds the job may take (60, or an hour with --by-hand)")
    args = parser.parse_args(argv)
    options = Options(
        answer="reject" if args.reject else "by-hand" if args.by_hand else "approve",
        reason=args.reject or "",
        timeout=args.timeout or (3600 if args.by_hand else 60),
        json=args.json,
    )
    endpoint, token, source = connection()
    try:
        Client(endpoint, token=token).health()
        options.say(f"agent-scheduler at {endpoint} (from {source})")
        report = run_demo(endpoint, token, options)
    except AgentSchedulerError as error:
        hint = " Is `npm start` running?" if error.status == 0 else ""
        print(f"error: {endpoint} (from {source}): {error}.{hint}", file=sys.stderr)
        return 1
    if options.json:
        print(json.dumps(report, indent=2))
    else:
        print_summary(report)
    return 0 if report["succeeded"] and report["worker"]["exitCode"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
