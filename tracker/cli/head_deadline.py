"""A deadline on a request's head, for the HTTP protocols the API is served with.

uvicorn times a connection out only while it waits, after an answer, for the first byte of
the next request (``timeout_keep_alive``): a connection that sent nothing yet, or one byte of
a head, or a byte a second, was kept open for ever, a file descriptor and its buffers each,
and enough of them exhaust the server's descriptors (a slowloris). Each connection therefore
has this deadline running while it owes the server a head: from when it is accepted, and
again from each answer on a kept-alive connection, until its next head is whole. A head not
whole by then is answered 408 and the connection closed (closed without an answer when no
byte of one came). A body still coming or an answer being made is not timed by it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from http import HTTPStatus

#: Seconds a client has to send a whole request line and headers: far more than any real
#: client needs for at most 16 KiB, and what one slow connection can hold a descriptor for.
HEAD_TIMEOUT_SECONDS = 10.0

TIMEOUT_MESSAGE = "Request head not received in time."


class HeadDeadline:
    """One connection's deadline: ``expired`` is called ``seconds`` after ``start``, unless
    ``stop`` comes first. ``start`` while it runs keeps the first start: bytes that keep
    coming do not move it."""

    __slots__ = ("expired", "loop", "seconds", "timer")

    def __init__(self, loop: asyncio.AbstractEventLoop, seconds: float, expired: Callable[[], None]) -> None:
        self.loop, self.seconds, self.expired = loop, seconds, expired
        self.timer: asyncio.TimerHandle | None = None

    def start(self) -> None:
        if self.timer is None:
            self.timer = self.loop.call_later(self.seconds, self._expire)

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _expire(self) -> None:
        self.timer = None
        self.expired()


def plain_answer(status: int, message: str, default_headers: list[tuple[bytes, bytes]]) -> bytes:
    """A whole ``status`` answer with a text ``message``, then ``connection: close``: written
    straight to the transport, outside any request's cycle."""
    head = [b"HTTP/1.1 %d %s\r\n" % (status, HTTPStatus(status).phrase.encode("ascii"))]
    head += [name + b": " + value + b"\r\n" for name, value in default_headers]
    head += [b"content-type: text/plain; charset=utf-8\r\n",
             b"content-length: %d\r\n" % len(message), b"connection: close\r\n\r\n"]
    return b"".join(head) + message.encode("ascii")
