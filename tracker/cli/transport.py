"""Which HTTP parser and event loop uvicorn serves the API with (issue 17).

httptools (llhttp, in C) and uvloop (libuv) are dependencies: beside h11 and asyncio they
roughly halved the server CPU of a trivial request (0.55 -> 0.30 ms) and took its throughput
from about 1,970 to 3,340 requests/s under 16 connections. They are chosen explicitly, not
by uvicorn's ``auto``, so that an install without them is said once in the log rather than
served slower in silence; there (uvloop has no Windows build) h11 and asyncio serve instead.

The limit on a request's head is one uvicorn option for both parsers:
``h11_max_incomplete_event_size``, which h11 applies itself and
:class:`tracker.cli.bounded_httptools.BoundedHttpToolsProtocol` applies to httptools. The
time a client has to send it (:data:`HEAD_TIMEOUT_SECONDS`, :mod:`tracker.cli.head_deadline`)
is kept by a subclass of either protocol, given to uvicorn as its ``http`` class.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
from dataclasses import dataclass
from typing import Any

from tracker.cli.head_deadline import HEAD_TIMEOUT_SECONDS

log = logging.getLogger("hubwatch")

#: The most bytes of request line and headers one request may send (h11's own default):
#: no URL or header of this API comes near it, and a client cannot make the server buffer more.
MAX_HEAD_BYTES = 16 * 1024

HTTP_PARSERS = ("httptools", "h11")
EVENT_LOOPS = ("uvloop", "asyncio")


@dataclass(frozen=True, slots=True)
class Stack:
    """An HTTP parser (``httptools`` or ``h11``) and an event loop (``uvloop`` or ``asyncio``)."""

    http: str
    loop: str

    def __post_init__(self) -> None:
        if self.http not in HTTP_PARSERS or self.loop not in EVENT_LOOPS:
            raise ValueError(f"no such stack: http {self.http!r}, loop {self.loop!r}")

    def __str__(self) -> str:
        return f"{self.http}+{self.loop}"


FAST = Stack("httptools", "uvloop")
PURE = Stack("h11", "asyncio")


@functools.cache
def preferred() -> Stack:
    """httptools and uvloop where they import, each replaced by uvicorn's pure-Python
    counterpart where it does not (said once per process)."""
    http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    stack = Stack(http, loop)
    if stack != FAST:
        log.warning("the HTTP API is served with %s: %s could not be imported (slower, about twice "
                    "the server CPU per request)", stack,
                    " and ".join(m for m, used in (("httptools", http), ("uvloop", loop)) if m != used))
    return stack


def uvicorn_options(stack: Stack, head_timeout: float = HEAD_TIMEOUT_SECONDS) -> dict[str, Any]:
    """``uvicorn.Config`` keyword arguments that serve with ``stack`` under the same head limit,
    and close a connection whose head is not whole in ``head_timeout`` seconds."""
    if stack.http == "httptools":
        from tracker.cli.timed_httptools import TimedHttpToolsProtocol as protocol
    else:
        from tracker.cli.timed_h11 import TimedH11Protocol as protocol  # type: ignore[assignment]
    return {"http": functools.partial(protocol, head_timeout=head_timeout), "loop": stack.loop,
            "h11_max_incomplete_event_size": MAX_HEAD_BYTES}
