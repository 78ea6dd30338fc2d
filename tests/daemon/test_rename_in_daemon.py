"""The daemon over a repo the Hub renamed (issue 10 point 8): the check moves it to the new id,
the lease of the old id is gone with it, and the next cycle checks the repo under its new id."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from storage import Store, scheduling
from tests.hubemu import HubEmulator, RepoBuilder
from tracker.daemon import Daemon

S = timedelta(seconds=1)


def test_a_renamed_repo_is_moved_and_checked_under_its_new_id(
    add_repo: Callable[..., RepoBuilder], daemon: Callable[..., Daemon], db: Store, hub: HubEmulator
) -> None:
    b = add_repo("org/before", commits=2)
    d = daemon(interval_seconds=900)
    now = datetime.now(UTC)
    assert [(r.repo, r.status) for r in d.run_once(now)] == [("org/before", "ok")]

    hub.rename_repo("org/before", "org/after")
    moved = d.run_once(now + 961 * S)
    # the check that moved it could not record its outcome on the old id: the moved row was
    # due at once, and the same cycle checked it again under the new id (one more request)
    assert {(r.repo, r.status) for r in moved} == {("org/after", "unchanged")}
    assert [r.id for r in db.list_repos()] == ["org/after"] and scheduling.leased_by(db, d.owner) == []
    after = db.get_repo("org/after")
    assert after is not None and after.revisions == 2 and after.last_error is None
    assert after.next_check_at is not None and after.next_check_at >= now + (961 + 900) * S

    new = b.commit({"README.md": b"after the rename\n"}, title="card")
    hub.reset_stats()
    again = d.run_once(now + (961 + 961) * S)
    assert [(r.repo, r.status) for r in again] == [("org/after", "ok")]
    assert db.get_repo("org/after").head_sha == new  # type: ignore[union-attr]
    assert all(r.status != 307 for r in hub.requests)  # the new id is asked directly now
