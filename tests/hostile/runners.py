"""Analysis runners for the worker tests: module-level, so a worker forked from the fork
server imports them by name (a monkeypatch in the test process never reaches it)."""

from __future__ import annotations

import threading
import time

from tracker.pipeline.analysis import Analysis, analyse

#: Held by a thread of the test process while a worker starts: a worker forked from that
#: process would hold it forever, as it would the daemon's SQLAlchemy, httpx or stdio locks.
HELD_AT_FORK = threading.Lock()


def slow_on_bomb(job: object) -> Analysis:
    """The real analysis; a config with the ``k0`` bomb key after a base takes 5 s more (the
    bomb's diff, made slow on any machine)."""
    out = analyse(job)  # type: ignore[arg-type]
    config = out.head.config
    if isinstance(config, dict) and "k0" in config and getattr(job, "base", None) is not None:
        time.sleep(5)
    return out


def analyse_under_lock(job: object) -> Analysis:
    """The real analysis, inside a lock of this module (as library code takes its locks)."""
    with HELD_AT_FORK:
        return analyse(job)  # type: ignore[arg-type]
