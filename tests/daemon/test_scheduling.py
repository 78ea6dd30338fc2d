"""The scheduler over real repos served by the Hub emulator and a SQLite store: due repos,
intervals and jitter, the concurrency cap, the request budget, backoff, leases, shutdown."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from storage import Store, scheduling
from tests.hubemu import HubEmulator, RepoBuilder
from tracker.daemon import CheckCancelled, Daemon, RequestBudget
from tracker.pipeline import check_repo

S = timedelta(seconds=1)


def test_a_cycle_reads_due_repos_then_each_waits_its_interval(
    add_repo: Callable[..., RepoBuilder], daemon: Callable[..., Daemon], db: Store, hub: HubEmulator
) -> None:
    for i in range(3):
        add_repo(f"org/m{i}", commits=2)
    d = daemon(interval_seconds=900)
    now = datetime.now(UTC)
    first = d.run_once(now)
    assert sorted((r.repo, r.status, r.new_revisions) for r in first) == [
        (f"org/m{i}", "ok", 2) for i in range(3)
    ]
    for repo in db.list_repos():
        assert repo.last_error is None and repo.revisions == 2
        assert now + 900 * S <= repo.next_check_at <= now + 960 * S
    assert scheduling.leased_by(db, d.owner) == []

    hub.reset_stats()
    assert d.run_once(now + 899 * S) == []  # nothing is due before the interval
    assert hub.count() == 0
    again = d.run_once(now + 961 * S)
    assert sorted(r.status for r in again) == ["unchanged"] * 3
    assert hub.count() == 3 and hub.count("model_info") == 3  # one request per unchanged repo
    assert d.stats.snapshot()["polls"] == {"ok": 3, "unchanged": 3}


def test_jitter_spreads_the_next_checks(
    add_repo: Callable[..., RepoBuilder], daemon: Callable[..., Daemon], db: Store
) -> None:
    for i in range(6):
        add_repo(f"org/j{i}", commits=1)
    d = daemon(interval_seconds=100, jitter_seconds=50)
    d.rng = random.Random(7)
    now = datetime.now(UTC)
    d.run_once(now)
    offsets = [(r.next_check_at - now).total_seconds() for r in db.list_repos()]
    assert all(100 <= o <= 160 for o in offsets), offsets
    assert max(offsets) - min(offsets) > 5  # not all in step
    short = daemon(interval_seconds=10, jitter_seconds=60)  # jitter never swamps a short interval
    assert all(10 <= (short.next_check(now) - now).total_seconds() <= 15 for _ in range(50))


def test_at_most_concurrency_checks_run_at_once(
    add_repo: Callable[..., RepoBuilder], daemon: Callable[..., Daemon], hub: HubEmulator
) -> None:
    for i in range(6):
        add_repo(f"org/c{i}", commits=1, weights=False)
    hub.faults.add("slow", route="model_info", seconds=0.2)
    running, peak = 0, 0
    lock = threading.Lock()

    def counted(*args: Any, **kw: Any) -> Any:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        try:
            return check_repo(*args, **kw)
        finally:
            with lock:
                running -= 1

    d = daemon(concurrency=2, check=counted)
    results = d.run_once(datetime.now(UTC))
    assert len(results) == 6 and {r.status for r in results} == {"ok"}
    assert peak == 2


def test_the_request_budget_caps_a_cycle_and_stretches_the_interval(
    add_repo: Callable[..., RepoBuilder], daemon: Callable[..., Daemon], db: Store, hub: HubEmulator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for i in range(6):
        add_repo(f"org/b{i}", commits=1, weights=False)
    now = datetime.now(UTC)
    daemon().run_once(now)  # first read, with the default budget
    tight = daemon(interval_seconds=60, requests_per_5min=4)
    hub.reset_stats()
    with caplog.at_level(logging.WARNING, logger="hubwatch.daemon"):
        results = tight.run_once(now + 2000 * S)
    assert len(results) == 4 and hub.count() == 4  # the budget, not the due set, decided
    assert sum(r.next_check_at <= now + 2000 * S for r in db.list_repos()) == 2  # still due
    snap = tight.stats.snapshot()
    assert snap["over_budget"] is True and snap["budget_needed"] == 6 * 300 / 60
    assert snap["effective_interval"] == 500  # 6 repos x 300 s / (0.9 x 4 requests)
    assert any("over budget" in r.getMessage() for r in caplog.records)
    checked = [r for r in db.list_repos() if r.next_check_at > now + 2000 * S]
    assert all(r.next_check_at >= now + 2500 * S for r in checked)


def test_request_budget_waits_for_the_window_or_gives_up_when_stopping() -> None:
    t = [0.0]
    budget = RequestBudget(2, clock=lambda: t[0])
    stop = threading.Event()
    budget.acquire(stop)
    budget.acquire(stop)
    assert budget.room() == 0
    stop.set()
    with pytest.raises(CheckCancelled):
        budget.acquire(stop)
    t[0] = 300.5  # the first two left the window
    assert budget.room() == 2


def test_backoff_grows_is_capped_and_honours_retry_after(daemon: Callable[..., Daemon]) -> None:
    d = daemon(interval_seconds=900, max_backoff_seconds=3600)
    assert 60 <= d.backoff_seconds(1, None, "unavailable") <= 66
    assert 240 <= d.backoff_seconds(3, None, "unavailable") <= 264
    assert 900 <= d.backoff_seconds(9, None, "unavailable") <= 990  # transient: retried every interval
    assert 3600 <= d.backoff_seconds(9, None, "not_found") <= 3960  # gone: backs off to the cap
    assert d.backoff_seconds(1, 500, "rate_limited") >= 500
    assert d.backoff_seconds(1, 10**9, "rate_limited") == 3600  # a hostile Retry-After is capped


def test_a_webhook_during_a_check_keeps_the_repo_due(
    add_repo: Callable[..., RepoBuilder], daemon: Callable[..., Daemon], db: Store
) -> None:
    add_repo("org/w", commits=1)

    def pushed_meanwhile(store: Store, source: Any, repo: Any, *args: Any, **kw: Any) -> Any:
        result = check_repo(store, source, repo, *args, **kw)
        store.mark_due(repo.id)  # what POST /hooks/huggingface does
        return result

    now = datetime.now(UTC)
    daemon(check=pushed_meanwhile).run_once(now)
    repo = db.get_repo("org/w")
    assert repo is not None and repo.revisions == 1
    assert repo.next_check_at <= datetime.now(UTC)  # due again, not pushed to the interval


def test_leased_repos_are_left_alone_until_the_lease_expires(
    add_repo: Callable[..., RepoBuilder], daemon: Callable[..., Daemon], db: Store
) -> None:
    for i in range(3):
        add_repo(f"org/l{i}", commits=1, weights=False)
    now = datetime.now(UTC)
    assert len(db.claim_due("dead-daemon", now=now, limit=10, lease_seconds=60)) == 3
    d = daemon()
    assert d.run_once(now + 30 * S) == []
    taken = d.run_once(now + 61 * S)  # the other daemon died: its leases ran out
    assert sorted(r.repo for r in taken) == ["org/l0", "org/l1", "org/l2"]
    assert all(r.status == "ok" for r in taken)
    assert scheduling.leased_by(db, "dead-daemon") == [] and scheduling.leased_by(db, d.owner) == []


def test_a_lost_lease_stops_the_check_without_recording_it(
    add_repo: Callable[..., RepoBuilder], daemon: Callable[..., Daemon], db: Store
) -> None:
    add_repo("org/lost", commits=3)
    holder: list[Daemon] = []

    def stolen(store: Store, source: Any, repo: Any, *args: Any, **kw: Any) -> Any:
        later = datetime.now(UTC) + 120 * S  # our lease ran out; another daemon claimed the repo
        assert [r.id for r in store.claim_due("thief", now=later, limit=1, lease_seconds=60)] == [repo.id]
        holder[0].renew_leases()
        return check_repo(store, source, repo, *args, **kw)

    d = daemon(lease_seconds=60, check=stolen)
    holder.append(d)
    (result,) = d.run_once(datetime.now(UTC))
    assert result.status == "cancelled"
    repo = db.get_repo("org/lost")
    assert repo is not None and repo.revisions == 0 and repo.last_poll_at is None
    assert scheduling.leased_by(db, "thief") == ["org/lost"]  # ours was released, theirs kept


def test_stop_cancels_a_long_check_and_releases_its_lease(
    add_repo: Callable[..., RepoBuilder], daemon: Callable[..., Daemon], db: Store, hub: HubEmulator
) -> None:
    b = add_repo("org/long", commits=8, weights=False)
    hub.faults.add("slow", route="tree", seconds=0.25)
    d = daemon()
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.extend(d.run_once(datetime.now(UTC))))
    worker.start()
    wait = time.monotonic() + 20
    while (db.get_repo("org/long").revisions < 2) and time.monotonic() < wait:  # type: ignore[union-attr]
        time.sleep(0.05)
    released = d.stop(grace_seconds=0)
    worker.join(10)
    assert not worker.is_alive()
    assert [r.status for r in out] == ["cancelled"]
    assert released == 0 and scheduling.leased_by(db, d.owner) == []  # released as the check ended
    partial = db.get_repo("org/long")
    assert partial is not None and 2 <= partial.revisions < 8
    assert partial.next_check_at <= datetime.now(UTC)  # still due: the next daemon finishes it

    hub.faults.clear()
    (done,) = daemon().run_once(datetime.now(UTC))
    assert done.status == "ok" and done.new_revisions == 8 - partial.revisions
    history = db.history("org/long", with_changes=False)
    assert len(history) == 8 and len({r.sha for r in history}) == 8
    assert history[0].sha == b.head()


def test_stop_lets_short_checks_finish_within_the_grace(
    add_repo: Callable[..., RepoBuilder], daemon: Callable[..., Daemon], db: Store, hub: HubEmulator
) -> None:
    for i in range(2):
        add_repo(f"org/g{i}", commits=1, weights=False)
    hub.faults.add("slow", route="model_info", seconds=0.5)
    d = daemon()
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.extend(d.run_once(datetime.now(UTC))))
    worker.start()
    time.sleep(0.2)
    d.stop(grace_seconds=10)
    worker.join(10)
    assert sorted(r.status for r in out) == ["ok", "ok"]
    assert all(r.revisions == 1 for r in db.list_repos())
    assert d.run_once(datetime.now(UTC) + 10_000 * S) == []  # a stopped daemon claims nothing


def test_leases_are_renewed_while_a_long_check_runs(
    add_repo: Callable[..., RepoBuilder], daemon: Callable[..., Daemon], db: Store, hub: HubEmulator
) -> None:
    add_repo("org/slow", commits=6, weights=False)
    hub.faults.add("slow", route="tree", seconds=0.6)  # ~4 s of checking, twice the lease
    d = daemon(lease_seconds=2, tick_seconds=0.5)
    d.start()
    stolen: list[str] = []
    try:
        deadline = time.monotonic() + 30
        while not scheduling.leased_by(db, d.owner) and time.monotonic() < deadline:
            time.sleep(0.02)
        while time.monotonic() < deadline and db.get_repo("org/slow").revisions < 6:  # type: ignore[union-attr]
            stolen += [r.id for r in db.claim_due("thief", now=datetime.now(UTC), limit=5, lease_seconds=60)]
            time.sleep(0.2)
    finally:
        d.stop()
    assert stolen == []  # never expired while the check ran
    assert db.get_repo("org/slow").revisions == 6  # type: ignore[union-attr]
    assert d.stats.snapshot()["polls"] == {"ok": 1}
    assert scheduling.leased_by(db, d.owner) == []
