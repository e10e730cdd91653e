"""What the tests that need a server share: the local stack ``test/e2e/python-sdk.test.ts`` serves (its URL and
operator token in the environment), agents registered on it, and a ``send`` the tests can cut or lose answers of."""

from __future__ import annotations

import asyncio
import os
import threading
import time
import unittest
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
    """A ``send`` that passes requests on, or fails them while ``cut``; ``lose`` loses the answer of the next
    request that matches, after the server has acted on it."""

    def __init__(self) -> None:
        self.cut = False
        self.sent: list[HttpRequest] = []
        self._lose: Callable[[HttpRequest, HttpResponse], bool] | None = None
        self.lost = 0
        self._lock = threading.Lock()

    def lose(self, matches: Callable[[HttpRequest, HttpResponse], bool]) -> None:
        self._lose = matches

    def __call__(self, request: HttpRequest, timeout: float) -> HttpResponse:
        if self.cut:
            raise ConnectionError("network cut")
        with self._lock:
            self.sent.append(request)
        response = urllib_send(request, timeout)
        with self._lock:
            matches = self._lose
            if matches is not None and matches(request, response):
                self._lose = None
                self.lost += 1
                raise ConnectionError("the answer was lost")
        return response


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
