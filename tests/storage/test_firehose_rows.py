"""The firehose's bulk statements: which rows one listing read may confirm, marked due, counted.

``confirm_covered`` must confirm exactly what the per-id path did (a covered repo, checked
successfully since the chain began, no failures, not leased, not moved), in one statement
or, past the bound on excluded ids, through the per-id path.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import update
from sqlmodel import col

from storage import Store, scheduling
from storage.scheduling import _MAX_EXCLUDED
from storage.tables import RepoRow

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
LATER = NOW + timedelta(hours=1)
HEAD = "a" * 40


def _repo(store: Store, repo_id: str, *, checked: datetime | None = NOW - timedelta(minutes=5),
          branch: str = "main", kind: str = "hub", head: str | None = HEAD, failed: bool = False) -> None:
    store.add_repo(repo_id, source=repo_id if kind == "hub" else f"/git/{repo_id}", source_kind=kind,
                   branch=branch, now=NOW - timedelta(days=1))
    store.set_head(repo_id, head)
    if checked is not None:
        store.record_poll(repo_id, now=checked, next_check_at=checked)
    if failed:
        store.record_poll(repo_id, now=checked or NOW, error="boom", error_kind="unavailable")


def _next(store: Store, repo_id: str) -> datetime | None:
    repo = store.get_repo(repo_id)
    assert repo is not None
    return repo.next_check_at


def test_only_covered_checked_unleased_unmoved_repos_are_confirmed(store: Store) -> None:
    _repo(store, "org/ok")
    _repo(store, "org/moved")
    _repo(store, "org/failing", failed=True)
    _repo(store, "org/stale", checked=NOW - timedelta(hours=3))  # before the chain began
    _repo(store, "org/never", checked=None)
    _repo(store, "org/branch", branch="dev")
    _repo(store, "org/git", kind="git")
    _repo(store, "org/headless", head=None)
    _repo(store, "org/leased")
    _repo(store, "org/repair-due")  # a revision recorded with files unreadable for now, due again
    _repo(store, "org/repair-later")  # one whose next attempt is still ahead: confirmed as usual
    with store.session() as s:
        s.execute(update(RepoRow).where(col(RepoRow.id) == "org/repair-due").values(repair_due_at=NOW))
        s.execute(update(RepoRow).where(col(RepoRow.id) == "org/repair-later").values(repair_due_at=LATER))
        s.commit()
    assert [r.id for r in store.claim_due("other", now=NOW, limit=100, lease_seconds=600)
            if r.id == "org/leased"]  # claimed by another daemon, lease running
    for r in ("org/ok", "org/moved", "org/failing", "org/stale", "org/never", "org/branch", "org/git",
              "org/headless", "org/repair-due", "org/repair-later"):
        store.release(r, "other")

    assert scheduling.count_firehose_repos(store) == 8  # every active hub repo on main with a head
    assert scheduling.firehose_heads(store, ["org/ok", "org/git", "org/unknown"]) == {"org/ok": HEAD}
    confirmed = scheduling.confirm_covered(store, moved=["org/moved"], checked_since=NOW - timedelta(hours=1),
                                           now=NOW, next_check_at=LATER)
    assert confirmed == 2
    assert _next(store, "org/ok") == LATER and _next(store, "org/repair-later") == LATER
    for other in ("org/moved", "org/failing", "org/stale", "org/never", "org/branch", "org/git", "org/headless",
                  "org/leased", "org/repair-due"):
        assert _next(store, other) != LATER, other


def test_the_oldest_success_among_healthy_covered_repos_starts_a_chain(store: Store) -> None:
    assert scheduling.firehose_oldest_success(store) is None
    _repo(store, "org/a", checked=NOW - timedelta(minutes=5))
    _repo(store, "org/b", checked=NOW - timedelta(minutes=9))
    _repo(store, "org/c", checked=NOW - timedelta(hours=2), failed=True)  # failing: polled by itself
    _repo(store, "org/d", checked=NOW - timedelta(hours=3), kind="git")  # not covered
    assert scheduling.firehose_oldest_success(store) == NOW - timedelta(minutes=9)


@pytest.mark.parametrize("moved_count", [3, _MAX_EXCLUDED + 5])
def test_a_burst_of_moved_repos_confirms_the_same_rows(sqlite_store: Store, moved_count: int) -> None:
    ids = [f"org/m{i:04d}" for i in range(moved_count + 4)]
    for repo_id in ids:
        _repo(sqlite_store, repo_id)
    moved = ids[:moved_count]
    confirmed = scheduling.confirm_covered(sqlite_store, moved=moved, checked_since=NOW - timedelta(hours=1),
                                           now=NOW, next_check_at=LATER)
    assert confirmed == 4
    assert [r for r in ids if _next(sqlite_store, r) == LATER] == ids[moved_count:]
