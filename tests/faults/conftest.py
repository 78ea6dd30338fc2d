"""The fault-injection suite (issue 10): the Hub emulator with faults, kill points, failing receivers.

Reuses the daemon tests' fixtures: a Hub emulator per test, a SQLite store, tiny repos.
"""

from __future__ import annotations

from tests.daemon.conftest import add_repo, daemon, db, hub  # noqa: F401  (fixtures)
