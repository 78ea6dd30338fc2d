"""A revision recorded with files unreadable for now is repaired by a later poll (issue 10: a
transient failure never leaves a revision permanently incomplete).

The emulator serves a real git history; its fault injection makes config.json 404 for
several polls, so the revision is recorded with it unreadable. Once the fault clears, the
repo's next check reads the file again, amends the revision (its changes, its advisory with
``modified`` bumped, the outbox), and appends the amendment to the hash chain. A repo with
nothing pending still costs its one request. On SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from advisories.webhooks import new_secret
from storage import Store, open_store, repairs
from storage import subscriptions as subs
from tests.api.data import settings as api_settings
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


@pytest.mark.parametrize("kill_at", ["advisory", "amendment"])
def test_a_kill_mid_repair_leaves_the_revision_as_it_was(
    add_repo: Callable[..., RepoBuilder], db: Store, hub: HubEmulator, monkeypatch: pytest.MonkeyPatch,
    kill_at: str,
) -> None:
    """The repair is one transaction: a crash inside it (simulated where it writes the advisory
    edit, or the chain entry) leaves the revision, its advisory and the pending repair as they
    were, and the next poll repairs it."""
    from storage import store as store_module

    clock = Clock()
    opts = _options(clock)
    builder = add_repo(REPO, commits=1)
    sha = _record_unreadable(db, hub, builder, opts, clock)
    before = _summaries(db, sha)
    [advisory] = db.list_advisories(REPO)
    hub.faults.clear()

    class Killed(BaseException):
        pass

    def die(*_a: object, **_k: object) -> None:
        raise Killed

    target = (store_module.Store, "_edit_advisory") if kill_at == "advisory" else (repairs, "amendment_hash")
    with monkeypatch.context() as m:
        m.setattr(*target, die)
        clock.advance(900)
        with pytest.raises(Killed):
            _check(db, hub, opts)
    assert _summaries(db, sha) == before
    assert db.get_advisory(advisory.id).record == advisory.record  # type: ignore[union-attr]
    assert repairs.state(db, REPO, sha)["status"] == "pending"  # type: ignore[index]
    assert repairs.verify_chain(db, REPO) == []
    assert _check(db, hub, opts).repaired == 1
    assert any("4096" in s for s in _summaries(db, sha))


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
