"""The cyclic garbage collector, settled once a long-running process has started (issue 17).

A full (generation 2) collection walks every container the interpreter holds, and most of a
daemon's are there for good: modules, classes, compiled statements, routes (~140,000 objects
after a first cycle). On the 2-core benchmark machine one such walk costs ~80 ms of CPU, and it
runs whenever the long-lived objects have grown by a quarter, at a moment nobody chooses: in
``benchmarks/new_revision.py`` one fell inside the unpickling of a new revision's analysis answer
(88 ms instead of 4) once psycopg's ~10,000 objects had moved the threshold. Freezing what
exists once startup is over takes it out of every later walk; young collections then run per
20,000 allocations, not 700 (a querybatch or a new revision allocates thousands of containers).
"""

from __future__ import annotations

import gc
import threading

YOUNG_THRESHOLD = 20_000

_settled: set[str] = set()
_lock = threading.Lock()


def settle(phase: str) -> None:
    """Collect, freeze what survived, and raise the young threshold: once per ``phase`` and
    process ("api" when the first app is built; "daemon" after the first cycle that checked a
    repo, by when the check path's lazy imports are done). Only once, so a process that builds
    many apps or daemons (the tests) does not keep freezing objects that later become garbage."""
    with _lock:
        if phase in _settled:
            return
        _settled.add(phase)
    gc.collect()
    gc.freeze()
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_THRESHOLD), max(middle, 20), max(old, 20))
