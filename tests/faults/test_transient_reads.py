"""Transient read failures never leave a revision permanently incomplete (issue 10 point 2).

A 404 of a listed file, a short Range answer, a 5xx, a reset: retried within the poll, and the
revision comes out whole. A failure that outlasts the retries leaves the revision pending (the
head does not move past it) and nothing is remembered by content id, so the next poll, or
another repo with the same file, reads it afresh.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from storage import Store
from tests.daemon.helpers import config_bytes
from tests.hubemu import HubEmulator, RepoBuilder
from tracker.cli.context import pipeline_options
from tracker.config import AdvisorySettings, Settings
from tracker.errors import ReadIncomplete
from tracker.hub.hf import HfSource
from tracker.model.keys import content_error_key, header_error_key
from tracker.pipeline import PipelineOptions, check_repo
from tracker.snapshot import ReadPolicy

REPO = "org/flaky"


def _options(slept: list[float]) -> PipelineOptions:
    opts = pipeline_options(Settings(advisories=AdvisorySettings(osv_api="")))
    return replace(opts, reads=ReadPolicy(sleep=slept.append))


def _check(db: Store, hub: HubEmulator, opts: PipelineOptions):  # type: ignore[no-untyped-def]
    repo = db.get_repo(REPO)
    assert repo is not None
    src = HfSource(REPO, endpoint=hub.url, timeout=2.0)
    try:
        return check_repo(db, src, repo, opts)
    finally:
        src.close()


def _summaries(db: Store) -> list[str]:
    out = []
    for rev in db.history(REPO):
        out += [c.summary for c in rev.changes]
    return out


def _assert_whole(db: Store, builder: RepoBuilder) -> None:
    summaries = _summaries(db)
    assert any("max_position_embeddings" in s and "512" in s and "1024" in s for s in summaries), summaries
    assert not any("not read" in s for s in summaries), summaries
    assert all(rev.error is None for rev in db.history(REPO))
    assert db.get_repo(REPO).head_sha == builder.head()  # type: ignore[union-attr]


@pytest.mark.parametrize("fault, params", [
    ("status", {"status": 404, "error_code": "EntryNotFound"}),  # a listed file 404s once
    ("status", {"status": 404}),
    ("short", {"keep": 3}),  # a short Range answer (and a short file body)
    ("status", {"status": 503}),
    ("status", {"status": 502}),
    ("truncate", {"keep": 2}),
    ("reset", {}),
])
def test_a_failure_that_passes_is_retried_within_the_poll(
    add_repo: Callable[..., RepoBuilder], db: Store, hub: HubEmulator, fault: str, params: dict,
) -> None:
    builder = add_repo(REPO, commits=2)
    hub.faults.add(fault, route="resolve", times=1, **params)
    slept: list[float] = []
    result = _check(db, hub, _options(slept))
    assert result.status == "ok" and result.new_revisions == 2
    assert slept == [0.5]  # one retry, after the first backoff step
    _assert_whole(db, builder)


def test_a_tree_listing_that_fails_once_is_retried(
    add_repo: Callable[..., RepoBuilder], db: Store, hub: HubEmulator,
) -> None:
    builder = add_repo(REPO, commits=2)
    hub.faults.add("status", route="tree", times=1, status=500)
    assert _check(db, hub, _options([])).new_revisions == 2
    _assert_whole(db, builder)


def test_a_failure_that_persists_leaves_the_revision_pending(
    add_repo: Callable[..., RepoBuilder], db: Store, hub: HubEmulator,
) -> None:
    builder = add_repo(REPO, commits=3)
    slept: list[float] = []
    opts = _options(slept)
    assert _check(db, hub, opts).new_revisions == 3  # read once: the whole history, correct
    builder.commit({"config.json": config_bytes(max_position_embeddings=4096)}, title="ctx")
    fault = hub.faults.add("status", route="resolve", status=404, error_code="EntryNotFound")
    before = db.get_repo(REPO).head_sha  # type: ignore[union-attr]
    with pytest.raises(ReadIncomplete) as e:
        _check(db, hub, opts)
    assert "after 3 attempts" in str(e.value) and slept == [0.5, 2.0]
    assert db.get_repo(REPO).head_sha == before  # the head did not move past the pending revision
    assert len(db.history(REPO)) == 3  # and it was not stored half-read
    entry = next(f for f in HfSource(REPO, endpoint=hub.url).list_files(builder.head()) if f.path == "config.json")
    assert db.get_blob(content_error_key(entry)) is None  # nothing remembered by content
    hub.faults.remove(fault)
    result = _check(db, hub, opts)  # the next poll completes it
    assert result.status == "ok" and result.new_revisions == 1
    [newest, *_] = db.history(REPO)
    assert any("max_position_embeddings" in c.summary and "4096" in c.summary for c in newest.changes)
    assert newest.error is None and db.get_repo(REPO).head_sha == builder.head()  # type: ignore[union-attr]


def test_a_header_that_keeps_failing_is_not_inherited_by_another_repo(
    add_repo: Callable[..., RepoBuilder], db: Store, hub: HubEmulator,
) -> None:
    add_repo(REPO, commits=1)
    other = add_repo("org/same-weights", commits=1)  # the same safetensors content
    hub.faults.add("short", route="resolve", repo=REPO, keep=3)
    with pytest.raises(ReadIncomplete):
        _check(db, hub, _options([]))
    entry = next(f for f in HfSource("org/same-weights", endpoint=hub.url).list_files(other.head())
                 if f.path == "model.safetensors")
    assert db.get_blob(header_error_key(entry)) is None
    repo = db.get_repo("org/same-weights")
    src = HfSource("org/same-weights", endpoint=hub.url)
    try:
        assert check_repo(db, src, repo, _options([])).new_revisions == 1  # type: ignore[arg-type]
    finally:
        src.close()
    [rev] = db.history("org/same-weights")
    assert rev.error is None and not any("not read" in c.summary for c in rev.changes)


def test_after_several_failed_polls_the_file_is_recorded_unreadable_but_not_remembered(
    add_repo: Callable[..., RepoBuilder], db: Store, hub: HubEmulator,
) -> None:
    builder = add_repo(REPO, commits=1)
    hub.faults.add("status", route="resolve", status=404, error_code="EntryNotFound")
    opts = replace(_options([]), give_up_reads_after=2)
    from datetime import UTC, datetime

    for _ in range(2):
        with pytest.raises(ReadIncomplete) as e:
            _check(db, hub, opts)
        db.record_poll(REPO, now=datetime.now(UTC), error=str(e.value), error_kind=e.value.kind)
    assert _check(db, hub, opts).new_revisions == 1  # a file the source never serves cannot stall the repo
    [rev] = db.history(REPO)
    assert any("not readable from the source after several polls" in c.summary for c in rev.changes)
    assert db.get_repo(REPO).head_sha == builder.head()  # type: ignore[union-attr]
    entries = HfSource(REPO, endpoint=hub.url).list_files(builder.head())
    assert all(db.get_blob(content_error_key(f)) is None and db.get_blob(header_error_key(f)) is None
               for f in entries)
