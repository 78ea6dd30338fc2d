"""uvicorn's httptools protocol with a bound on a request's head (issue 17).

llhttp has no limit of its own on the request line or the headers, and uvicorn sets none:
it appends every piece of the URL, and httptools keeps a header's name and value in Python
bytes, concatenated piece by piece, until the header ends. One endless header grew the
server by what the client sent (and cost CPU quadratic in it). h11 refuses a head past
uvicorn's ``h11_max_incomplete_event_size``; this protocol applies the same option here: a
URL past it is answered 414, headers past it 431, and the connection is closed. The count is
of URL and header bytes; while a head is still incomplete, of the bytes received since it
began, so that what httptools holds never passes the limit by more than one read.
"""

from __future__ import annotations

import asyncio
from typing import Any

from h11._connection import DEFAULT_MAX_INCOMPLETE_EVENT_SIZE  # as uvicorn imports it
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from tracker.cli.head_deadline import plain_answer


class _HeadTooLarge(Exception):
    """Raised in a parser callback: httptools stops parsing and uvicorn answers (see send_400_response)."""


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol that refuses a request head over ``config.h11_max_incomplete_event_size``."""

    def __init__(self, config: Config, server_state: ServerState, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.max_head = config.h11_max_incomplete_event_size or DEFAULT_MAX_INCOMPLETE_EVENT_SIZE
        self.head_bytes = 0  # URL and header bytes of the request being parsed
        self.in_head = True  # between two requests, or in one's request line and headers
        self.received_in_head = 0  # bytes received since that head began
        self.refusal: tuple[int, str] | None = None

    def data_received(self, data: bytes) -> None:
        if self.in_head:
            self.received_in_head += len(data)
        super().data_received(data)
        if self.in_head and self.received_in_head > self.max_head and not self.transport.is_closing():
            self._refuse(431, "Request header fields too large.")  # httptools still holds a part of them

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.head_bytes = 0

    def on_url(self, url: bytes) -> None:
        self._count(len(url), 414, "Request URL too long.")
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value), 431, "Request header fields too large.")
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self.in_head = False
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self.in_head, self.received_in_head = True, 0

    def _count(self, size: int, status: int, message: str) -> None:
        self.head_bytes += size
        if self.head_bytes > self.max_head:
            self.refusal = (status, message)
            raise _HeadTooLarge(message)

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a parser error; ours when the error was a head over the limit."""
        if self.refusal is None:
            super().send_400_response(msg)
        else:
            self._refuse(*self.refusal)

    def _refuse(self, status: int, message: str) -> None:
        """``status`` and close; only close while an earlier pipelined answer is being written."""
        if self.cycle is None or self.cycle.response_complete:
            self.transport.write(plain_answer(status, message, self.server_state.default_headers))
        self.transport.close()
