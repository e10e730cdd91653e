"""What the tests that need a server share: the local stack ``test/e2e/python-sdk.test.ts`` serves (its URL and
operator token in the environment), agents registered on it, and a ``send`` the tests can cut or lose answers of."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
import unittest
import urllib.parse
from collections.abc import Callable
from typing import Any

from agent_scheduler import Client, HttpRequest, HttpResponse, RetryPolicy
from agent_scheduler.transport import urllib_send

ENDPOINT = os.environ.get("AGENT_SCHEDULER_ENDPOINT")
OPERATOR_TOKEN = os.environ.get("AGENT_SCHEDULER_OPERATOR_TOKEN", "")

needs_stack = unittest.skipUnless(ENDPOINT, "AGENT_SCHEDULER_ENDPOINT not set: run through npm test")


def operator() -> Client:
    assert ENDPOINT is not None
    return Client(ENDPOINT, token=OPERATOR_TOKEN)


class Network:
    """A ``send`` that passes requests on, or fails them while ``cut`` (or ``block`` says so of one); ``lose`` loses
    the answer of the next request that matches, after the server has acted on it; ``answered`` keeps each answer
    that came back, with its request and when (monotonic)."""

    def __init__(self) -> None:
        self.cut = False
        self.block: Callable[[HttpRequest], bool] | None = None
        self.sent: list[HttpRequest] = []
        self.answered: list[tuple[HttpRequest, HttpResponse, float]] = []
        self._lose: Callable[[HttpRequest, HttpResponse], bool] | None = None
        self.lost = 0
        self.lost_requests: list[HttpRequest] = []
        self._lock = threading.Lock()

    def lose(self, matches: Callable[[HttpRequest, HttpResponse], bool]) -> None:
        self._lose = matches

    def __call__(self, request: HttpRequest, timeout: float) -> HttpResponse:
        block = self.block
        if self.cut or (block is not None and block(request)):
            raise ConnectionError("network cut")
        with self._lock:
            self.sent.append(request)
        response = urllib_send(request, timeout)
        with self._lock:
            matches = self._lose
            if matches is not None and matches(request, response):
                self._lose = None
                self.lost += 1
                self.lost_requests.append(request)
                raise ConnectionError("the answer was lost")
            self.answered.append((request, response, time.monotonic()))
        return response

    def calls(self, path_end: str) -> list[tuple[dict[str, Any], Any]]:
        """The JSON bodies of the requests to a path ending with ``path_end`` that were answered, with the answers'."""
        with self._lock:
            answered = list(self.answered)
        return [
            (json.loads(r.body or b"{}"), json.loads(a.body) if a.body else None)
            for r, a, _ in answered
            if urllib.parse.urlsplit(r.url).path.endswith(path_end)
        ]


def agent(queue: str, *, max_concurrency: int = 1, network: Network | None = None) -> Client:
    """A client for a new agent on ``queue``, with short retries, through ``network`` when given."""
    assert ENDPOINT is not None
    created = operator().create_agent({"name": f"py-{queue}", "queues": [queue], "maxConcurrency": max_concurrency})
    return Client(
        ENDPOINT,
        token=created["token"],
        send=network or urllib_send,
        retries=RetryPolicy(max_attempts=2, base_delay=0.02, max_delay=0.05),
    )


async def wait_for(check: Callable[[], Any], timeout: float = 15.0) -> None:
    """Resolves once ``check()`` is truthy (polled every 50 ms); fails the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        await asyncio.sleep(0.05)


async def task_status(client: Client, task_id: str) -> str:
    task = await asyncio.to_thread(client.get_task, task_id)
    return task["status"]
