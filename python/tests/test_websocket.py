"""The WebSocket client the push channel runs on (``agent_scheduler._websocket``): its codec on bytes (masking, the
three length encodings at their boundaries, close frames, fragments, what breaks the protocol), then the client
against a small server of the test's own on a local socket, and, when Debian's ``python3-websockets`` is there,
against that library's server."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import struct
import unittest
from collections.abc import Awaitable, Callable
from typing import Any

from agent_scheduler import _websocket as ws

MASK = b"\x37\xfa\x21\x3d"

Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter, ws.FrameParser], Awaitable[None]]


class CodecTest(unittest.TestCase):
    def test_the_accept_value_and_a_masked_frame_are_the_rfcs_examples(self) -> None:
        # RFC 6455, sections 1.3 and 5.7.
        self.assertEqual(ws.accept_for("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        self.assertEqual(ws.encode_frame(ws.TEXT, b"Hello"), bytes.fromhex("810548656c6c6f"))
        self.assertEqual(ws.encode_frame(ws.TEXT, b"Hello", mask_key=MASK), bytes.fromhex("818537fa213d7f9f4d5158"))
        fragments = ws.encode_frame(ws.TEXT, b"Hel", fin=False) + ws.encode_frame(ws.CONTINUATION, b"lo")
        self.assertEqual(fragments, bytes.fromhex("010348656c80026c6f"))

    def test_masking_xors_the_payload_with_the_key_repeated(self) -> None:
        payload = bytes(range(256)) * 3
        masked = ws.apply_mask(payload, MASK)
        self.assertEqual(masked, bytes(b ^ MASK[i % 4] for i, b in enumerate(payload)))
        self.assertEqual(ws.apply_mask(masked, MASK), payload)
        self.assertEqual(ws.apply_mask(b"", MASK), b"")

    def test_each_length_encoding_at_its_boundaries(self) -> None:
        # 7 bits up to 125; then 126 and a 16-bit length up to 65,535; then 127 and a 64-bit length.
        cases = [(0, 0, 2), (125, 125, 2), (126, 126, 4), (65_535, 126, 4), (65_536, 127, 10)]
        for size, marker, header in cases:
            with self.subTest(size=size):
                payload = bytes(i % 251 for i in range(size))
                frame = ws.encode_frame(ws.BINARY, payload, mask_key=MASK)
                self.assertEqual(frame[1], 0x80 | marker)
                if marker == 126:
                    self.assertEqual(struct.unpack("!H", frame[2:4])[0], size)
                elif marker == 127:
                    self.assertEqual(struct.unpack("!Q", frame[2:10])[0], size)
                self.assertEqual(frame[header : header + 4], MASK)
                self.assertEqual(len(frame), header + 4 + size)
                parsed = ws.FrameParser(masked=True).feed(frame)
                self.assertEqual(parsed, [ws.Frame(ws.BINARY, payload)])

    def test_frames_are_read_as_their_bytes_arrive(self) -> None:
        stream = ws.encode_frame(ws.TEXT, b"x" * 300) + ws.encode_frame(ws.PING, b"p") + ws.encode_frame(ws.TEXT, b"")
        parser = ws.FrameParser(masked=False)
        frames: list[ws.Frame] = []
        for i in range(len(stream)):
            frames += parser.feed(stream[i : i + 1])
        self.assertEqual(frames, [ws.Frame(ws.TEXT, b"x" * 300), ws.Frame(ws.PING, b"p"), ws.Frame(ws.TEXT, b"")])

    def test_close_frames(self) -> None:
        self.assertEqual(ws.close_payload(1000, "bye"), b"\x03\xe8bye")
        self.assertEqual(ws.parse_close(b"\x03\xe8bye"), (1000, "bye"))
        self.assertEqual(ws.parse_close(b""), (ws.NO_STATUS, ""))
        self.assertEqual(ws.close_payload(None), b"")
        self.assertEqual(len(ws.close_payload(4000, "é" * 100)), 125)  # the reason cut to fit a control frame
        for bad in (b"\x03", struct.pack("!H", 999), struct.pack("!H", 1005), struct.pack("!H", 1006), b"\x03\xe8\xff"):
            with self.subTest(bad=bad), self.assertRaises(ws.ProtocolError):
                ws.parse_close(bad)
        frame = ws.encode_frame(ws.CLOSE, ws.close_payload(1001, "going away"), mask_key=MASK)
        (parsed,) = ws.FrameParser(masked=True).feed(frame)
        self.assertEqual(ws.parse_close(parsed.payload), (1001, "going away"))

    def test_a_fragmented_message_is_put_together_around_control_frames(self) -> None:
        stream = (
            ws.encode_frame(ws.TEXT, "héllo, ".encode()[:3], fin=False)
            + ws.encode_frame(ws.PING, b"in between")
            + ws.encode_frame(ws.CONTINUATION, "héllo, ".encode()[3:], fin=False)
            + ws.encode_frame(ws.CONTINUATION, b"world")
        )
        assembler = ws.MessageAssembler()
        messages: list[str | bytes] = []
        controls: list[ws.Frame] = []
        for frame in ws.FrameParser(masked=False).feed(stream):
            if frame.opcode >= ws.CLOSE:
                controls.append(frame)
            elif (message := assembler.add(frame)) is not None:
                messages.append(message)
        self.assertEqual(messages, ["héllo, world"])
        self.assertEqual(controls, [ws.Frame(ws.PING, b"in between")])

    def test_what_breaks_the_protocol_is_refused(self) -> None:
        cases: list[tuple[str, bytes, bool, int]] = [
            ("an unmasked frame to a server", ws.encode_frame(ws.TEXT, b"a"), True, ws.PROTOCOL_ERROR),
            ("a masked frame to a client", ws.encode_frame(ws.TEXT, b"a", mask_key=MASK), False, ws.PROTOCOL_ERROR),
            ("a reserved bit", bytes([0xC1, 0x01]) + b"a", False, ws.PROTOCOL_ERROR),
            ("an unknown opcode", bytes([0x83, 0x00]), False, ws.PROTOCOL_ERROR),
            ("a control frame over 125 bytes", bytes([0x89, 126, 0, 126]) + b"p" * 126, False, ws.PROTOCOL_ERROR),
            ("a fragmented control frame", bytes([0x09, 0x00]), False, ws.PROTOCOL_ERROR),
            ("a frame over the limit", bytes([0x82, 127]) + struct.pack("!Q", 2**40), False, ws.MESSAGE_TOO_BIG),
        ]
        for name, data, masked, code in cases:
            with self.subTest(name), self.assertRaises(ws.ProtocolError) as raised:
                ws.FrameParser(masked=masked).feed(data)
            self.assertEqual(raised.exception.code, code, name)
        messages: list[tuple[str, list[ws.Frame], int]] = [
            ("a continuation with no message", [ws.Frame(ws.CONTINUATION, b"a")], ws.PROTOCOL_ERROR),
            ("a new message inside one", [ws.Frame(ws.TEXT, b"a", False), ws.Frame(ws.TEXT, b"b")], ws.PROTOCOL_ERROR),
            ("text that is not UTF-8", [ws.Frame(ws.TEXT, b"\xff\xfe")], ws.INVALID_DATA),
            ("a message over the limit", [ws.Frame(ws.BINARY, b"x" * 5, False), ws.Frame(0, b"x" * 5)], 1009),
        ]
        for name, frames, code in messages:
            assembler = ws.MessageAssembler(max_message_bytes=8)
            with self.subTest(name), self.assertRaises(ws.ProtocolError) as raised:
                for frame in frames:
                    assembler.add(frame)
            self.assertEqual(raised.exception.code, code, name)

    def test_a_handshake_answer_is_checked_against_the_key(self) -> None:
        key = ws.new_key()
        good = (
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Accept: {ws.accept_for(key)}"
        )
        ws.check_handshake(good.encode(), key)
        bad = {
            "another key's accept": good.replace(ws.accept_for(key), ws.accept_for(ws.new_key())),
            "no upgrade": good.replace("Upgrade: websocket\r\n", ""),
            "an extension": good + "\r\nSec-WebSocket-Extensions: permessage-deflate",
            "not switching": good.replace("101 Switching Protocols", "200 OK"),
        }
        for name, head in bad.items():
            with self.subTest(name), self.assertRaises(ws.HandshakeError):
                ws.check_handshake(head.encode(), key)


class LocalServer:
    """A WebSocket server of the test's own on 127.0.0.1 (this codec, the server's side), running ``script`` once a
    client has connected; ``answer`` replaces its handshake answer."""

    def __init__(self, script: Script, answer: Callable[[str], bytes] | None = None) -> None:
        self._script = script
        self._answer = answer
        self.request_head = ""
        self.received: list[ws.Frame] = []
        self._server: asyncio.Server | None = None
        self.finished = asyncio.Event()

    async def __aenter__(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"ws://127.0.0.1:{port}/v1/push?ticket=pt_x"

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            self.request_head = head
            key = next(line.split(":", 1)[1].strip() for line in head.split("\r\n") if line.lower().startswith("sec-"))
            if self._answer is not None:
                writer.write(self._answer(key))
                await writer.drain()
                return
            writer.write(
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Accept: {ws.accept_for(key)}\r\n\r\n".encode()
            )
            await self._script(reader, writer, ws.FrameParser(masked=True))
        finally:
            self.finished.set()
            writer.close()


async def next_frames(reader: asyncio.StreamReader, parser: ws.FrameParser, count: int) -> list[ws.Frame]:
    frames: list[ws.Frame] = []
    while len(frames) < count:
        data = await asyncio.wait_for(reader.read(65_536), 5)
        if not data:
            break
        frames += parser.feed(data)
    return frames


class ClientTest(unittest.IsolatedAsyncioTestCase):
    async def test_the_client_masks_what_it_sends_answers_pings_and_closes_when_asked(self) -> None:
        # Prepare: the server sends a fragmented message with a ping between its fragments, reads the client's text
        # and pong, then closes.
        received: list[ws.Frame] = []

        async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, parser: ws.FrameParser) -> None:
            writer.write(
                ws.encode_frame(ws.TEXT, b'{"type":', fin=False)
                + ws.encode_frame(ws.PING, b"are you there")
                + ws.encode_frame(ws.CONTINUATION, b'"wake"}')
                + ws.encode_frame(ws.BINARY, b"\x00" * 70_000)
            )
            received.extend(await next_frames(reader, parser, 2))
            writer.write(ws.encode_frame(ws.CLOSE, ws.close_payload(4001, "bye")))
            received.extend(await next_frames(reader, parser, 1))

        server = LocalServer(script)
        async with server as url:
            # Act
            socket = await ws.connect(url, timeout=5)
            text = await socket.recv()
            binary = await socket.recv()
            socket.send_text("héllo")
            with self.assertRaises(ws.ConnectionClosed) as closed:
                await socket.recv()
            await asyncio.wait_for(server.finished.wait(), 5)

        # Assess
        self.assertIn("GET /v1/push?ticket=pt_x HTTP/1.1", server.request_head)
        self.assertIn("Sec-WebSocket-Version: 13", server.request_head)
        self.assertEqual((text, binary), ('{"type":"wake"}', b"\x00" * 70_000))
        self.assertEqual(
            received,
            [
                ws.Frame(ws.PONG, b"are you there"),
                ws.Frame(ws.TEXT, "héllo".encode()),
                ws.Frame(ws.CLOSE, ws.close_payload(4001)),
            ],
        )
        self.assertEqual((closed.exception.code, closed.exception.reason), (4001, "bye"))
        self.assertTrue(socket.closed)
        with self.assertRaises(ws.ConnectionClosed):
            socket.send_text("too late")

    async def test_a_close_the_client_starts_waits_for_the_servers(self) -> None:
        received: list[ws.Frame] = []

        async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, parser: ws.FrameParser) -> None:
            received.extend(await next_frames(reader, parser, 1))
            writer.write(ws.encode_frame(ws.CLOSE, received[0].payload))

        async with LocalServer(script) as url:
            socket = await ws.connect(url, timeout=5)
            await socket.close(1000, "replaced", timeout=5)

        self.assertEqual(received, [ws.Frame(ws.CLOSE, ws.close_payload(1000, "replaced"))])
        self.assertTrue(socket.closed)

    async def test_a_server_that_breaks_the_protocol_is_closed_with_the_code_that_says_how(self) -> None:
        received: list[ws.Frame] = []

        async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, parser: ws.FrameParser) -> None:
            writer.write(ws.encode_frame(ws.TEXT, b"\xff not utf-8"))
            received.extend(await next_frames(reader, parser, 1))

        server = LocalServer(script)
        async with server as url:
            socket = await ws.connect(url, timeout=5)
            with self.assertRaises(ws.ConnectionClosed) as closed:
                await socket.recv()
            await asyncio.wait_for(server.finished.wait(), 5)

        self.assertEqual(closed.exception.code, ws.INVALID_DATA)
        self.assertEqual([(f.opcode, ws.parse_close(f.payload)[0]) for f in received], [(ws.CLOSE, ws.INVALID_DATA)])

    async def test_a_refused_or_forged_handshake_fails_the_connect(self) -> None:
        answers: dict[str, tuple[Callable[[str], bytes], int | None]] = {
            "refused": (lambda _key: b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n", 401),
            "forged": (
                lambda _key: (
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    f"Sec-WebSocket-Accept: {ws.accept_for('another key')}\r\n\r\n"
                ).encode(),
                None,
            ),
        }
        for name, (answer, status) in answers.items():
            async with LocalServer(lambda *_: asyncio.sleep(0), answer) as url:
                with self.subTest(name), self.assertRaises(ws.HandshakeError) as raised:
                    await ws.connect(url, timeout=5)
            self.assertEqual(raised.exception.status, status, name)
        with self.assertRaises(ValueError):
            await ws.connect("http://127.0.0.1/v1/push")


websockets_missing = importlib.util.find_spec("websockets") is None


@unittest.skipIf(websockets_missing, "python3-websockets is not installed: no cross-check against it")
class WebsocketsLibraryTest(unittest.IsolatedAsyncioTestCase):
    async def test_the_client_talks_to_the_websockets_librarys_server(self) -> None:
        import websockets  # noqa: PLC0415  # pyright: ignore[reportMissingImports] (optional: skipped without it)

        heard: list[Any] = []

        async def echo(connection: Any) -> None:
            async for message in connection:
                heard.append(message)
                await connection.send(message if isinstance(message, bytes) else message[::-1])

        async with websockets.serve(echo, "127.0.0.1", 0) as server:  # pyright: ignore
            port = next(iter(server.sockets)).getsockname()[1]  # pyright: ignore
            socket = await ws.connect(f"ws://127.0.0.1:{port}/", timeout=5)
            socket.send_text("ping ‽")
            socket.send_binary(b"\x01" * 70_000)
            echoed = [await asyncio.wait_for(socket.recv(), 5) for _ in range(2)]
            with contextlib.suppress(Exception):
                await socket.close(timeout=5)

        self.assertEqual(echoed, ["‽ gnip", b"\x01" * 70_000])
        self.assertEqual(heard, ["ping ‽", b"\x01" * 70_000])
        self.assertTrue(socket.closed)


if __name__ == "__main__":
    unittest.main()
