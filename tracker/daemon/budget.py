"""Layer 3 (daemon): the Hub's request budget, and what fits in it.

The Hub limits a client to a number of requests per 5-minute window (500 anonymous, 1,000
with a free account). Every request a check sends takes a token from a sliding window of
that size, so no fixed window ever sees more; and when the tracked set cannot be polled
every interval within it, the interval is stretched to fit instead of letting a queue grow.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

BUDGET_WINDOW = 300.0  # seconds: the Hub's rate-limit window
HEADROOM = 0.9  # a stretched interval aims at 90% of the budget: room for new commits' reads


class CheckCancelled(Exception):
    """Raised inside a check when the daemon stops or lost the repo's lease: nothing half-done
    is recorded (each revision is one transaction), the lease is released."""


class RequestBudget:
    """A sliding 5-minute window of Hub requests. ``acquire`` waits for room, so the window
    never holds more than ``per_window``."""

    def __init__(self, per_window: int, clock: Callable[[], float] = time.monotonic):
        self.per_window = per_window
        self.clock = clock
        self.sent: deque[float] = deque()
        self.cond = threading.Condition()

    def _trim(self) -> None:
        cutoff = self.clock() - BUDGET_WINDOW
        while self.sent and self.sent[0] <= cutoff:
            self.sent.popleft()

    def room(self) -> int:
        with self.cond:
            self._trim()
            return max(0, self.per_window - len(self.sent))

    def spend(self, n: int = 1) -> None:
        with self.cond:
            self.sent.extend([self.clock()] * n)

    def acquire(self, cancel: threading.Event) -> None:
        """Take one request token, waiting for the oldest to leave the window when none is left."""
        while True:
            with self.cond:
                self._trim()
                if len(self.sent) < self.per_window:
                    self.sent.append(self.clock())
                    return
                wait = self.sent[0] + BUDGET_WINDOW - self.clock()
            if cancel.wait(min(max(wait, 0.01), 1.0)):
                raise CheckCancelled("stopping while waiting for request budget")


@dataclass(frozen=True, slots=True)
class BudgetFit:
    needed: float  # requests per window the polled repos need at the configured interval
    over: bool
    interval: float  # the interval that fits (the configured one when it does)


def budget_fit(polled: int, interval: float, per_window: int) -> BudgetFit:
    """Whether ``polled`` repos checked every ``interval`` seconds fit ``per_window`` requests."""
    needed = polled * BUDGET_WINDOW / interval
    if needed <= per_window:
        return BudgetFit(needed, False, float(interval))
    return BudgetFit(needed, True, float(math.ceil(polled * BUDGET_WINDOW / (HEADROOM * per_window))))
