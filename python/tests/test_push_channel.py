"""The push channel's client (``agent_scheduler.push``) against a small server of the test's own: the frames it
understands are heard and the rest ignored, a dropped socket is opened again with a new ticket, a socket whose ping
goes unanswered (once the deployment answered one) is given up, and a ticket refused for good leaves it unavailable."""

from __future__ import annotations

import asyncio
import json
import unittest
from typing import Any

from agent_scheduler import _websocket as ws
from agent_scheduler.errors import AgentSchedulerError
from agent_scheduler.push import PushChannel, PushOptions, parse_frame

from .test_websocket import LocalServer, next_frames

FAST = PushOptions(pong_timeout=0.3, reconnect_delay=(0.01, 0.02))


def text(frame: dict[str, Any]) -> bytes:
    return ws.encode_frame(ws.TEXT, json.dumps(frame).encode())


class PushChannelTest(unittest.IsolatedAsyncioTestCase):
    async def test_frames_are_heard_and_a_dropped_or_silent_socket_is_replaced(self) -> None:
        # Prepare: the first socket answers its ping, pushes a wake among frames the client must ignore, then drops;
        # the second answers no ping; the third stays.
        connects = 0
        pings: list[Any] = []

        async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, parser: ws.FrameParser) -> None:
            nonlocal connects
            connects += 1
            (ping,) = await next_frames(reader, parser, 1)
            pings.append(json.loads(ping.payload))
            if connects == 1:
                writer.write(
                    text({"type": "pong", "version": 1})
                    + text({"type": "wake", "version": 2, "queue": "q", "reason": "submitted"})
                    + ws.encode_frame(ws.TEXT, b"not json")
                    + text({"type": "wake", "version": 1, "queue": "q", "reason": "submitted"})
                )
                await writer.drain()
            else:
                await next_frames(reader, parser, 1)  # until the client closes

        tickets: list[str] = []
        events: list[str] = []
        server = LocalServer(script)
        async with server as url:

            async def ticket() -> str:
                tickets.append(url)
                return url

            channel = PushChannel(ticket, FAST)
            channel.on("frame", lambda frame: events.append(f"frame {frame['type']} {frame['queue']}"))
            channel.on("connected", lambda: events.append("connected"))
            channel.on("disconnected", lambda: events.append("disconnected"))
            channel.start()

            # Act: wait for the third socket.
            for _ in range(100):
                if events.count("connected") == 3:
                    break
                await asyncio.sleep(0.05)
            state = channel.state
            await channel.aclose()

        # Assess
        self.assertEqual(
            events,
            ["connected", "frame wake q", "disconnected", "connected", "disconnected", "connected", "disconnected"],
        )
        self.assertEqual((len(tickets), pings), (3, [{"type": "ping"}] * 3))
        self.assertEqual((state, channel.state, channel.connected), ("open", "closed", False))
        self.assertFalse(channel.send({"type": "ping"}))

    async def test_a_ticket_refused_for_good_leaves_the_channel_unavailable(self) -> None:
        calls = 0

        async def ticket() -> str:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise AgentSchedulerError(503, "ServiceUnavailable", "try again")
            raise AgentSchedulerError(404, "PushUnavailable", "this deployment offers no push channel")

        heard: list[str] = []
        channel = PushChannel(ticket, FAST)
        channel.on("failure", lambda error: heard.append(f"failure {error.code}"))
        channel.on("unavailable", lambda error: heard.append(f"unavailable {error.code}"))
        channel.start()
        for _ in range(100):
            if channel.state == "unavailable":
                break
            await asyncio.sleep(0.01)
        await channel.aclose()

        self.assertEqual(heard, ["failure ServiceUnavailable", "unavailable PushUnavailable"])
        self.assertEqual(calls, 2)

    def test_only_frames_of_this_version_and_shape_are_understood(self) -> None:
        good = [
            {"type": "wake", "version": 1, "queue": "q", "reason": "retry"},
            {"type": "role", "version": 1, "role": "leader", "event": "granted", "leaseEpoch": 3},
            {"type": "cancel", "version": 1, "taskId": "t_x", "leaseEpoch": 1},
            {"type": "progress", "version": 1, "taskId": "t_x", "progress": {"at": "2026-01-01T00:00Z", "attempt": 1}},
            {"type": "task", "version": 1, "taskId": "t_x", "status": "succeeded", "result": 1},
            {"type": "subscribed", "version": 1, "id": "w1", "tasks": [{"taskId": "t_x", "status": None}]},
            {"type": "error", "version": 1, "code": "ValidationError", "message": "no"},
        ]
        bad = [
            {"type": "wake", "version": 2, "queue": "q", "reason": "retry"},
            {"type": "wake", "version": True, "queue": "q", "reason": "retry"},
            {"type": "role", "version": 1, "role": "leader", "event": "lost", "leaseEpoch": 3},
            {"type": "cancel", "version": 1, "taskId": "t_x", "leaseEpoch": "1"},
            {"type": "task", "version": 1, "taskId": "t_x", "status": "leased"},
            {"type": "subscribed", "version": 1, "id": "w1", "tasks": [{"taskId": 1, "status": None}]},
            {"type": "pong", "version": 1},
        ]
        for frame in good:
            with self.subTest(frame["type"]):
                self.assertEqual(parse_frame(json.dumps(frame)), frame)
        for frame in bad:
            with self.subTest(frame):
                self.assertIsNone(parse_frame(json.dumps(frame)))
        self.assertIsNone(parse_frame(b'{"type":"wake","version":1,"queue":"q","reason":"retry"}'))
        self.assertIsNone(parse_frame("[1]"))


if __name__ == "__main__":
    unittest.main()
