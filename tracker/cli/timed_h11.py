"""uvicorn's h11 protocol (the fallback where httptools cannot be imported) bounded in time
like the httptools one (:mod:`tracker.cli.head_deadline`); h11 bounds the head's size itself.

The deadline runs while both sides of h11's connection are IDLE: from ``connection_made``,
and from each answer once its request was read whole (h11 starts the next cycle then),
until h11 parses the next head into a Request. A body and an answer are outside it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from tracker.cli.head_deadline import (
    HEAD_TIMEOUT_SECONDS,
    TIMEOUT_MESSAGE,
    HeadDeadline,
    plain_answer,
)


class TimedH11Protocol(H11Protocol):
    """H11Protocol that answers 408 (or just closes) a head not whole in ``head_timeout`` s."""

    def __init__(self, config: Config, server_state: ServerState, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None, *,
                 head_timeout: float = HEAD_TIMEOUT_SECONDS) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.head_deadline = HeadDeadline(self.loop, head_timeout, self._head_timed_out)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._time_the_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self.head_deadline.stop()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        self._time_the_head()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._time_the_head()

    def _time_the_head(self) -> None:
        owed = self.conn.our_state is h11.IDLE and self.conn.their_state is h11.IDLE
        if owed and not self.transport.is_closing():
            self.head_deadline.start()
        else:
            self.head_deadline.stop()

    def _head_timed_out(self) -> None:
        if self.transport.is_closing():
            return
        if self.conn.trailing_data[0].lstrip(b"\r\n"):  # a part of the head is buffered
            self.transport.write(plain_answer(408, TIMEOUT_MESSAGE, self.server_state.default_headers))
        self.conn.send(h11.ConnectionClosed())  # as uvicorn's keep-alive timeout does
        self.transport.close()
