"""A guard that fails a test when the pure layers touch files, sockets or subprocesses.

Test helper. It is installed around the *call* phase of each test in tests/extract and
tests/diff (fixtures read the corpus before it). File opens are refused only when a frame of
the pure packages is on the stack, so pytest and hypothesis keep their own files; sockets
are refused outright.
"""

from __future__ import annotations

import builtins
import io
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

PURE = ("tracker.extract", "tracker.diff", "tracker.model", "advisories.rules")


class IOAttempt(AssertionError):
    """The pure core tried to do I/O."""


def _from_pure_code() -> str | None:
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name.startswith(PURE):
            return str(name)
        frame = frame.f_back
    return None


def _guard(real: Any, what: str) -> Any:
    def guarded(*args: Any, **kwargs: Any) -> Any:
        culprit = _from_pure_code()
        if culprit is not None:
            raise IOAttempt(f"{culprit} tried {what}{args[:1]!r}")
        return real(*args, **kwargs)

    return guarded


class _NoSocket(socket.socket):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise IOAttempt("a socket was opened during a pure-core test")


@contextmanager
def no_io() -> Iterator[None]:
    saved = (builtins.open, io.open, os.open, socket.socket, subprocess.Popen)
    builtins.open = io.open = _guard(saved[0], "open")
    os.open = _guard(saved[2], "os.open")
    socket.socket = _NoSocket  # type: ignore[misc]
    subprocess.Popen = _guard(saved[4], "subprocess")  # type: ignore[misc]
    try:
        yield
    finally:
        builtins.open, io.open, os.open, socket.socket, subprocess.Popen = saved  # type: ignore[misc]
