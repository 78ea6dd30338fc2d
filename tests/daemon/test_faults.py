"""Hub faults through the daemon: each is recorded on the repo (``repos --json`` shows it), backs
off, and never stops the cycle or the other repos. The emulator injects the faults."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from storage import Store
from tests.daemon.helpers import config_bytes
from tests.e2e.cli_helpers import Cli
from tests.hubemu import HubEmulator, RepoBuilder
from tracker.daemon import Daemon

S = timedelta(seconds=1)


def _repos_json(tmp_path: Path, db: Store) -> dict[str, dict[str, Any]]:
    url = str(db.engine.url)
    return {r["id"]: r for r in Cli(tmp_path, url).ok("repos", "--json").json()}


@pytest.mark.parametrize(
    ("fault", "params", "kind"),
    [
        ("status", {"status": 503}, "unavailable"),
        ("status", {"status": 500, "body": b"<html>oops</html>"}, "unavailable"),
        ("reset", {}, "unavailable"),
        ("truncate", {"keep": 5}, "unavailable"),
    ],
)
def test_transient_errors_are_recorded_and_backed_off(
    add_repo: Callable[..., RepoBuilder], daemon: Callable[..., Daemon], db: Store, hub: HubEmulator,
    tmp_path: Path, fault: str, params: dict[str, Any], kind: str,
) -> None:
    add_repo("org/ok", commits=1)
    add_repo("org/bad", commits=1)
    hub.faults.add(fault, route="commits", repo="org/bad", **params)
    now = datetime.now(UTC)
    results = {r.repo: r for r in daemon(interval_seconds=900).run_once(now)}
    assert results["org/ok"].status == "ok"
    assert results["org/bad"].status == "error" and results["org/bad"].error_kind == kind
    shown = _repos_json(tmp_path, db)
    assert shown["org/bad"]["status"] == "error" and shown["org/bad"]["last_error_kind"] == kind
    assert "org/bad" in shown["org/bad"]["last_error"] and shown["org/bad"]["failures"] == 1
    bad = db.get_repo("org/bad")
    assert bad is not None and now + 60 * S <= bad.next_check_at <= now + 80 * S  # first backoff: a minute

    hub.faults.clear()
    (retry,) = daemon().run_once(now + 120 * S)
    assert retry.repo == "org/bad" and retry.status == "ok" and retry.new_revisions == 1
    assert _repos_json(tmp_path, db)["org/bad"]["last_error"] is None


def test_429_retry_after_sets_the_next_check_and_pauses_the_daemon(
    add_repo: Callable[..., RepoBuilder], daemon: Callable[..., Daemon], db: Store, hub: HubEmulator,
    tmp_path: Path,
) -> None:
    for name in ("org/a", "org/b", "org/c"):
        add_repo(name, commits=1, weights=False)
    hub.faults.add("rate_limit", route="model_info", retry_after=600, reset=600, times=1)
    d = daemon(concurrency=1)
    now = datetime.now(UTC)
    results = d.run_once(now)  # the Hub limits the client: nothing else starts this cycle
    (first,) = [r for r in results if r.status != "cancelled"]
    assert hub.count("model_info") == 1  # the others claimed with it were handed back unchecked, still due
    assert first.status == "error" and first.error_kind == "rate_limited" and first.retry_after == 600
    limited = db.get_repo(first.repo)
    assert limited is not None and limited.next_check_at >= now + 600 * S
    assert _repos_json(tmp_path, db)[first.repo]["next_check"] >= (now + 600 * S).strftime("%Y-%m-%dT%H:%M:%S")
    assert d.run_once(now + 300 * S) == []  # still paused
    rest = d.run_once(now + 700 * S)  # the pause is over; the limited repo is due again too
    assert sorted(r.status for r in rest) == ["ok", "ok", "ok"]
    assert d.stats.snapshot()["errors"] == {"rate_limited": 1}


def test_a_hung_connection_hits_the_deadline_and_the_cycle_goes_on(
    add_repo: Callable[..., RepoBuilder], daemon: Callable[..., Daemon], hub: HubEmulator
) -> None:
    add_repo("org/hung", commits=1)
    add_repo("org/fine", commits=1)
    hub.faults.add("hang", route="tree", repo="org/hung", seconds=60)
    hub.faults.add("hang", route="model_info", repo="org/fine", seconds=60, times=1)
    started = time.monotonic()
    results = {r.repo: r for r in daemon(timeout=1.0).run_once(datetime.now(UTC))}
    assert time.monotonic() - started < 10
    # the tree read is retried within the poll, then the revision stays pending
    assert results["org/hung"].status == "error" and results["org/hung"].error_kind == "incomplete"
    assert "timed out" in (results["org/hung"].error or "") and "after 3 attempts" in (results["org/hung"].error or "")
    assert results["org/fine"].status == "error" and results["org/fine"].error_kind == "unavailable"


def test_gated_and_deleted_repos_show_their_error(
    add_repo: Callable[..., RepoBuilder], daemon: Callable[..., Daemon], db: Store, hub: HubEmulator,
    tmp_path: Path,
) -> None:
    add_repo("org/gated", commits=1)
    add_repo("org/deleted", commits=1)
    add_repo("org/alive", commits=1)
    now = datetime.now(UTC)
    daemon().run_once(now)
    hub.set_gated("org/gated")
    hub.remove_repo("org/deleted")
    RepoBuilder(hub.state("org/gated").git.path).commit({"config.json": config_bytes(eos_token_id=9)}, title="gate")
    results = {r.repo: r for r in daemon(max_backoff_seconds=7200).run_once(now + 1000 * S)}
    assert results["org/gated"].error_kind == "gated"
    assert results["org/deleted"].error_kind == "not_found"
    assert results["org/alive"].status == "unchanged"
    shown = _repos_json(tmp_path, db)
    assert shown["org/gated"]["last_error_kind"] == "gated" and "restricted" in shown["org/gated"]["last_error"]
    assert shown["org/deleted"]["last_error_kind"] == "not_found"
    assert shown["org/deleted"]["revisions"] == 1  # history is kept
    d = daemon(max_backoff_seconds=7200)
    for n in range(1, 5):  # permanent errors back off towards max_backoff_seconds
        repo = db.get_repo("org/deleted")
        assert repo is not None and repo.failures == n
        d.run_once(repo.next_check_at)
    repo = db.get_repo("org/deleted")
    assert repo is not None and repo.failures == 5
    assert repo.next_check_at - repo.last_poll_at >= 960 * S  # 60 s x 2^4


def test_a_force_push_is_read_as_a_history_rewrite(
    add_repo: Callable[..., RepoBuilder], daemon: Callable[..., Daemon], db: Store
) -> None:
    b = add_repo("org/fp", commits=3)
    now = datetime.now(UTC)
    daemon().run_once(now)
    old = [r.sha for r in db.history("org/fp", with_changes=False)]
    b.reset(old[-1])  # back to the root, then a different commit on top
    new = b.commit({"config.json": config_bytes(eos_token_id=7)}, title="rewritten")
    (result,) = daemon().run_once(now + 1000 * S)
    assert result.status == "ok" and result.new_revisions == 1
    history = db.history("org/fp")
    assert {r.sha for r in history} == {*old, new}  # nothing lost
    assert history[0].sha == new and any(c.kind.value == "history" for c in history[0].changes)
    assert {r.sha for r in history if not r.reachable} == set(old[:2])
