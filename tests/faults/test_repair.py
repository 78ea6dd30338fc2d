"""A revision recorded with files unreadable for now is repaired by a later poll (issue 10: a
transient failure never leaves a revision permanently incomplete).

The emulator serves a real git history; its fault injection makes config.json 404 for
several polls, so the revision is recorded with it unreadable. Once the fault clears, the
repo's next check reads the file again, amends the revision (its changes, its advisory with
``modified`` bumped, the outbox), and appends the amendment to the hash chain. A repo with
nothing pending still costs its one request. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from advisories.webhooks import new_secret
from storage import Store, open_store, repairs
from storage import subscriptions as subs
from tests.advisories.osv_helpers import assert_valid
from tests.api.data import settings as api_settings
from tests.corpus import REPO_ROOT
from tests.daemon.helpers import config_bytes
from tests.hubemu import HubEmulator, RepoBuilder
from tests.webhooks.receiver import Receiver
from tracker.cli.context import pipeline_options
from tracker.config import AdvisorySettings, Settings
from tracker.delivery import deliver_pending
from tracker.errors import ReadIncomplete
from tracker.hub.hf import HfSource
from tracker.pipeline import CheckResult, PipelineOptions, check_repo
from tracker.pipeline.repair import RepairPolicy
from tracker.snapshot import ReadPolicy

REPO = "org/flaky"
T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def db(db_url: str) -> Iterator[Store]:
    """SQLite and PostgreSQL: the repair's transaction locks its row on PostgreSQL."""
    st = open_store(db_url)
    yield st
    st.close()


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


def _options(clock: Clock, **repair: float) -> PipelineOptions:
    opts = pipeline_options(Settings(advisories=AdvisorySettings(osv_api="")))
    return replace(opts, reads=ReadPolicy(sleep=lambda _s: None), give_up_reads_after=2, clock=clock,
                   repair=RepairPolicy(**repair))  # type: ignore[arg-type]


def _check(db: Store, hub: HubEmulator, opts: PipelineOptions) -> CheckResult:
    """One poll as the CLI and the daemon make it: the outcome recorded on the repo's row."""
    repo = db.get_repo(REPO)
    assert repo is not None
    src = HfSource(REPO, endpoint=hub.url, timeout=2.0)
    try:
        result = check_repo(db, src, repo, opts)
    except ReadIncomplete as e:
        db.record_poll(REPO, now=opts.clock(), error=str(e), error_kind=e.kind)
        return CheckResult(REPO, "error", error=str(e), error_kind=e.kind)
    finally:
        src.close()
    db.record_poll(REPO, now=opts.clock(), changed=result.new_revisions > 0)
    return result


def _record_unreadable(db: Store, hub: HubEmulator, builder: RepoBuilder, opts: PipelineOptions,
                       clock: Clock) -> str:
    """Baseline read, then a commit whose config.json 404s until it is recorded unreadable."""
    assert _check(db, hub, opts).new_revisions == 1
    builder.commit({"config.json": config_bytes(max_position_embeddings=4096)}, title="longer context")
    hub.faults.add("status", route="resolve", status=404, error_code="EntryNotFound")
    for _ in range(2):
        clock.advance(900)
        assert _check(db, hub, opts).error_kind == "incomplete"
    clock.advance(900)
    assert _check(db, hub, opts).new_revisions == 1
    return builder.head()


def _summaries(db: Store, sha: str) -> list[str]:
    rev = db.get_revision(REPO, sha)
    assert rev is not None
    return [c.summary for c in rev.changes]


def test_a_revision_recorded_unreadable_is_repaired_once_the_file_reads(
    add_repo: Callable[..., RepoBuilder], db: Store, hub: HubEmulator,
) -> None:
    clock = Clock()
    opts = _options(clock)
    builder = add_repo(REPO, commits=1)
    with Receiver() as rx:
        sub = subs.create_subscription(db, url=rx.url, repos=None, secret=new_secret(), now=T0)
        sha = _record_unreadable(db, hub, builder, opts, clock)
        assert any("could not be read" in s for s in _summaries(db, sha))
        [advisory] = db.list_advisories(REPO)
        before = advisory.record
        pending = repairs.state(db, REPO, sha)
        assert pending is not None and pending["status"] == "pending" and pending["paths"] == ["config.json"]
        assert db.get_repo(REPO).repair_due_at is not None  # type: ignore[union-attr]

        clock.advance(900)  # the next poll: the file still 404s, the repair backs off
        hub.reset_stats()
        result = _check(db, hub, opts)
        assert result.status == "unchanged" and result.repaired == 0 and result.error is None
        assert hub.count("resolve") == 3  # config.json alone, with its in-poll retries; nothing else
        failed = repairs.state(db, REPO, sha)
        assert failed is not None and failed["status"] == "pending" and failed["attempts"] == 1
        assert failed["next_attempt_at"] == clock.now + timedelta(seconds=900)

        hub.faults.clear()
        clock.advance(300)  # not due yet: the head check only
        hub.reset_stats()
        assert _check(db, hub, opts).repaired == 0 and len(hub.requests) == 1

        clock.advance(900)
        hub.reset_stats()
        result = _check(db, hub, opts)
        assert result.repaired == 1 and result.status == "unchanged"
        assert hub.count("resolve") == 1  # the missing file, nothing more
        summaries = _summaries(db, sha)
        assert any("max_position_embeddings 512 -> 4096" in s for s in summaries), summaries
        assert not any("could not be read" in s or "not read" in s for s in summaries), summaries
        rev = db.get_revision(REPO, sha)
        assert rev is not None and rev.error is None
        done = repairs.state(db, REPO, sha)
        assert done is not None and done["status"] == "repaired" and done["attempts"] == 2
        assert db.get_repo(REPO).repair_due_at is None  # type: ignore[union-attr]

        [amended] = db.list_advisories(REPO)
        assert amended.id == advisory.id  # OSV ids stay deterministic
        assert amended.record["published"] == before["published"]
        assert amended.record["modified"] > before["modified"]
        assert "max_position_embeddings" in str(amended.record["database_specific"]["changes"])
        assert "## Record history" in amended.record["details"] and "amended: repaired" in amended.record["details"]
        assert_valid(amended.record)  # still a valid OSV record
        assert [v[2] for v in db.advisory_versions(advisory.id)][-1].startswith("repaired: config.json")
        assert repairs.verify_chain(db, REPO) == []  # the amendment is appended, history intact

        deliver_pending(db, api_settings(), now=clock.now)
        types = [d["type"] for d in subs.deliveries(db, sub.id)]
        assert sorted(types) == ["advisory.published", "advisory.updated"]
        assert set(rx.ids()) == {f"{advisory.id}.{before['modified']}", f"{advisory.id}.{amended.record['modified']}"}
        assert len(rx.requests) == 2  # each event once

        clock.advance(900)  # nothing pending any more: an unchanged repo costs its one request
        hub.reset_stats()
        assert _check(db, hub, opts).status == "unchanged" and len(hub.requests) == 1


def test_a_repair_that_keeps_failing_backs_off_and_is_given_up(
    add_repo: Callable[..., RepoBuilder], db: Store, hub: HubEmulator,
) -> None:
    clock = Clock()
    opts = _options(clock, first_delay_seconds=600, max_delay_seconds=3600, give_up_after_seconds=4 * 3600)
    builder = add_repo(REPO, commits=1)
    sha = _record_unreadable(db, hub, builder, opts, clock)
    recorded = clock.now
    waits = []
    for _ in range(20):
        state = repairs.state(db, REPO, sha)
        assert state is not None
        if state["status"] != "pending":
            break
        waits.append((state["next_attempt_at"] - clock.now).total_seconds())
        clock.now = max(clock.now + timedelta(seconds=60), state["next_attempt_at"])
        assert _check(db, hub, opts).error is None  # a failed repair never fails the check
    state = repairs.state(db, REPO, sha)
    assert state is not None and state["status"] == "given_up" and "404" in state["last_error"]
    assert waits[1:5] == [600, 1200, 2400, 3600]  # doubling, capped
    assert clock.now - recorded >= timedelta(hours=4)
    assert db.get_repo(REPO).repair_due_at is None  # type: ignore[union-attr]
    hub.faults.clear()
    clock.advance(3600)
    hub.reset_stats()
    assert _check(db, hub, opts).repaired == 0 and len(hub.requests) == 1  # given up: never asked again
    assert any("could not be read" in s for s in _summaries(db, sha))
    from fastapi.testclient import TestClient

    from tracker.api.app import create_app

    doc = TestClient(create_app(db, api_settings())).get(f"/api/v1/repos/{REPO}/revisions/{sha}").json()
    assert doc["repair"]["status"] == "given_up" and doc["repair"]["paths"] == ["config.json"]
    assert doc["repair"]["attempts"] == len(waits) and doc["repair"]["next_attempt_at"] is None


def test_the_next_revision_diffed_against_incomplete_data_is_re_diffed(
    add_repo: Callable[..., RepoBuilder], db: Store, hub: HubEmulator,
) -> None:
    clock = Clock()
    opts = _options(clock)
    builder = add_repo(REPO, commits=1)
    sha = _record_unreadable(db, hub, builder, opts, clock)
    hub.faults.clear()
    builder.commit({"config.json": config_bytes(max_position_embeddings=8192)}, title="longer still")
    clock.advance(900)
    # one check: the repair first, then the new revision, diffed against the repaired one
    result = _check(db, hub, opts)
    assert result.repaired == 1 and result.new_revisions == 1
    child = builder.head()
    assert any("512 -> 4096" in s for s in _summaries(db, sha))
    assert any("4096" in s and "8192" in s for s in _summaries(db, child)), _summaries(db, child)
    assert repairs.verify_chain(db, REPO) == []


def test_a_child_recorded_before_the_repair_is_amended_with_it(
    add_repo: Callable[..., RepoBuilder], db: Store, hub: HubEmulator,
) -> None:
    clock = Clock()
    opts = _options(clock, first_delay_seconds=7200)
    builder = add_repo(REPO, commits=1)
    sha = _record_unreadable(db, hub, builder, opts, clock)
    clock.advance(900)
    _check(db, hub, opts)  # the repair's first attempt fails: the next one is two hours away
    hub.faults.clear()
    builder.commit({"config.json": config_bytes(max_position_embeddings=8192)}, title="longer still")
    clock.advance(900)
    assert _check(db, hub, opts).new_revisions == 1  # diffed against the parent with no config read
    child = builder.head()
    wrong = _summaries(db, child)
    assert not any("4096" in s and "8192" in s for s in wrong), wrong
    clock.advance(7200)
    assert _check(db, hub, opts).repaired == 1
    assert any("512 -> 4096" in s for s in _summaries(db, sha))
    assert any("4096" in s and "8192" in s for s in _summaries(db, child)), _summaries(db, child)
    assert repairs.verify_chain(db, REPO) == []
    builder.commit({"README.md": b"# more\n"}, title="readme")
    clock.advance(900)
    assert _check(db, hub, opts).new_revisions == 1
    assert repairs.verify_chain(db, REPO) == []  # a revision recorded after the amendments chains after them


def test_tampering_with_an_amended_revision_shows(
    add_repo: Callable[..., RepoBuilder], db: Store, hub: HubEmulator,
) -> None:
    from sqlalchemy import update

    from storage.tables import RevisionAmendmentRow

    clock = Clock()
    opts = _options(clock)
    builder = add_repo(REPO, commits=1)
    sha = _record_unreadable(db, hub, builder, opts, clock)
    hub.faults.clear()
    clock.advance(900)
    assert _check(db, hub, opts).repaired == 1
    with db.session() as s:
        s.execute(update(RevisionAmendmentRow).values(before={"severity": None, "changes": []}))
        s.commit()
    problems = repairs.verify_chain(db, REPO)
    assert problems and sha[:12] in problems[0]


KILLER = textwrap.dedent("""
    import os, signal, sys
    from dataclasses import replace
    from sqlalchemy import event
    from storage import open_store
    from tracker.cli.context import pipeline_options
    from tracker.config import AdvisorySettings, Settings
    from tracker.hub.hf import HfSource
    from tracker.pipeline import check_repo
    from tracker.snapshot import ReadPolicy

    url, hub, repo, statement = sys.argv[1:5]
    store = open_store(url)

    @event.listens_for(store.engine, "before_cursor_execute")
    def die(_conn, _cursor, sql, *_args):  # SIGKILL, inside the repair's transaction
        if sql.lstrip().upper().startswith(statement):
            os.kill(os.getpid(), signal.SIGKILL)

    opts = replace(pipeline_options(Settings(advisories=AdvisorySettings(osv_api=""))),
                   reads=ReadPolicy(sleep=lambda _s: None))
    check_repo(store, HfSource(repo, endpoint=hub, timeout=5.0), store.get_repo(repo), opts)
    sys.exit(3)  # not killed: the statement never ran
""")


@pytest.mark.parametrize("statement", ["DELETE FROM CHANGES", "UPDATE REVISION_REPAIRS"])
def test_a_kill_mid_repair_leaves_the_revision_as_it_was(
    add_repo: Callable[..., RepoBuilder], db: Store, db_url: str, hub: HubEmulator, statement: str,
) -> None:
    """The repair is one transaction: a process SIGKILLed at its first write (the old changes
    deleted) or its last (the repair marked done) leaves the revision, its advisory and the
    pending repair as they were, the chain intact, and the next poll repairs it."""
    clock = Clock()
    opts = _options(clock)
    builder = add_repo(REPO, commits=1)
    sha = _record_unreadable(db, hub, builder, opts, clock)
    before = _summaries(db, sha)
    [advisory] = db.list_advisories(REPO)
    hub.faults.clear()
    child = subprocess.run([sys.executable, "-c", KILLER, db_url, hub.url, REPO, statement], cwd=REPO_ROOT,
                           env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, capture_output=True, timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()[-2000:]
    after = open_store(db_url)  # what the next start finds
    try:
        assert _summaries(after, sha) == before
        assert after.get_advisory(advisory.id).record == advisory.record  # type: ignore[union-attr]
        assert repairs.state(after, REPO, sha)["status"] == "pending"  # type: ignore[index]
        assert repairs.verify_chain(after, REPO) == []
        clock.now = datetime.now(UTC)
        assert _check(after, hub, opts).repaired == 1
        assert any("512 -> 4096" in s for s in _summaries(after, sha))
        assert repairs.verify_chain(after, REPO) == []
    finally:
        after.close()


def test_a_history_page_kept_before_the_repair_shows_the_amendment(
    add_repo: Callable[..., RepoBuilder], db: Store, hub: HubEmulator,
) -> None:
    """History pages are kept until the repo's history version moves; an amendment moves it."""
    from fastapi.testclient import TestClient

    from tracker.api.app import create_app

    clock = Clock()
    opts = _options(clock)
    builder = add_repo(REPO, commits=1)
    _record_unreadable(db, hub, builder, opts, clock)
    client = TestClient(create_app(db, api_settings()))
    path = f"/api/v1/repos/{REPO}/revisions?limit=1"

    def newest_summaries() -> list[str]:
        r = client.get(path)
        assert r.status_code == 200
        return [c["summary"] for c in r.json()["revisions"][0]["changes"]]

    assert any("could not be read" in s for s in newest_summaries())
    hub.faults.clear()
    clock.advance(900)
    assert _check(db, hub, opts).repaired == 1
    assert any("512 -> 4096" in s for s in newest_summaries())
    sha = client.get(path).json()["revisions"][0]["sha"]
    repair = client.get(f"/api/v1/repos/{REPO}/revisions/{sha}").json()["repair"]
    assert repair["status"] == "repaired" and repair["done_at"] is not None


def test_in_the_daemon_a_repair_costs_requests_only_where_one_is_pending_and_stalls_no_other_repo(
    add_repo: Callable[..., RepoBuilder], db: Store, hub: HubEmulator, daemon: Callable[..., Any],
) -> None:
    """The daemon's cycles: other repos keep their one request per unchanged check while one
    repo's repair is pending, failing (a read that hangs past the deadline) or succeeding."""
    clock = Clock()
    clock.now = datetime.now(UTC)  # the repos were tracked due now
    builder = add_repo(REPO, commits=1)
    others = ["org/a", "org/b"]
    for other in others:
        add_repo(other, commits=1)
    d = daemon(interval_seconds=900, timeout=1.0)
    d.options = replace(d.options, clock=clock, give_up_reads_after=2, reads=ReadPolicy(sleep=lambda _s: None))

    def cycle() -> dict[str, CheckResult]:
        clock.advance(1000)
        hub.reset_stats()
        return {r.repo: r for r in d.run_once(clock.now)}

    assert {r.status for r in cycle().values()} == {"ok"}
    builder.commit({"config.json": config_bytes(max_position_embeddings=4096)}, title="longer context")
    hub.faults.add("status", route="resolve", repo=REPO, status=404, error_code="EntryNotFound")
    assert cycle()[REPO].error_kind == "incomplete"
    assert cycle()[REPO].error_kind == "incomplete"
    assert cycle()[REPO].new_revisions == 1  # recorded with config.json unreadable
    assert db.get_repo("org/a").repair_due_at is None  # type: ignore[union-attr]

    hub.faults.clear()
    hub.faults.add("hang", route="resolve", repo=REPO, seconds=30)  # the repair's read hangs
    results = cycle()
    order = list(results)
    assert results[REPO].status == "unchanged" and results[REPO].repaired == 0 and results[REPO].error is None
    assert order[-1] == REPO  # the others finished first: the hanging repair held none of them
    for other in others:
        assert results[other].status == "unchanged" and hub.count(repo=other) == 1
    assert repairs.state(db, REPO, builder.head())["attempts"] == 1  # type: ignore[index]

    hub.faults.clear()
    results = cycle()
    assert results[REPO].repaired == 1 and hub.count(repo=REPO) == 2  # the head check and config.json
    assert all(hub.count(repo=other) == 1 for other in others)
    assert d.stats.snapshot()["repaired"] == 1
    assert any("512 -> 4096" in s for s in _summaries(db, builder.head()))

    results = cycle()  # nothing pending anywhere: one request per repo
    assert {r.status for r in results.values()} == {"unchanged"} and hub.count() == 3


def test_a_permanent_property_found_by_the_repair_ends_it(
    add_repo: Callable[..., RepoBuilder], db: Store, hub: HubEmulator,
) -> None:
    """Read again, the file is over the size cap (the limit was lowered meanwhile): that is a
    property of its content, recorded as what the revision holds; the repair is done, not retried."""
    clock = Clock()
    opts = _options(clock)
    builder = add_repo(REPO, commits=1)
    sha = _record_unreadable(db, hub, builder, opts, clock)
    hub.faults.clear()
    clock.advance(900)
    hub.reset_stats()
    small = replace(opts, limits=replace(opts.limits, max_file_bytes=16))
    assert _check(db, hub, small).repaired == 1
    assert hub.count("resolve") == 0  # the tree says it is too large: no request
    assert any("over the cap of 16" in s for s in _summaries(db, sha)), _summaries(db, sha)
    assert repairs.state(db, REPO, sha)["status"] == "repaired"  # type: ignore[index]
    assert db.get_repo(REPO).repair_due_at is None  # type: ignore[union-attr]


def test_an_upgraded_database_repairs_revisions_recorded_unreadable_before(
    add_repo: Callable[..., RepoBuilder], db: Store, hub: HubEmulator,
) -> None:
    """Migration 0012 finds revisions an older release recorded with files unreadable (no
    repair was recorded then) and gives each a pending repair."""
    from sqlalchemy import text

    from storage.engine import migrate

    clock = Clock()
    opts = _options(clock)
    builder = add_repo(REPO, commits=1)
    sha = _record_unreadable(db, hub, builder, opts, clock)
    parent = db.get_revision(REPO, sha).parent  # type: ignore[union-attr]
    with db.engine.begin() as c:  # the database as the release before 0010 left it
        c.execute(text("DELETE FROM revision_repairs"))
        c.execute(text("UPDATE repos SET repair_due_at = NULL"))
        c.execute(text("UPDATE alembic_version SET version_num = '0011'"))
    assert repairs.state(db, REPO, sha) is None
    migrate(db.engine)
    found = repairs.state(db, REPO, sha)
    assert found is not None and found["status"] == "pending" and found["paths"] == ["config.json"]
    assert db.get_repo(REPO).repair_due_at is not None  # type: ignore[union-attr]
    [item] = repairs.due(db, REPO, now=datetime.now(UTC), limit=5)
    assert item.base_sha == parent
    hub.faults.clear()
    clock.now = datetime.now(UTC)
    assert _check(db, hub, opts).repaired == 1
    assert any("512 -> 4096" in s for s in _summaries(db, sha))


def test_two_revisions_recorded_unreadable_in_a_row_are_both_repaired_in_order(
    add_repo: Callable[..., RepoBuilder], db: Store, hub: HubEmulator,
) -> None:
    clock = Clock()
    opts = _options(clock)
    builder = add_repo(REPO, commits=1)
    assert _check(db, hub, opts).new_revisions == 1
    first = builder.commit({"config.json": config_bytes(max_position_embeddings=4096)}, title="longer")
    second = builder.commit({"config.json": config_bytes(max_position_embeddings=8192)}, title="longer still")
    hub.faults.add("status", route="resolve", status=404, error_code="EntryNotFound")
    for _ in range(2):
        clock.advance(900)
        assert _check(db, hub, opts).error_kind == "incomplete"
    clock.advance(900)
    assert _check(db, hub, opts).new_revisions == 2
    assert [repairs.state(db, REPO, sha)["status"] for sha in (first, second)] == ["pending"] * 2  # type: ignore[index]
    hub.faults.clear()
    clock.advance(900)
    assert _check(db, hub, opts).repaired == 2
    assert any("512 -> 4096" in s for s in _summaries(db, first)), _summaries(db, first)
    assert any("4096 -> 8192" in s for s in _summaries(db, second)), _summaries(db, second)
    assert repairs.verify_chain(db, REPO) == []


@pytest.mark.parametrize("fault, params", [
    ("short", {"keep": 3}),  # short Range answers: the safetensors header is cut every time
    ("status", {"status": 503}),
    ("reset", {}),
])
def test_a_weights_header_that_kept_failing_is_repaired(
    add_repo: Callable[..., RepoBuilder], db: Store, hub: HubEmulator, fault: str, params: dict[str, Any],
) -> None:
    """Other transient faults, on a safetensors header read by Range: the same repair."""
    from tests.hubemu import safetensors_bytes

    clock = Clock()
    opts = _options(clock)
    builder = add_repo(REPO, commits=1)
    assert _check(db, hub, opts).new_revisions == 1
    sha = builder.commit({"model.safetensors": safetensors_bytes({"w": ("BF16", [4, 4]), "extra": ("F32", [8])})},
                         title="an extra tensor")
    hub.faults.add(fault, route="resolve", **params)
    for _ in range(2):
        clock.advance(900)
        assert _check(db, hub, opts).error_kind == "incomplete"
    clock.advance(900)
    assert _check(db, hub, opts).new_revisions == 1
    assert repairs.state(db, REPO, sha)["paths"] == ["model.safetensors"]  # type: ignore[index]
    assert not any("1 added" in s for s in _summaries(db, sha)), _summaries(db, sha)
    hub.faults.clear()
    clock.advance(900)
    assert _check(db, hub, opts).repaired == 1
    summaries = _summaries(db, sha)
    assert any("tensors changed (1 added)" in s for s in summaries), summaries
    assert not any("not read" in s or "could not be read" in s for s in summaries), summaries


def test_an_advisory_that_only_said_could_not_be_read_is_withdrawn_when_nothing_of_note_is_left(
    add_repo: Callable[..., RepoBuilder], db: Store, hub: HubEmulator,
) -> None:
    """The commit only re-serialised config.json (same JSON): once read, nothing of note is
    left, and the advisory "changed but could not be read" earned is withdrawn, not deleted."""
    import json

    from tests.daemon.helpers import BASE_CONFIG

    clock = Clock()
    opts = _options(clock)
    builder = add_repo(REPO, commits=1)
    assert _check(db, hub, opts).new_revisions == 1
    sha = builder.commit({"config.json": json.dumps(BASE_CONFIG, indent=4).encode()}, title="reformat")
    hub.faults.add("status", route="resolve", status=404, error_code="EntryNotFound")
    for _ in range(2):
        clock.advance(900)
        _check(db, hub, opts)
    clock.advance(900)
    assert _check(db, hub, opts).new_revisions == 1
    [advisory] = db.list_advisories(REPO)
    assert advisory.withdrawn is None
    hub.faults.clear()
    clock.advance(900)
    assert _check(db, hub, opts).repaired == 1
    after = db.get_advisory(advisory.id)
    assert after is not None and after.withdrawn is not None and "no change of note" in after.record["summary"]
    rev = db.get_revision(REPO, sha)
    assert rev is not None and rev.severity is None, rev.changes
    assert_valid(after.record)
