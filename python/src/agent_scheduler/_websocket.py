"""A WebSocket client (RFC 6455, the client's side) on asyncio streams, standard library only: what the push channel
needs and little more.

The opening handshake sends a random ``Sec-WebSocket-Key`` and checks the server's ``Sec-WebSocket-Accept`` against
it; every frame the client sends is masked with a fresh key; text, binary, ping, pong and close frames are read, a
message fragmented over continuation frames is put together (control frames may come between its fragments), a
ping is answered with a pong and a close with a close. Neither extensions nor subprotocols are asked for, so a
server that names one fails the handshake. ``wss://`` goes through :mod:`ssl` (the system's trust store unless a
context is given), imported only then.

The codec (:func:`encode_frame`, :class:`FrameParser`, :class:`MessageAssembler`) does no I/O, so it is tested on
bytes, and serves the server's side too (frames the other way are unmasked): the tests' own small server uses it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import os
import struct
import urllib.parse
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import ssl

#: Appended to the key before it is hashed into the accept value (RFC 6455, section 1.3).
ACCEPT_GUID: Final = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

CONTINUATION: Final = 0x0
TEXT: Final = 0x1
BINARY: Final = 0x2
CLOSE: Final = 0x8
PING: Final = 0x9
PONG: Final = 0xA
_KNOWN_OPCODES: Final = frozenset({CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG})

#: Close codes this module sends or reads (RFC 6455, section 7.4.1).
NORMAL_CLOSURE: Final = 1000
PROTOCOL_ERROR: Final = 1002
NO_STATUS: Final = 1005
ABNORMAL_CLOSURE: Final = 1006
INVALID_DATA: Final = 1007
MESSAGE_TOO_BIG: Final = 1009

#: The largest payload a control frame may carry.
CONTROL_PAYLOAD_BYTES: Final = 125
#: The largest message read unless told otherwise: API Gateway delivers frames of at most 128 KB.
MAX_MESSAGE_BYTES: Final = 1024 * 1024
#: The longest handshake answer read (status line and headers).
_MAX_HANDSHAKE_BYTES: Final = 16 * 1024


class WebSocketError(Exception):
    """Something went wrong with a WebSocket."""


class HandshakeError(WebSocketError):
    """The server did not switch to the WebSocket protocol as asked: ``status`` is its HTTP status (None when the
    answer was not HTTP, or was a 101 that fails the checks)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ProtocolError(WebSocketError):
    """The peer broke the protocol; ``code`` is the close code that says how."""

    def __init__(self, message: str, code: int = PROTOCOL_ERROR) -> None:
        super().__init__(message)
        self.code = code


class ConnectionClosed(WebSocketError):
    """The connection is closed: ``code`` and ``reason`` are the close frame's (1006 when none came)."""

    def __init__(self, code: int, reason: str = "") -> None:
        super().__init__(f"the WebSocket is closed (code {code}{f': {reason}' if reason else ''})")
        self.code = code
        self.reason = reason


@dataclass(frozen=True)
class Frame:
    """One frame as it goes on the wire, its payload unmasked."""

    opcode: int
    payload: bytes
    fin: bool = True


# Handshake


def new_key() -> str:
    """A ``Sec-WebSocket-Key``: 16 random bytes, base64."""
    return base64.b64encode(os.urandom(16)).decode("ascii")


def accept_for(key: str) -> str:
    """The ``Sec-WebSocket-Accept`` a server answers ``key`` with."""
    digest = hashlib.sha1((key + ACCEPT_GUID).encode("ascii")).digest()  # noqa: S324 (the protocol's hash, no secret)
    return base64.b64encode(digest).decode("ascii")


def handshake_request(host: str, resource: str, key: str, *, user_agent: str | None = None) -> bytes:
    """The opening handshake's GET: ``host`` as the ``Host`` header (with its port when not the scheme's), the
    ``resource`` (path and query)."""
    lines = [
        f"GET {resource} HTTP/1.1",
        f"Host: {host}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
    ]
    if user_agent:
        lines.append(f"User-Agent: {user_agent}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")


def parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    """The status and the headers (names in lower case; a repeated header's values joined by commas) of an HTTP
    answer's head; raises :class:`HandshakeError` for one that is not HTTP."""
    text = head.decode("latin-1")
    status_line, *header_lines = text.split("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise HandshakeError(f"the handshake answer is not HTTP: {status_line[:80]!r}")
    headers: dict[str, str] = {}
    for line in header_lines:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise HandshakeError(f"a malformed header in the handshake answer: {line[:80]!r}")
        key = name.strip().lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    return int(parts[1]), headers


def _tokens(value: str | None) -> set[str]:
    return {token.strip().lower() for token in (value or "").split(",") if token.strip()}


def check_handshake(head: bytes, key: str) -> None:
    """Raises :class:`HandshakeError` unless ``head`` switches to the WebSocket protocol for ``key``: a 101 with
    ``Upgrade: websocket``, ``Connection: upgrade``, the accept value of the key, and no extension nor subprotocol
    (none was asked for)."""
    status, headers = parse_head(head)
    if status != 101:
        raise HandshakeError(f"the server answered {status} instead of switching protocols", status)
    if "websocket" not in _tokens(headers.get("upgrade")):
        raise HandshakeError("the handshake answer does not upgrade to websocket")
    if "upgrade" not in _tokens(headers.get("connection")):
        raise HandshakeError("the handshake answer's Connection header does not say upgrade")
    if headers.get("sec-websocket-accept") != accept_for(key):
        raise HandshakeError("the handshake answer's Sec-WebSocket-Accept does not match the key sent")
    if headers.get("sec-websocket-extensions"):
        raise HandshakeError("the server chose an extension that was not asked for")
    if headers.get("sec-websocket-protocol"):
        raise HandshakeError("the server chose a subprotocol that was not asked for")


# Frames


def apply_mask(data: bytes, key: bytes) -> bytes:
    """``data`` XORed with the 4-byte ``key`` repeated (masking and unmasking are the same operation)."""
    if not data:
        return b""
    size = len(data)
    repeated = (key * (size // 4 + 1))[:size]
    return (int.from_bytes(data, "big") ^ int.from_bytes(repeated, "big")).to_bytes(size, "big")


def encode_frame(opcode: int, payload: bytes = b"", *, fin: bool = True, mask_key: bytes | None = None) -> bytes:
    """One frame: the header with the shortest length that fits (7 bits up to 125, then 16, then 64), and the
    payload masked with ``mask_key`` when given (a client masks every frame; a server none)."""
    if opcode not in _KNOWN_OPCODES:
        raise ValueError(f"no such opcode: {opcode:#x}")
    if opcode >= CLOSE and (len(payload) > CONTROL_PAYLOAD_BYTES or not fin):
        raise ValueError("a control frame carries at most 125 bytes and is never fragmented")
    if mask_key is not None and len(mask_key) != 4:
        raise ValueError("a mask key is 4 bytes")
    first = (0x80 if fin else 0) | opcode
    mask_bit = 0x80 if mask_key is not None else 0
    size = len(payload)
    if size <= CONTROL_PAYLOAD_BYTES:
        header = struct.pack("!BB", first, mask_bit | size)
    elif size <= 0xFFFF:
        header = struct.pack("!BBH", first, mask_bit | 126, size)
    else:
        header = struct.pack("!BBQ", first, mask_bit | 127, size)
    if mask_key is None:
        return header + payload
    return header + mask_key + apply_mask(payload, mask_key)


def close_payload(code: int | None = NORMAL_CLOSURE, reason: str = "") -> bytes:
    """A close frame's payload: the code, then the reason in UTF-8 (cut to fit the 125 bytes); empty without a
    code."""
    if code is None:
        return b""
    return struct.pack("!H", code) + reason.encode("utf-8")[: CONTROL_PAYLOAD_BYTES - 2]


def parse_close(payload: bytes) -> tuple[int, str]:
    """A close frame's code and reason (1005 and "" for an empty payload); raises :class:`ProtocolError` for a
    payload of one byte, a code no endpoint may send, or a reason that is not UTF-8."""
    if not payload:
        return NO_STATUS, ""
    if len(payload) == 1:
        raise ProtocolError("a close frame's payload of one byte")
    (code,) = struct.unpack("!H", payload[:2])
    if not (1000 <= code <= 1014 and code not in (1004, 1005, 1006)) and not 3000 <= code <= 4999:
        raise ProtocolError(f"a close code no endpoint may send: {code}")
    try:
        reason = payload[2:].decode("utf-8")
    except UnicodeDecodeError as error:
        raise ProtocolError("a close reason that is not UTF-8", INVALID_DATA) from error
    return code, reason


class FrameParser:
    """Frames from a byte stream, as its bytes arrive. ``masked``: whether the peer's frames must be masked (a server
    reads a client's; a client reads unmasked ones). Raises :class:`ProtocolError` for what breaks the protocol."""

    def __init__(self, *, masked: bool, max_frame_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self._masked = masked
        self._max = max_frame_bytes
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[Frame]:
        """The frames ``data`` completes (none if it ends within one: the rest waits for the next bytes)."""
        self._buffer += data
        frames: list[Frame] = []
        while True:
            frame = self._next()
            if frame is None:
                return frames
            frames.append(frame)

    def _next(self) -> Frame | None:
        buffer = self._buffer
        if len(buffer) < 2:
            return None
        first, second = buffer[0], buffer[1]
        fin, opcode = bool(first & 0x80), first & 0x0F
        if first & 0x70:
            raise ProtocolError("a reserved bit is set, and no extension was agreed")
        if opcode not in _KNOWN_OPCODES:
            raise ProtocolError(f"an unknown opcode: {opcode:#x}")
        masked = bool(second & 0x80)
        if masked != self._masked:
            raise ProtocolError("a client's frame must be masked" if self._masked else "a server's frame is masked")
        size = second & 0x7F
        offset = 2
        if size == 126:
            if len(buffer) < 4:
                return None
            (size,) = struct.unpack_from("!H", buffer, 2)
            offset = 4
        elif size == 127:
            if len(buffer) < 10:
                return None
            (size,) = struct.unpack_from("!Q", buffer, 2)
            if size >> 63:
                raise ProtocolError("a 64-bit length with its top bit set")
            offset = 10
        if opcode >= CLOSE and (size > CONTROL_PAYLOAD_BYTES or not fin):
            raise ProtocolError("a control frame over 125 bytes or fragmented")
        if size > self._max:
            raise ProtocolError(f"a frame of {size} bytes; at most {self._max} are read", MESSAGE_TOO_BIG)
        key = b""
        if masked:
            if len(buffer) < offset + 4:
                return None
            key = bytes(buffer[offset : offset + 4])
            offset += 4
        if len(buffer) < offset + size:
            return None
        payload = bytes(buffer[offset : offset + size])
        del buffer[: offset + size]
        return Frame(opcode, apply_mask(payload, key) if masked else payload, fin)


class MessageAssembler:
    """Messages from data frames: a text or binary frame starts one, continuation frames add to it, the frame with
    ``fin`` ends it. Control frames are not its business (they may come between fragments)."""

    def __init__(self, *, max_message_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self._max = max_message_bytes
        self._opcode: int | None = None
        self._parts: list[bytes] = []
        self._size = 0

    def add(self, frame: Frame) -> str | bytes | None:
        """The message ``frame`` completes (text as ``str``, binary as ``bytes``), or None while it is incomplete."""
        if frame.opcode >= CLOSE:
            raise ValueError("a control frame is no part of a message")
        if frame.opcode == CONTINUATION:
            if self._opcode is None:
                raise ProtocolError("a continuation frame with no message begun")
        elif self._opcode is not None:
            raise ProtocolError("a new message began before the last one ended")
        else:
            self._opcode = frame.opcode
        self._size += len(frame.payload)
        if self._size > self._max:
            raise ProtocolError(f"a message over {self._max} bytes", MESSAGE_TOO_BIG)
        self._parts.append(frame.payload)
        if not frame.fin:
            return None
        opcode, data = self._opcode, b"".join(self._parts)
        self._opcode, self._parts, self._size = None, [], 0
        if opcode == BINARY:
            return data
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ProtocolError("a text message that is not UTF-8", INVALID_DATA) from error


# The connection


class WebSocket:
    """An open client connection: :meth:`recv` reads the next message (answering pings and a close on the way),
    :meth:`send_text` and :meth:`send_binary` write a message in one frame at once (masked, unbuffered by the
    connection: the push channel's frames are small), :meth:`close` closes it with the closing handshake.

    One coroutine at a time reads; writes may come from any coroutine of the same event loop.
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._parser = FrameParser(masked=False, max_frame_bytes=max_message_bytes)
        self._assembler = MessageAssembler(max_message_bytes=max_message_bytes)
        self._messages: deque[str | bytes] = deque()
        self._close_sent = False
        self._closed: ConnectionClosed | None = None
        self._done = asyncio.Event()
        self._reading = False

    @property
    def closed(self) -> bool:
        """Whether the connection is over (closed both ways, or dropped)."""
        return self._closed is not None

    @property
    def open(self) -> bool:
        """Whether messages can still be sent: no close was sent or received."""
        return not self._close_sent and self._closed is None

    def send_text(self, text: str) -> None:
        """Sends a text message in one frame."""
        self._send(TEXT, text.encode("utf-8"))

    def send_binary(self, data: bytes) -> None:
        """Sends a binary message in one frame."""
        self._send(BINARY, data)

    def _send(self, opcode: int, payload: bytes) -> None:
        if not self.open or self._writer.is_closing():
            raise ConnectionClosed(self._closed.code if self._closed else ABNORMAL_CLOSURE)
        self._write(opcode, payload)

    def _write(self, opcode: int, payload: bytes) -> None:
        self._writer.write(encode_frame(opcode, payload, mask_key=os.urandom(4)))

    async def recv(self) -> str | bytes:
        """The next message; raises :class:`ConnectionClosed` once the connection is over (at once after a close
        frame: messages sent after it are not read)."""
        if self._reading:
            raise RuntimeError("another coroutine is already reading this WebSocket")
        self._reading = True
        try:
            while not self._messages:
                if self._closed is not None:
                    raise self._closed
                try:
                    data = await self._reader.read(64 * 1024)
                except OSError:
                    data = b""
                if not data:
                    self._finish(ABNORMAL_CLOSURE, "the connection dropped")
                    continue
                try:
                    for frame in self._parser.feed(data):
                        self._handle(frame)
                        if self._closed is not None:
                            break
                except ProtocolError as error:
                    self._fail(error.code, str(error))
            return self._messages.popleft()
        finally:
            self._reading = False

    def _handle(self, frame: Frame) -> None:
        if frame.opcode == PING:
            if not self._close_sent and not self._writer.is_closing():
                self._write(PONG, frame.payload)
        elif frame.opcode == PONG:
            pass
        elif frame.opcode == CLOSE:
            code, reason = parse_close(frame.payload)
            if not self._close_sent and not self._writer.is_closing():
                # The close is answered with its own code (none for a close without one), then the server closes TCP.
                self._write(CLOSE, close_payload(None if code == NO_STATUS else code))
                self._close_sent = True
            self._finish(code, reason)
        else:
            message = self._assembler.add(frame)
            if message is not None:
                self._messages.append(message)

    def _fail(self, code: int, reason: str) -> None:
        """Closes for a protocol error: a close frame saying why, then the connection, without waiting."""
        if not self._close_sent and not self._writer.is_closing():
            with contextlib.suppress(Exception):
                self._write(CLOSE, close_payload(code, reason))
            self._close_sent = True
        self._finish(code, reason)

    def _finish(self, code: int, reason: str) -> None:
        if self._closed is None:
            self._closed = ConnectionClosed(code, reason)
        self._done.set()
        self._writer.close()

    async def close(self, code: int = NORMAL_CLOSURE, reason: str = "", *, timeout: float = 2.0) -> None:
        """Sends a close frame and waits (up to ``timeout`` seconds) for the server's, which it reads itself unless
        another coroutine reads; then the connection is closed whatever came."""
        if self._closed is None and not self._close_sent and not self._writer.is_closing():
            with contextlib.suppress(Exception):
                self._write(CLOSE, close_payload(code, reason))
            self._close_sent = True
        try:
            if self._closed is None:
                if self._reading:
                    await asyncio.wait_for(self._done.wait(), timeout)
                else:
                    await asyncio.wait_for(self._drain_until_closed(), timeout)
        except (asyncio.TimeoutError, OSError):
            pass
        finally:
            self._finish(code if self._closed is None else self._closed.code, reason)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._writer.wait_closed(), timeout)

    async def _drain_until_closed(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            while True:
                await self.recv()


async def connect(
    url: str,
    *,
    ssl_context: ssl.SSLContext | None = None,
    timeout: float = 15.0,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    user_agent: str | None = None,
) -> WebSocket:
    """Opens a WebSocket to ``url`` (``ws://`` or ``wss://``): TCP (and TLS), then the opening handshake, all within
    ``timeout`` seconds. Raises :class:`HandshakeError` when the server does not switch protocols (``status`` says
    what it answered instead), ``OSError`` or ``asyncio.TimeoutError`` when it cannot be reached."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise ValueError(f"a WebSocket URL is ws:// or wss://, not {url!r}")
    secure = parts.scheme == "wss"
    host = parts.hostname
    port = parts.port or (443 if secure else 80)
    context: ssl.SSLContext | None = None
    if secure:
        import ssl  # noqa: PLC0415 (only a wss:// connection needs TLS)

        context = ssl_context or ssl.create_default_context()
    host_header = f"[{host}]" if ":" in host else host
    if parts.port is not None and parts.port != (443 if secure else 80):
        host_header = f"{host_header}:{parts.port}"
    resource = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    key = new_key()

    async def open_and_upgrade() -> WebSocket:
        reader, writer = await asyncio.open_connection(
            host, port, ssl=context, server_hostname=host if secure else None, limit=_MAX_HANDSHAKE_BYTES
        )
        try:
            writer.write(handshake_request(host_header, resource, key, user_agent=user_agent))
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError as error:
                raise HandshakeError("the connection closed during the handshake") from error
            except asyncio.LimitOverrunError as error:
                raise HandshakeError("the handshake answer's head is too long") from error
            check_handshake(head[:-4], key)
        except BaseException:
            writer.close()
            raise
        return WebSocket(reader, writer, max_message_bytes=max_message_bytes)

    return await asyncio.wait_for(open_and_upgrade(), timeout)
