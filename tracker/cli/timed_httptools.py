"""The httptools protocol the API is served with: bounded in size
(:mod:`tracker.cli.bounded_httptools`) and in time (:mod:`tracker.cli.head_deadline`).

The deadline runs while the connection owes a head: from ``connection_made``, and from the
answer to its last request once that request was read whole, until llhttp reports the next
head complete. A request's body and its answer are outside it, however long they take.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.config import Config
from uvicorn.server import ServerState

from tracker.cli.bounded_httptools import BoundedHttpToolsProtocol
from tracker.cli.head_deadline import (
    HEAD_TIMEOUT_SECONDS,
    TIMEOUT_MESSAGE,
    HeadDeadline,
    plain_answer,
)


class TimedHttpToolsProtocol(BoundedHttpToolsProtocol):
    """BoundedHttpToolsProtocol that answers 408 (or just closes) a head not whole in ``head_timeout`` s."""

    def __init__(self, config: Config, server_state: ServerState, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None, *,
                 head_timeout: float = HEAD_TIMEOUT_SECONDS) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.head_deadline = HeadDeadline(self.loop, head_timeout, self._head_timed_out)
        self.head_begun = False  # llhttp saw the first byte of the head now owed

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.head_deadline.start()

    def connection_lost(self, exc: Exception | None) -> None:
        self.head_deadline.stop()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._time_the_head()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.head_begun = True

    def on_headers_complete(self) -> None:
        self.head_deadline.stop()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self.head_begun = False

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._time_the_head()

    def _time_the_head(self) -> None:
        """The deadline runs while a head is owed: the newest request read whole (``in_head``)
        and answered (a pipelined one still waiting is the newest ``cycle``, not answered)."""
        owed = self.in_head and (self.cycle is None or self.cycle.response_complete)
        if owed and not self.transport.is_closing():
            self.head_deadline.start()
        else:
            self.head_deadline.stop()

    def _head_timed_out(self) -> None:
        if self.transport.is_closing():
            return
        if self.head_begun:
            self.transport.write(plain_answer(408, TIMEOUT_MESSAGE, self.server_state.default_headers))
        self.transport.close()
