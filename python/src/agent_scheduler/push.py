"""The push channel's client, as the TypeScript SDK's ``push-channel.ts``: one WebSocket to the deployment, opened with
a fresh single-use ticket each time, kept alive with a ``ping`` frame on connect and every nine minutes, dropped as
dead when a ping goes unanswered (once the deployment has answered one), replaced before API Gateway's two-hour limit
(the new socket opens before the old one closes, so no frame falls between them), and opened again with jittered
exponential backoff whenever it closes.

Pushes are hints: a wake says work may be waiting, a role frame that a grant committed, a cancel frame that a task
the agent holds was cancelled, a task frame that a watched task ended. The HTTP API stays the truth, and whoever uses
the channel polls as it would without one while it is down. The socket is this package's own small WebSocket client
(``_websocket.py``), so the channel needs nothing beyond the standard library.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast

from . import _websocket as websocket
from ._listeners import Listeners, call_listeners
from ._running import Backoff
from .errors import AgentSchedulerError
from .transport import USER_AGENT
from .types import TaskProgress

if TYPE_CHECKING:
    import ssl

__all__ = [
    "CancelFrame",
    "PushChannel",
    "PushChannelState",
    "PushErrorFrame",
    "PushFrame",
    "PushOptions",
    "RoleFrame",
    "SubscribedFrame",
    "TaskFrame",
    "WakeFrame",
    "parse_frame",
]

log = logging.getLogger("agent_scheduler.push")

#: The version of the frames this client reads and writes; frames of any other version are ignored.
PUSH_VERSION = 1
#: The statuses a task ends in.
TASK_ENDS = frozenset({"succeeded", "dead", "cancelled", "expired"})
_PING = json.dumps({"type": "ping"}, separators=(",", ":"))


@dataclass(frozen=True)
class PushOptions:
    """How the push channel is opened and kept (times in seconds)."""

    #: API Gateway closes a WebSocket idle for 10 minutes: a ``ping`` goes out this often.
    keep_alive: float = 9 * 60.0
    #: A ``ping`` unanswered this long means the socket is dead, though no close reached the client (a NAT that forgot
    #: it, a half-open TCP connection): API Gateway's mock route answers in milliseconds.
    pong_timeout: float = 10.0
    #: API Gateway closes any WebSocket after 2 hours: a new one replaces it this long after it connected.
    reconnect_after: float = 110 * 60.0
    #: The wait before connecting again after a close or a failed connect: from the first, doubling to the second,
    #: each drawn between its half and its whole so that clients dropped together come back apart.
    reconnect_delay: tuple[float, float] = (0.5, 30.0)
    #: The longest a socket may take to open (TCP, TLS and the handshake) before it is tried again.
    connect_timeout: float = 15.0
    #: TLS for ``wss://``. Default: the system's trust store (``ssl.create_default_context()``).
    ssl_context: ssl.SSLContext | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        Backoff(*self.reconnect_delay)  # checks the bounds now
        for name in ("keep_alive", "pong_timeout", "reconnect_after", "connect_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be more than 0 seconds, not {getattr(self, name)}")


class WakeFrame(TypedDict):
    """Work may be waiting in ``queue``: claim over HTTP. ``reason``: ``submitted``, ``released``, ``retry``, …"""

    type: Literal["wake"]
    version: int
    queue: str
    reason: str


class RoleFrame(TypedDict):
    """A role was granted to this agent; its lease epoch names the grant."""

    type: Literal["role"]
    version: int
    role: str
    event: Literal["granted"]
    leaseEpoch: int


class CancelFrame(TypedDict):
    """A task this agent holds under ``leaseEpoch`` was cancelled: its handler is cancelled now, not at the next
    heartbeat (whose answer says the same, for an agent that missed this)."""

    type: Literal["cancel"]
    version: int
    taskId: str
    leaseEpoch: int


class ProgressFrame(TypedDict):
    """A task this connection watches reported progress: its last report, as ``get_task`` shows it."""

    type: Literal["progress"]
    version: int
    taskId: str
    progress: TaskProgress


class _TaskFrameRequired(TypedDict):
    type: Literal["task"]
    version: int
    taskId: str
    status: Literal["succeeded", "dead", "cancelled", "expired"]


class TaskFrame(_TaskFrameRequired, total=False):
    """A task this connection watches ended; ``result`` is left out (``resultOmitted``) when it would not fit."""

    result: Any
    resultOmitted: bool
    error: dict[str, Any]


class SubscribedTask(TypedDict):
    """One task of a ``subscribed`` answer: its status read after its watch was recorded (None: no such task)."""

    taskId: str
    status: str | None


class SubscribedFrame(TypedDict):
    """The answer to a ``subscribe`` frame."""

    type: Literal["subscribed"]
    version: int
    id: str
    tasks: list[SubscribedTask]


class _PushErrorFrameRequired(TypedDict):
    type: Literal["error"]
    version: int
    code: str
    message: str


class PushErrorFrame(_PushErrorFrameRequired, total=False):
    """A frame the server refused; ``id`` names it when it had one."""

    id: str


PushFrame = WakeFrame | RoleFrame | CancelFrame | ProgressFrame | TaskFrame | SubscribedFrame | PushErrorFrame

PushChannelState = Literal["idle", "connecting", "open", "waiting", "unavailable", "closed"]
"""``idle``: not started; ``connecting``: getting a ticket and opening a socket; ``open``; ``waiting``: closed,
waiting to connect again; ``unavailable``: the deployment offers no push channel, or refuses this caller one (poll);
``closed``: :meth:`PushChannel.close` was called."""

PushEvent = Literal["frame", "connected", "disconnected", "unavailable", "failure"]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_frame(data: str | bytes) -> PushFrame | None:
    """A frame this client understands, or None: not JSON text, of another version, of an unknown type, malformed."""
    if not isinstance(data, str):
        return None
    try:
        parsed: object = json.loads(data)
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    value = cast("dict[str, Any]", parsed)
    if value.get("version") != PUSH_VERSION or isinstance(value.get("version"), bool):
        return None
    kind = value.get("type")
    ok = False
    if kind == "wake":
        ok = isinstance(value.get("queue"), str) and isinstance(value.get("reason"), str)
    elif kind == "role":
        ok = isinstance(value.get("role"), str) and value.get("event") == "granted" and _is_int(value.get("leaseEpoch"))
    elif kind == "cancel":
        ok = isinstance(value.get("taskId"), str) and _is_int(value.get("leaseEpoch"))
    elif kind == "progress":
        progress = value.get("progress")
        ok = (
            isinstance(value.get("taskId"), str)
            and isinstance(progress, dict)
            and isinstance(cast("dict[str, Any]", progress).get("at"), str)
            and _is_int(cast("dict[str, Any]", progress).get("attempt"))
        )
    elif kind == "task":
        ok = isinstance(value.get("taskId"), str) and value.get("status") in TASK_ENDS
    elif kind == "subscribed":
        tasks = value.get("tasks")
        ok = (
            isinstance(value.get("id"), str)
            and isinstance(tasks, list)
            and all(
                isinstance(t, dict)
                and isinstance(cast("dict[str, Any]", t).get("taskId"), str)
                and (
                    cast("dict[str, Any]", t).get("status") is None
                    or isinstance(cast("dict[str, Any]", t).get("status"), str)
                )
                for t in cast("list[Any]", tasks)
            )
        )
    elif kind == "error":
        ok = isinstance(value.get("code"), str) and isinstance(value.get("message"), str)
    return cast(PushFrame, value) if ok else None


def _is_pong(data: str | bytes) -> bool:
    """The answer to a ``ping``: ``{"type":"pong","version":1}``."""
    if not isinstance(data, str) or "pong" not in data:
        return False
    try:
        value: object = json.loads(data)
    except ValueError:
        return False
    return (
        isinstance(value, dict)
        and cast("dict[str, Any]", value).get("type") == "pong"
        and cast("dict[str, Any]", value).get("version") == PUSH_VERSION
    )


def refused_for_good(error: BaseException) -> bool:
    """An answer asking again will not change (a 4xx other than 408 and 429): no push channel here, or none for this
    caller."""
    return isinstance(error, AgentSchedulerError) and 400 <= error.status < 500 and error.status not in (408, 429)


@dataclass(eq=False)
class _Connection:
    """One socket, as the channel sees it."""

    socket: websocket.WebSocket
    phase: Literal["open", "retired", "closed"] = "open"
    keep_alive: asyncio.TimerHandle | None = None
    replace_timer: asyncio.TimerHandle | None = None
    #: Running while a ``ping`` waits for its pong.
    pong_timer: asyncio.TimerHandle | None = None


class PushChannel:
    """The push channel of one client (see the module's description). Used from one event loop.

    ``ticket`` gets a fresh ticket for each connect and answers the URL to open (``push_ticket(...)["url"]``).
    Events (:meth:`on`): ``frame(frame)`` (a frame arrived, on any open socket: during a replacement, on the old one
    too), ``connected()`` (a new socket is open: what the server knew of the previous connection, watches and an
    agent's idleness, is not carried over, so say it again), ``disconnected()`` (no socket is open any more: poll
    meanwhile), ``unavailable(reason)`` (the channel gave up for good: poll), ``failure(error)`` (a connect failed;
    tried again after a backoff). Listeners run on the event loop and must not block.
    """

    def __init__(
        self,
        ticket: Callable[[], Awaitable[str]],
        options: PushOptions | None = None,
        *,
        draw: Callable[[], float] = random.random,
    ) -> None:
        self._ticket = ticket
        self._options = options or PushOptions()
        self._draw = draw
        self._backoff = Backoff(*self._options.reconnect_delay)
        self._state: PushChannelState = "idle"
        #: The socket frames are sent on; during a replacement the old one is still open (and ``retired``).
        self._current: _Connection | None = None
        self._connections: set[_Connection] = set()
        #: A connect loop is running (only one at a time).
        self._connecting = False
        #: The deployment answers pings: an unanswered one then means a dead socket.
        self._pongs_answered = False
        self._listeners: Listeners = {}
        self._background: set[asyncio.Task[Any]] = set()
        #: Sockets closing, and their readers: what :meth:`aclose` waits for (the rest it cancels).
        self._closing: set[asyncio.Task[Any]] = set()
        self._closed_event: asyncio.Event | None = None

    @property
    def state(self) -> PushChannelState:
        """Where the channel is (see :data:`PushChannelState`)."""
        return self._state

    @property
    def connected(self) -> bool:
        """Whether a socket is open now: frames can be sent and pushes heard."""
        return self._current is not None and self._current.phase == "open"

    def on(self, event: PushEvent, listener: Callable[..., Any]) -> None:
        """Calls ``listener`` on ``event``."""
        self._listeners.setdefault(event, []).append(listener)

    def start(self) -> PushChannel:
        """Starts connecting (once, from the event loop); reconnects until :meth:`close`."""
        if self._state != "idle":
            return self
        self._closed_event = asyncio.Event()
        self._state = "connecting"
        self._spawn(self._connect_loop())
        return self

    def send(self, frame: dict[str, Any]) -> bool:
        """Sends a frame on the open socket; False if none is open (or the send failed)."""
        connection = self._current
        if connection is None or connection.phase != "open":
            return False
        try:
            connection.socket.send_text(json.dumps(frame, separators=(",", ":")))
        except (websocket.WebSocketError, OSError, RuntimeError):
            return False
        return True

    def close(self) -> None:
        """Closes every socket and stops reconnecting; :meth:`aclose` also waits for them to close."""
        if self._state == "closed":
            return
        was_connected = self.connected
        self._state = "closed"
        if self._closed_event is not None:
            self._closed_event.set()
        self._current = None
        for connection in list(self._connections):
            self._retire(connection)
        if was_connected:
            self._emit("disconnected")

    async def aclose(self, timeout: float = 2.0) -> None:
        """:meth:`close`, then waits (up to ``timeout`` seconds) for the sockets' closing handshakes; a connect or a
        ticket still under way is abandoned."""
        self.close()
        for task in self._background - self._closing:
            task.cancel()
        pending = [task for task in self._background if not task.done()]
        if not pending:
            return
        _, still = await asyncio.wait(pending, timeout=timeout)
        for task in still:
            task.cancel()

    @property
    def _closed(self) -> bool:
        return self._state == "closed"

    async def _connect_loop(self) -> None:
        """Connects until a socket is open, with backoff between attempts; gives up only when refused for good."""
        if self._connecting:
            return
        self._connecting = True
        try:
            while not self._closed:
                try:
                    await self._connect_once()
                    return
                except Exception as error:  # noqa: BLE001 (every failure is waited out, or gives up for good)
                    if self._closed:
                        return
                    if refused_for_good(error):
                        self._give_up(error)
                        return
                    self._emit("failure", error)
                    if self._current is None:
                        self._state = "waiting"
                    await self._pause(self._jittered(self._backoff.next()))
                    if self._current is None and not self._closed:
                        self._state = "connecting"
        finally:
            self._connecting = False

    async def _connect_once(self) -> None:
        """One ticket, one socket: returns once it is open (and adopted), raises if it fails first."""
        url = await self._ticket()
        if self._closed:
            return
        options = self._options
        socket = await websocket.connect(
            url, ssl_context=options.ssl_context, timeout=options.connect_timeout, user_agent=USER_AGENT
        )
        connection = _Connection(socket)
        self._connections.add(connection)
        if self._closed:
            self._retire(connection)
            return
        self._adopt(connection)

    def _adopt(self, connection: _Connection) -> None:
        """A socket opened: it becomes the one frames go on, and the one it replaces (if any) is closed."""
        loop = asyncio.get_running_loop()
        self._backoff.reset()
        previous = self._current
        self._current = connection
        self._state = "open"
        self._spawn(self._read(connection), closing=True)
        # At once, so that a deployment that answers pings is known to, and the new socket is seen to work.
        self._ping(connection)
        self._arm_keep_alive(connection)

        def replace() -> None:
            # Before the server's limit: a new socket first, then this one goes.
            if self._current is connection and not self._closed:
                self._spawn(self._connect_loop())

        connection.replace_timer = loop.call_later(self._options.reconnect_after, replace)
        if previous is not None:
            self._retire(previous)
        self._emit("connected")

    def _arm_keep_alive(self, connection: _Connection) -> None:
        def tick() -> None:
            if connection.phase != "open":
                return
            self._ping(connection)
            self._arm_keep_alive(connection)

        connection.keep_alive = asyncio.get_running_loop().call_later(self._options.keep_alive, tick)

    def _ping(self, connection: _Connection) -> None:
        """Sends a keep-alive, and drops the socket as dead if the deployment, which answers pings, leaves it
        unanswered."""
        if connection.phase != "open":
            return
        try:
            connection.socket.send_text(_PING)
        except (websocket.WebSocketError, OSError, RuntimeError):
            # A socket that cannot send is closing: its reader sees the close.
            return
        if connection.pong_timer is not None:
            return

        def overdue() -> None:
            connection.pong_timer = None
            if not self._pongs_answered or connection.phase != "open":
                return
            log.info("push channel: a ping went unanswered for %.0f s; connecting again", self._options.pong_timeout)
            self._spawn(connection.socket.close(4000, "no pong"), closing=True)
            self._closed_under(connection)

        connection.pong_timer = asyncio.get_running_loop().call_later(self._options.pong_timeout, overdue)

    async def _read(self, connection: _Connection) -> None:
        try:
            while True:
                message = await connection.socket.recv()
                self._received(connection, message)
        except (websocket.WebSocketError, OSError):
            pass
        finally:
            self._closed_under(connection)

    def _retire(self, connection: _Connection) -> None:
        """Stops using a socket and closes it; its close then changes nothing."""
        if connection.phase in ("retired", "closed"):
            return
        connection.phase = "retired"
        self._stop_timers(connection)
        self._connections.discard(connection)
        if self._current is connection:
            self._current = None
        self._spawn(connection.socket.close(websocket.NORMAL_CLOSURE, "replaced"), closing=True)

    def _closed_under(self, connection: _Connection) -> None:
        """The socket in use closed (the server, the network): poll meanwhile, and connect again after a backoff."""
        was_current = self._current is connection and connection.phase == "open"
        connection.phase = "closed"
        self._stop_timers(connection)
        self._connections.discard(connection)
        if not was_current or self._closed:
            return
        self._current = None
        self._state = "waiting"
        self._emit("disconnected")

        async def again() -> None:
            await self._pause(self._jittered(self._backoff.next()))
            if self._closed or self._current is not None:
                return
            self._state = "connecting"
            await self._connect_loop()

        self._spawn(again())

    @staticmethod
    def _stop_timers(connection: _Connection) -> None:
        for timer in (connection.keep_alive, connection.replace_timer, connection.pong_timer):
            if timer is not None:
                timer.cancel()
        connection.keep_alive = connection.replace_timer = connection.pong_timer = None

    def _received(self, connection: _Connection, data: str | bytes) -> None:
        if connection.phase not in ("open", "retired") or self._closed:
            return
        if _is_pong(data):
            self._pongs_answered = True
            if connection.pong_timer is not None:
                connection.pong_timer.cancel()
                connection.pong_timer = None
            return
        frame = parse_frame(data)
        if frame is not None:
            self._emit("frame", frame)

    def _give_up(self, reason: BaseException) -> None:
        if self._closed:
            return
        self._state = "unavailable"
        self._emit("unavailable", reason)

    def _jittered(self, seconds: float) -> float:
        """Half to all of ``seconds``: clients dropped together do not all come back at once."""
        return seconds / 2 + self._draw() * seconds / 2

    async def _pause(self, seconds: float) -> None:
        closed = self._closed_event
        if closed is None or closed.is_set():
            return
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(closed.wait(), seconds)

    def _spawn(self, work: Awaitable[Any], *, closing: bool = False) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        if closing:
            self._closing.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        self._closing.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.debug("push channel: %s", task.exception())

    def _emit(self, event: PushEvent, *args: Any) -> None:
        # A throwing listener must not break the connection's bookkeeping.
        call_listeners(self._listeners, event, args, lambda error: log.warning("push listener failed: %s", error))
