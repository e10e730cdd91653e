"""One JSON request to the API: authentication, an optional signer, a timeout per attempt, and retries.

Retries back off exponentially with full jitter (uniform in zero to the cap), so a fleet that failed together does
not come back in one wave; a ``Retry-After`` from the server wins over the computed delay. Every attempt is built
and signed anew: a signature covers the time it was made.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast

from .errors import AgentSchedulerError, NetworkError, error_for_response
from .limits import to_json

log = logging.getLogger("agent_scheduler.transport")

USER_AGENT = "agent-scheduler-python/0.1.0"

RetryMode = Literal["always", "unprocessed"]
"""``always``: the call is idempotent, any transient failure is retried. ``unprocessed``: only answers meaning
"not done, come back" (429, 503) are; a network error or a 500 may hide a committed write."""

_TRANSIENT = frozenset({429, 500, 502, 503, 504})
_UNPROCESSED = frozenset({429, 503})
_REQUEST_ID_HEADERS = ("apigw-requestid", "x-amzn-requestid", "x-request-id")


@dataclass(frozen=True)
class HttpRequest:
    """A request as it goes on the wire; header names in lower case."""

    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes | None = None

    def with_headers(self, headers: Mapping[str, str]) -> HttpRequest:
        """The same request with ``headers`` added or replaced."""
        return replace(self, headers={**self.headers, **{k.lower(): v for k, v in headers.items()}})


@dataclass(frozen=True)
class HttpResponse:
    """An answer, whatever its status; header names in lower case."""

    status: int
    headers: Mapping[str, str]
    body: bytes


Send = Callable[[HttpRequest, float], HttpResponse]
"""Sends one request with a timeout in seconds; raises ``OSError`` when no answer comes."""

Signer = Callable[[HttpRequest], HttpRequest]
"""Signs one attempt (SigV4: :class:`agent_scheduler.sigv4.SigV4Signer`)."""


def urllib_send(request: HttpRequest, timeout: float) -> HttpResponse:
    """:data:`Send` with the standard library's ``urllib``: a connection per request, any status answered."""
    # Imported at the first request, not with the package: urllib.request brings ssl, http.client and email (a
    # seventh of the package's import time), which a process that only builds requests or reads types never needs.
    import urllib.error  # noqa: PLC0415
    import urllib.request  # noqa: PLC0415

    # The endpoint was checked to be http(s) (Transport), so no file: or custom scheme reaches urlopen.
    prepared = urllib.request.Request(  # noqa: S310
        request.url, data=request.body, headers=dict(request.headers), method=request.method
    )
    try:
        with urllib.request.urlopen(prepared, timeout=timeout) as response:  # noqa: S310
            return HttpResponse(response.status, _lower(response.headers.items()), response.read())
    except urllib.error.HTTPError as error:
        with error:
            return HttpResponse(error.code, _lower(error.headers.items()), error.read())
    except urllib.error.URLError as error:
        reason = error.reason
        raise reason if isinstance(reason, OSError) else OSError(str(reason)) from error


def _lower(items: Any) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in items}


@dataclass(frozen=True)
class RetryPolicy:
    """When a failed request is tried again, and after how long."""

    #: Attempts in all, the first included.
    max_attempts: int = 4
    #: Cap of the first retry's delay in seconds; each later retry doubles it.
    base_delay: float = 0.1
    #: No computed delay is longer, and a ``Retry-After`` asking for more is not waited for.
    max_delay: float = 5.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, not {self.max_attempts}")
        if not 0 <= self.base_delay <= self.max_delay:
            raise ValueError("retries need 0 <= base_delay <= max_delay")

    def delay(self, retry: int, draw: Callable[[], float] = random.random) -> float:
        """Full jitter: uniform in [0, min(max, base * 2^(retry - 1))]; ``retry`` counts from 1."""
        return draw() * min(self.max_delay, self.base_delay * 2 ** min(retry - 1, 30))


def parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds: delta-seconds or an HTTP date; None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    import email.utils  # noqa: PLC0415 (only for an HTTP date, which the API never sends itself)

    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass
class Transport:
    """Sends the client's calls: see the module's description."""

    endpoint: str
    token: str | None = None
    signer: Signer | None = None
    send: Send = urllib_send
    retries: RetryPolicy = field(default_factory=RetryPolicy)
    #: Longest a single attempt may take, in seconds.
    timeout: float = 30.0
    user_agent: str = USER_AGENT

    def __post_init__(self) -> None:
        if not self.endpoint.startswith(("http://", "https://")):
            raise ValueError(f"endpoint must be an http(s) URL, not {self.endpoint!r}")
        self.endpoint = self.endpoint.rstrip("/")

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | int | None] | None = None,
        body: Any = None,
        retry: RetryMode = "always",
        timeout: float | None = None,
        abandon: threading.Event | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[int, Any]:
        """The status and JSON body of a 2xx answer; raises :class:`AgentSchedulerError` otherwise.

        ``abandon``, once set, ends the call between attempts (an ``Aborted`` error): a Worker abandons the calls
        about a lease its own reckoning says is over, whatever the network is doing. ``headers`` are sent besides
        the transport's own (a ``traceparent``).
        """
        url = f"{self.endpoint}{path}"
        params = {k: str(v) for k, v in (query or {}).items() if v is not None}
        if params:
            # Spaces as %20, not "+": a SigV4 signature reads the query as the server decodes it.
            url = f"{url}?{urllib.parse.urlencode(params, quote_via=urllib.parse.quote)}"
        data = None if body is None else to_json(body).encode("utf-8")
        attempt = 0
        while True:
            attempt += 1
            _check(abandon)
            outcome = self._attempt(method, url, data, timeout or self.timeout, headers)
            _check(abandon)
            last = attempt >= self.retries.max_attempts
            if isinstance(outcome, NetworkError):
                if last or retry != "always":
                    raise outcome
                _wait(self.retries.delay(attempt), abandon)
                continue
            if 200 <= outcome.status < 300:
                return outcome.status, _json(outcome.body)
            error = _error_of(outcome)
            codes = _TRANSIENT if retry == "always" else _UNPROCESSED
            if last or outcome.status not in codes:
                raise error
            # Never sooner than the server asked; if it asks for longer than the policy waits, say so.
            if error.retry_after is not None and error.retry_after > self.retries.max_delay:
                raise error
            _wait(error.retry_after if error.retry_after is not None else self.retries.delay(attempt), abandon)

    def _attempt(
        self, method: str, url: str, data: bytes | None, timeout: float, extra: Mapping[str, str] | None = None
    ) -> HttpResponse | NetworkError:
        headers = {"accept": "application/json", "user-agent": self.user_agent, **(extra or {})}
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        if data is not None:
            headers["content-type"] = "application/json"
        request = HttpRequest(method, url, headers, data)
        if self.signer is not None:
            request = self.signer(request)
        started = time.monotonic()
        try:
            response = self.send(request, timeout)
        except (OSError, ValueError) as error:
            timed_out = isinstance(error, TimeoutError)
            log.debug("%s %s: %s after %.0f ms", method, _path_of(url), error, (time.monotonic() - started) * 1e3)
            return NetworkError(
                0,
                "Timeout" if timed_out else "NetworkError",
                "the request timed out" if timed_out else f"the request failed: {error}",
            )
        log.debug("%s %s: %d in %.0f ms", method, _path_of(url), response.status, (time.monotonic() - started) * 1e3)
        return response


def _path_of(url: str) -> str:
    """The path of a request's URL, for the log: never its query, which may carry a waitpoint's token."""
    return urllib.parse.urlsplit(url).path


def _check(abandon: threading.Event | None) -> None:
    if abandon is not None and abandon.is_set():
        raise AgentSchedulerError(
            0, "Aborted", "the call was abandoned: the lease it was about is over by the agent's own reckoning"
        )


def _wait(seconds: float, abandon: threading.Event | None) -> None:
    if abandon is None:
        time.sleep(seconds)
    else:
        abandon.wait(seconds)


def _json(body: bytes) -> Any:
    if not body:
        return None
    try:
        return json.loads(body)
    except ValueError as error:
        raise AgentSchedulerError(0, "InvalidResponse", "the server answered with a body that is not JSON") from error


def _error_of(response: HttpResponse) -> AgentSchedulerError:
    """The server's ``{ error: { code, message }, requestId }``, or API Gateway's own ``{ message }``."""
    try:
        body = json.loads(response.body) if response.body else None
    except ValueError:
        body = None
    record: dict[str, Any] = cast("dict[str, Any]", body) if isinstance(body, dict) else {}
    inner = record.get("error")
    detail: dict[str, Any] = cast("dict[str, Any]", inner) if isinstance(inner, dict) else record
    code = detail.get("code")
    message = detail.get("message")
    request_id = record.get("requestId")
    if not isinstance(request_id, str):
        request_id = next((response.headers[h] for h in _REQUEST_ID_HEADERS if h in response.headers), None)
    return error_for_response(
        response.status,
        code if isinstance(code, str) else f"Http{response.status}",
        message if isinstance(message, str) else f"the server answered {response.status}",
        request_id=request_id,
        retry_after=parse_retry_after(response.headers.get("retry-after")),
    )
