"""An agent in the style of an LLM tool-using agent, on the Python SDK: a worker for three kinds of task.

- ``job``: the model reads the question and calls tools. Each tool call becomes a follow-up task that names the
  ``example.tools`` rate limit (the tools' provider allows two calls a second), and a ``summarise`` task that
  depends on all of them (a fan-in) takes their results.
- ``tool``: one tool call, reporting progress while it works.
- ``summarise``: the model's second turn reads the tool results and wants to send an email. Sending needs a
  person's approval: the task suspends on a waitpoint, and the run that resumes sends the email only if the
  waitpoint was completed (approved), not if it was rejected or timed out.

The model is a script (:class:`ScriptedModel`), so the example runs offline and the same every time.

Run it against ``npm start`` with an agent's token (``run.py`` registers one and starts this file for you)::

    AGENT_SCHEDULER_ENDPOINT=http://127.0.0.1:3000 AGENT_SCHEDULER_TOKEN=a_... python3 agent.py  # Ctrl-C drains

with ``PYTHONPATH=python/src`` unless the wheel is installed.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent_scheduler import Client, NonRetryableError, TaskContext, Worker
from agent_scheduler.types import BatchItemResult, ChildTaskSpec, ClaimedTask

log = logging.getLogger("python_agent")

#: Where jobs and tool calls go, and where the summaries go: two queues of the local stack.
JOB_QUEUE = "research"
SUMMARY_QUEUE = "summaries"
#: The named rate limit every tool call takes a unit of; ``run.py`` sets its terms.
TOOL_RATE_LIMIT = "example.tools"
#: The queues are shared (the Quick start's worker serves ``research`` too): this example's tasks require a label
#: that only its agent has, so no other agent takes them.
LABEL = {"example": "python-agent"}
#: Tools whose call a person must approve first.
NEEDS_APPROVAL = frozenset({"send_email"})
#: How long the model thinks, and a tool works: what a real call to a provider would take.
MODEL_SECONDS = 0.3
TOOL_SECONDS = 0.3
#: How long a request for approval waits for its answer before the email is given up.
APPROVAL_SECONDS = 3600


@dataclass(frozen=True)
class ToolCall:
    """A tool the model wants called, with its arguments."""

    name: str
    args: dict[str, Any]


@dataclass(frozen=True)
class Reply:
    """The model's last turn: its answer, and the tool call that delivers it."""

    answer: str
    call: ToolCall


class ScriptedModel:
    """A stand-in for an LLM with tool use: it answers from a script, after the time a model would take. A real agent
    would send the question, and then the tool results, to a model's API here."""

    def plan(self, question: str) -> list[ToolCall]:
        """The first turn: the tools to call for ``question``, all at once."""
        time.sleep(MODEL_SECONDS)
        log.info("the model reads %r and calls 4 tools", question)
        return [
            ToolCall("search_web", {"query": "Lisbon hotels for 12 people in May"}),
            ToolCall("search_web", {"query": "return flights Berlin to Lisbon in May"}),
            ToolCall("weather", {"city": "Lisbon", "month": "May"}),
            ToolCall("exchange_rate", {"base": "EUR", "quote": "USD"}),
        ]

    def answer(self, results: Sequence[str], notify: str) -> Reply:
        """The second turn: an answer from the tool results, to be sent by email to ``notify``."""
        time.sleep(MODEL_SECONDS)
        answer = "About 8,160 EUR for 12 people and 3 nights. " + " ".join(results)
        subject = "Team offsite in Lisbon: about 8,160 EUR"
        return Reply(answer, ToolCall("send_email", {"to": notify, "subject": subject, "body": answer}))


def run_tool(name: str, args: dict[str, Any]) -> str:
    """The tools, with canned outputs (a real one calls a search API, a weather service, ...)."""
    outputs = {
        "search_web": {
            "Lisbon hotels for 12 people in May": "Hotel Avenida: 170 EUR a room a night.",
            "return flights Berlin to Lisbon in May": "Flights: 170 EUR return.",
        }.get(args.get("query", ""), "Nothing found."),
        "weather": f"{args.get('city')} in {args.get('month')}: sunny, 22 °C.",
        "exchange_rate": "1 EUR = 1.08 USD.",
    }
    if name not in outputs:
        raise NonRetryableError(f"no tool called {name!r}")
    return outputs[name]


def described(name: str, args: dict[str, Any]) -> str:
    """A tool call as people read it: ``weather(city='Lisbon', month='May')``."""
    return f"{name}({', '.join(f'{key}={value!r}' for key, value in args.items())})"


def send_email(to: str, subject: str, body: str) -> None:
    """Sends the email (here: says so in the log)."""
    log.info("email sent to %s: %r (%d characters)", to, subject, len(body))


MODEL = ScriptedModel()


def handle(task: ClaimedTask, ctx: TaskContext) -> Any:
    """The worker's handler: one function per kind of task."""
    kind = task["payload"].get("kind")
    if kind == "job":
        return plan_job(task, ctx)
    if kind == "tool":
        return call_tool(task, ctx)
    if kind == "summarise":
        return summarise(task, ctx)
    # Another's task of a shared queue (it requires no label, so any agent of the queue may be given it): given back
    # for a minute, no attempt used, for the agent it is meant for.
    log.info("task %s is not this example's: given back for a minute", task["taskId"])
    return ctx.snooze(60)


def plan_job(task: ClaimedTask, ctx: TaskContext) -> Any:
    """Asks the model, then submits a task per tool call and the fan-in that summarises their results.

    Follow-up tasks are named by their ``key``: a job run again after a crash gets the same tasks back."""
    question: str = task["payload"]["question"]
    ctx.progress(percent=10, message="asking the model what to do")
    calls = MODEL.plan(question)
    ctx.progress(percent=50, message=f"calling {len(calls)} tools")
    tools = task_ids(
        ctx.submit(
            [
                {
                    "key": f"tool-{i}",
                    "queue": JOB_QUEUE,
                    "payload": {"kind": "tool", "tool": call.name, "args": call.args},
                    "rateLimits": [{"name": TOOL_RATE_LIMIT}],
                    "require": LABEL,
                }
                for i, call in enumerate(calls)
            ]
        )
    )
    summary: ChildTaskSpec = {
        "key": "summarise",
        "queue": SUMMARY_QUEUE,
        "payload": {"kind": "summarise", "notify": task["payload"]["notify"], "tools": tools},
        # Queued once every tool call succeeded; cancelled if one of them ends dead.
        "dependsOn": tools,
        "require": LABEL,
    }
    [summarise_id] = task_ids(ctx.submit([summary]))
    return {"tools": tools, "summarise": summarise_id}


def task_ids(results: list[BatchItemResult]) -> list[str]:
    """The ids of submitted follow-up tasks; raises (the attempt fails and is tried again) if one was refused."""
    ids: list[str] = []
    for result in results:
        if result["ok"] is False:
            raise RuntimeError(f"a follow-up task was refused: {result['error']}")
        ids.append(result["task"]["taskId"])
    return ids


def call_tool(task: ClaimedTask, ctx: TaskContext) -> Any:
    """One tool call, claimed only when the ``example.tools`` rate limit had room for it."""
    name: str = task["payload"]["tool"]
    args: dict[str, Any] = task["payload"]["args"]
    ctx.progress(percent=0, message=f"calling {described(name, args)}")
    if ctx.cancelled.wait(TOOL_SECONDS):  # the lease is gone: nothing we return would be kept
        return None
    output = run_tool(name, args)
    log.info("%s: %s", described(name, args), output)
    return {"tool": name, "output": output}


def summarise(task: ClaimedTask, ctx: TaskContext) -> Any:
    """The model's last turn, then the email it wants to send, once a person approved it."""
    payload = task["payload"]
    waitpoint = ctx.waitpoint
    if waitpoint is None:
        dependencies = task.get("dependencies", {})
        results = [dependencies[tool_id].get("result", {}).get("output", "") for tool_id in payload["tools"]]
        ctx.progress(percent=20, message=f"reading {len(results)} tool results")
        reply = MODEL.answer(results, payload["notify"])
        if reply.call.name not in NEEDS_APPROVAL:
            return {"answer": reply.answer}
        log.info("the model wants to %s %s: asking for approval", reply.call.name, reply.call.args["to"])
        # The lease goes back while a person decides; the checkpoint is handed to the run that resumes.
        return ctx.suspend(APPROVAL_SECONDS, checkpoint={"answer": reply.answer, "email": reply.call.args})
    saved = task.get("checkpoint")
    if saved is None:
        raise NonRetryableError("resumed without the checkpoint its suspension saved")
    email: dict[str, Any] = saved["email"]
    if waitpoint["outcome"] != "completed":
        why = waitpoint.get("reason", "no answer in time")
        log.info("the email to %s was not approved: %s", email["to"], why)
        return {"answer": saved["answer"], "email": {"to": email["to"], "sent": False, "why": why}}
    ctx.progress(percent=90, message=f"sending the email to {email['to']}")
    send_email(email["to"], email["subject"], email["body"])
    approval = waitpoint.get("data")
    return {"answer": saved["answer"], "email": {"to": email["to"], "sent": True, "approval": approval}}


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="[agent] %(message)s")
    client = Client(os.environ["AGENT_SCHEDULER_ENDPOINT"], token=os.environ["AGENT_SCHEDULER_TOKEN"])
    # Four tasks at a time: tool calls run side by side, as many as the rate limit lets through.
    Worker(client, handle, concurrency=4).run()  # SIGINT/SIGTERM drain: running tasks finish, no new claims


if __name__ == "__main__":
    main()
