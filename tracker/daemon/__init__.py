"""Layer 3: when to check what. APScheduler drives ``Daemon.run_once(now)``; state lives in the DB.

Due repos are claimed from the database with leases (``FOR UPDATE SKIP LOCKED`` on
PostgreSQL) and renewed while a check runs, so several daemons share one database without
doing anything twice, and a killed daemon's repos return to the pool when its leases
expire. Errors back off per repo; a 429 pauses the whole daemon for its Retry-After (the
Hub limits the client, not the repo); every Hub request takes a token from a sliding
5-minute budget shared by the daemons holding leases, and next checks are spread so the
tracked set fits it. In firehose mode one listing read confirms every tracked repo that did
not move.

    scheduler.py  Daemon, DaemonConfig: the cycle, claims, outcomes, leases, start/stop
    budget.py     RequestBudget, budget_fit: the Hub's 5-minute request budget
    metered.py    MeteredSource: the HubSource a check reads through (budget, counts, cancel)
    coverage.py   FirehoseCoverage: which repos a model-listing read vouches for
    stats.py      DaemonStats: counters and gauges for /metrics
"""

from tracker.daemon.budget import BUDGET_WINDOW, CheckCancelled, RequestBudget, budget_fit
from tracker.daemon.scheduler import PERMANENT_KINDS, Daemon, DaemonConfig
from tracker.daemon.stats import DaemonStats

__all__ = [
    "BUDGET_WINDOW",
    "PERMANENT_KINDS",
    "CheckCancelled",
    "Daemon",
    "DaemonConfig",
    "DaemonStats",
    "RequestBudget",
    "budget_fit",
]
