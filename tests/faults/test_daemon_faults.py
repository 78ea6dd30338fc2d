"""Daemon faults (issue 10 point 5): a 429 pauses the checks already running, not only new ones."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from storage import Store
from tests.hubemu import HubEmulator, RepoBuilder
from tracker.daemon import Daemon


def test_a_429_stops_the_checks_in_flight_too(
    add_repo: Callable[..., RepoBuilder], daemon: Callable[..., Daemon], db: Store, hub: HubEmulator,
) -> None:
    for i in range(4):
        add_repo(f"org/m{i}", commits=3)
    # every repo's tree read is slow, so all four checks are in flight when one of them is limited
    hub.faults.add("rate_limit", route="tree", repo="org/m0", retry_after=600, times=1)
    hub.faults.add("slow", route="tree", seconds=1.0)
    d = daemon(concurrency=4)
    results = d.run_once(datetime.now(UTC))
    limited_at = next(i for i, r in enumerate(hub.requests) if r.fault == "rate_limit")
    after = [r for r in hub.requests[limited_at + 1:] if r.route != "model_info"]
    # each other check may finish the request it had sent already, then stops at its next one
    assert len(after) <= 3, [(r.route, r.repo) for r in after]
    assert {r.status for r in results} <= {"error", "cancelled", "ok"}
    assert any(r.status == "cancelled" for r in results)
    again = d.store.claim_due("other-daemon", now=datetime.now(UTC), limit=10, lease_seconds=60)
    assert {r.repo for r in results if r.status == "cancelled"} <= {r.id for r in again}  # handed back, still due

