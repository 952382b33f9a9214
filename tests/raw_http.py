"""HTTP over raw sockets, for requests no HTTP client will send (oversized or broken heads,
lying Content-Length, bodies that stop): every read is bounded, so nothing can hang a test."""

from __future__ import annotations

import asyncio
import socket
import struct
import time
import zlib
from dataclasses import dataclass
from typing import Any

import orjson

PROBLEM_ACCEPT = "application/json, application/problem+json"
LEGACY_ACCEPT = "application/json"
PROBLEM_FIELDS = {"status", "type", "title", "detail", "timestamp", "instance"}
LEGACY_FIELDS = {"status", "details", "errors"}


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]  # names lower-cased
    body: bytes
    raw: bytes
    seconds: float
    closed: bool | None = None  # the server closed the connection after it (when asked)

    def json(self) -> Any:
        return orjson.loads(self.body)


def complete(raw: bytes) -> bool:
    """A whole answer: its head and as many body bytes as its Content-Length (or none)."""
    head, separator, body = raw.partition(b"\r\n\r\n")
    if not separator:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value.strip())
    status = int(head.split(b" ", 2)[1])
    return status in (204, 304) or 100 <= status < 200


def parse(raw: bytes, seconds: float, closed: bool | None = None) -> Answer:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        key = name.strip().lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    return Answer(int(lines[0].split(" ", 2)[1]), headers, body, raw, seconds, closed)


def exchange(port: int, data: bytes, *, timeout: float = 10.0, check_close: bool = False) -> Answer:
    """Sends `data` to 127.0.0.1:port and reads one answer; TimeoutError after `timeout` s.
    `check_close`: also learn whether the server then closes the connection (within 2 s)."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        raw = b""
        while not complete(raw):
            if time.monotonic() - started > timeout:
                raise TimeoutError(f"no complete answer within {timeout} s: {raw[:200]!r}")
            chunk = sock.recv(65536)  # the socket's own timeout bounds each read
            if not chunk:
                break
            raw += chunk
        seconds = time.monotonic() - started
        closed = None
        if check_close and raw:
            sock.settimeout(2)
            try:
                closed = sock.recv(1) == b""
            except TimeoutError:
                closed = False
    if not raw:
        raise ConnectionError("the server closed the connection without an answer")
    return parse(raw, seconds, closed)


async def async_exchange(port: int, data: bytes, *, within: float = 5.0, check_close: bool = False) -> Answer:
    """`exchange` for a server running in the test's own event loop; TimeoutError after `within` s."""
    started = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        raw = b""
        async with asyncio.timeout(within):
            while not complete(raw):
                chunk = await reader.read(65536)
                if not chunk:
                    break
                raw += chunk
        seconds = time.monotonic() - started
        closed = None
        if check_close and raw:
            try:
                async with asyncio.timeout(2):
                    closed = await reader.read(1) == b""
            except TimeoutError:
                closed = False
    finally:
        writer.close()
    if not raw:
        raise ConnectionError("the server closed the connection without an answer")
    return parse(raw, seconds, closed)


def gzip_bomb(megabytes: int) -> bytes:
    """A valid gzip body of `megabytes` MiB of zeros, about 1 KiB per MiB. Made in milliseconds:
    after a full flush the compressor starts afresh, so every further MiB compresses to the same
    bytes, repeated here; only the trailer's CRC is computed over the whole."""
    zeros = bytes(1 << 20)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    first = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    segment = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    end = compressor.flush()[:-8]  # the last block; its trailer counted 2 MiB
    crc = 0
    for _ in range(megabytes):
        crc = zlib.crc32(zeros, crc)
    trailer = struct.pack("<II", crc, (megabytes << 20) & 0xFFFFFFFF)
    return first + segment * (megabytes - 1) + end + trailer


def request(
    method: str,
    target: str,
    *,
    accept: str | None = None,
    headers: dict[str, str] | None = None,
    body: bytes = b"",
    content_length: int | None = None,
    extra: bytes = b"",
) -> bytes:
    """A request's bytes; `extra` is appended to the head verbatim (for bytes that are not text)."""
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1"]
    if accept is not None:
        lines.append(f"Accept: {accept}")
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    if body or content_length is not None:
        lines.append(f"Content-Length: {len(body) if content_length is None else content_length}")
    return "\r\n".join(lines).encode("latin-1") + b"\r\n" + extra + b"\r\n" + body


def assert_error_format(answer: Answer, *, legacy: bool, status: int, code: str, problem_type: str) -> None:
    """The answer is our error in the asked format, with the expected status and code."""
    assert answer.status == status, answer.raw[:600]
    body = answer.json()
    assert body["status"] == status
    if legacy:
        assert answer.headers["content-type"].startswith("application/json"), answer.headers
        assert set(body) == LEGACY_FIELDS
        assert [d["code"] for d in body["details"]][:1] == [code]
        assert body["errors"] and all(isinstance(e, str) for e in body["errors"])
    else:
        assert answer.headers["content-type"].startswith("application/problem+json"), answer.headers
        assert set(body) >= PROBLEM_FIELDS
        assert body["type"] == problem_type
