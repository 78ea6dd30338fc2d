"""Layer 3 (daemon): one daemon's counters and gauges; ``/metrics`` renders a snapshot."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any


@dataclass
class DaemonStats:
    """Thread-safe counters (``add``) and gauges; ``snapshot()`` is a plain dict for the API."""

    polls: dict[str, int] = field(default_factory=dict)  # by status
    errors: dict[str, int] = field(default_factory=dict)  # by kind
    deliveries: dict[str, int] = field(default_factory=dict)  # webhook attempts by outcome
    requests: int = 0
    bytes: int = 0
    new_revisions: int = 0
    repaired: int = 0  # revisions recorded with files unreadable for now, amended later (issue 10)
    cycles: int = 0
    last_cycle_at: datetime | None = None
    last_cycle_seconds: float = 0.0
    queue_lag_seconds: float = 0.0
    in_flight: int = 0
    budget_share: float = 0.0  # requests per 5 min this daemon may send
    budget_needed: float = 0.0  # requests per 5 min the tracked set needs at its interval
    over_budget: bool = False
    effective_interval: float = 0.0
    paused_until: datetime | None = None
    firehose_reads: int = 0
    firehose_moved: int = 0
    firehose_confirmed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, name: str, n: float = 1, key: str | None = None) -> None:
        with self.lock:
            if key is None:
                setattr(self, name, getattr(self, name) + n)
            else:
                d = getattr(self, name)
                d[key] = d.get(key, 0) + int(n)

    def set(self, **values: Any) -> None:
        with self.lock:
            for k, v in values.items():
                setattr(self, k, v)

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "lock"}
            out["polls"], out["errors"] = dict(self.polls), dict(self.errors)
            out["deliveries"] = dict(self.deliveries)
        return out
