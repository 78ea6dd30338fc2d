"""``serve --workers N``: N server processes on one listening socket (issue 17).

One CPython process serves on one core at a time (the GIL); N forked children share the
socket the parent bound, so the kernel hands each new connection to whichever child accepts
it first. The app is built once, before the fork, and each child drops the database
connections it inherited (``after_fork``): a connection is never shared between processes.
Each child keeps its own in-memory caches; they are validated by the per-repo version
counters in the database, so a write seen by one child is seen by all. Per-process limits
(in-flight batch work, compare slots) are per child.

The parent only waits: SIGINT or SIGTERM is passed on to the children as SIGTERM (each
shuts down as uvicorn does, finishing the requests in flight); a child that dies on its own
stops the others, and the exit code is 1, so a supervisor (systemd, Kubernetes) restarts
the whole service rather than running it short of a worker without anyone knowing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
from collections.abc import Callable
from types import FrameType
from typing import Protocol

log = logging.getLogger("hubwatch")


class Server(Protocol):
    """What a worker runs: uvicorn's ``Server`` (``should_exit`` stops it, even before it started)."""

    should_exit: bool

    def run(self, sockets: list[socket.socket] | None = None) -> None: ...


def run_workers(count: int, make_server: Callable[[], Server], sockets: list[socket.socket], *,
                after_fork: Callable[[], None]) -> int:
    """Fork ``count`` children that each run ``make_server()`` on ``sockets``; wait for them;
    the exit code."""
    alive: set[int] = set()
    stopping: list[int] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        if not stopping:
            log.info("signal %s: stopping %d workers", signal.Signals(signum).name, len(alive))
            _signal_all(alive, signal.SIGTERM)
        stopping.append(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for _ in range(count):
            if stopping:  # a signal before every worker was started: start no more
                break
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child's exit is seen by the parent's tests
                _child(make_server, sockets, after_fork, previous)
            alive.add(pid)
        return _wait(alive, stopping)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _child(make_server: Callable[[], Server], sockets: list[socket.socket], after_fork: Callable[[], None],
           previous: dict[signal.Signals, object]) -> None:  # pragma: no cover - runs in the child
    """A worker: its own connections, uvicorn's signal handling, never back into the caller.

    A signal before uvicorn takes the signals over (a worker still starting when another
    died) stops the server all the same; one after uvicorn gives them back (it re-raises the
    one it stopped on) ends here quietly."""
    code = 1
    try:
        _die_with_parent()
        server = make_server()

        def stop(_signum: int, _frame: FrameType | None) -> None:
            server.should_exit = True

        for sig in previous:
            signal.signal(sig, stop)
        after_fork()
        server.run(sockets=sockets)
        code = 0
    except BaseException:
        log.exception("an API worker failed")
    finally:
        logging.shutdown()
        os._exit(code)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    """On Linux, SIGTERM when the parent dies (a SIGKILL it cannot pass on), so no worker is
    left serving the port on its own; elsewhere a worker outlives a killed parent."""
    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # it died before that took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _wait(alive: set[int], stopping: list[int]) -> int:
    """Reap the children; the first that dies unasked stops the rest (exit code 1)."""
    failed = False
    while alive:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        except InterruptedError:  # pragma: no cover - PEP 475 retries os.wait itself
            continue
        if pid not in alive:
            continue
        alive.discard(pid)
        code = os.waitstatus_to_exitcode(status)
        if not stopping:
            log.error("API worker %d exited (%s); stopping the others", pid, code)
            failed = True
            stopping.append(0)
            _signal_all(alive, signal.SIGTERM)
        elif code != 0:
            failed = True
    return 1 if failed else 0


def _signal_all(pids: set[int], sig: signal.Signals) -> None:
    for pid in sorted(pids):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
