"""Stage 8 (read): a cap on work in flight, by units of work rather than by requests.

A querybatch weighs its number of queries: many small batches or a few full ones run at
once, as long as their queries fit the capacity. Those that do not fit wait, first come
first served, on the event loop (an ``anyio.Event`` each), so a flood of batches never
holds the worker threads the other routes need; a wait has a timeout, after which the
caller refuses the request (issue 17: the earlier cap of two batches queued honest load).

Imports: stdlib, anyio.
"""

from __future__ import annotations

import threading
from collections import deque

import anyio


class WorkLimiter:
    """At most ``capacity`` units of work at once; a request larger than that counts as full."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._free = capacity
        self._waiting: deque[tuple[int, anyio.Event]] = deque()
        self._lock = threading.Lock()  # requests may come from several event loops (test clients)

    @property
    def free(self) -> int:
        return self._free

    async def acquire(self, units: int, timeout: float) -> bool:
        """Take ``units`` (waiting at most ``timeout`` seconds for room); False if it timed out.

        A caller that gets True must :meth:`release` the same ``units``.
        """
        units = min(max(units, 1), self.capacity)
        with self._lock:
            if not self._waiting and self._free >= units:
                self._free -= units
                return True
            entry = (units, anyio.Event())
            self._waiting.append(entry)
        try:
            with anyio.move_on_after(timeout):
                await entry[1].wait()
        except BaseException:  # cancelled (the client went away): give back what was granted
            self._leave(entry)
            raise
        return self._granted_or_leave(entry)

    def _granted_or_leave(self, entry: tuple[int, anyio.Event]) -> bool:
        with self._lock:
            if entry[1].is_set():
                return True
            self._waiting.remove(entry)
            self._wake()  # the head may have been what kept smaller ones waiting
            return False

    def _leave(self, entry: tuple[int, anyio.Event]) -> None:
        """Leave the queue, returning the units if they were granted meanwhile."""
        with self._lock:
            if entry[1].is_set():
                self._free += entry[0]
            else:
                self._waiting.remove(entry)
            self._wake()

    def release(self, units: int) -> None:
        with self._lock:
            self._free += min(max(units, 1), self.capacity)
            self._wake()

    def _wake(self) -> None:
        """Grant waiters in arrival order while the first one fits (no overtaking)."""
        while self._waiting and self._waiting[0][0] <= self._free:
            units, event = self._waiting.popleft()
            self._free -= units
            event.set()
