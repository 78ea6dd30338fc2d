"""Hub faults on the wire (issue 10): the real client, a fault proxy, the emulator behind it.

The proxy breaks answers as a network or an overloaded Hub does (resets in the middle of a
body, short and truncated bodies, a 404 once, trickles, hangs, 503 storms with Retry-After);
each scenario must end with the history whole, no revision marked incomplete, and no error
remembered by content id: nothing lost, no permanent record of a transient failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from storage import Store
from tests.faults.proxy import HttpFaultProxy
from tests.hubemu import HubEmulator, RepoBuilder
from tracker.cli.context import pipeline_options
from tracker.config import AdvisorySettings, Settings
from tracker.errors import ReadIncomplete, SourceError, SourceUnavailable
from tracker.hub.hf import HfSource
from tracker.model.keys import content_error_key, digest_error_key, header_error_key
from tracker.pipeline import CheckResult, check_repo
from tracker.snapshot import ReadPolicy

REPO = "org/wire"
CONFIG = r"/resolve/[0-9a-f]{40}/config\.json$"
WEIGHTS = r"/resolve/[0-9a-f]{40}/model\.safetensors$"


@pytest.fixture
def proxy(hub: HubEmulator) -> Iterator[HttpFaultProxy]:
    with HttpFaultProxy(hub.url) as p:
        yield p


def _check(db: Store, proxy: HttpFaultProxy, slept: list[float] | None = None, timeout: float = 3.0) -> CheckResult:
    opts = pipeline_options(Settings(advisories=AdvisorySettings(osv_api="")))
    opts = replace(opts, reads=ReadPolicy(sleep=(slept.append if slept is not None else time.sleep)))
    repo = db.get_repo(REPO)
    assert repo is not None
    src = HfSource(REPO, endpoint=proxy.url, timeout=timeout)
    try:
        return check_repo(db, src, repo, opts)
    finally:
        src.close()


def _assert_nothing_lost(db: Store, hub: HubEmulator, builder: RepoBuilder, commits: int) -> None:
    history = db.history(REPO)
    assert sorted(r.sha for r in history) == sorted(_shas(builder)), "a revision is missing"
    assert len(history) == commits and db.get_repo(REPO).head_sha == builder.head()  # type: ignore[union-attr]
    summaries = [c.summary for rev in history for c in rev.changes]
    assert not any("not read" in s or "could not be read" in s for s in summaries), summaries
    assert all(rev.error is None for rev in history), [rev.error for rev in history]
    for i in range(1, commits):  # every context change is there, with its values
        assert any("max_position_embeddings" in s and str(512 * (i + 1)) in s for s in summaries), (i, summaries)
    for sha in [rev.sha for rev in history]:
        for entry in HfSource(REPO, endpoint=hub.url).list_files(sha):
            for key in (content_error_key(entry), header_error_key(entry), digest_error_key(entry)):
                assert db.get_blob(key) is None, (sha, entry.path)  # no failure remembered by content


def _shas(builder: RepoBuilder) -> list[str]:
    import subprocess

    out = subprocess.run(["git", "-C", str(builder.path), "rev-list", "main"], capture_output=True, text=True, check=True)
    return out.stdout.split()


SCENARIOS: dict[str, Callable[[HttpFaultProxy], Any]] = {
    "404 once for a listed file": lambda p: p.add(
        "status", path=CONFIG, status=404, headers={"X-Error-Code": "EntryNotFound"}, times=1),
    "reset in the middle of a safetensors header's Range read": lambda p: p.add(
        "reset", path=WEIGHTS, range=True, after=5, times=1),
    "reset before the answer": lambda p: p.add("reset", path=CONFIG, times=1),
    "a short Range answer": lambda p: p.add("short", path=WEIGHTS, range=True, keep=3, times=1),
    "a short body": lambda p: p.add("short", path=CONFIG, keep=7, times=1),
    "a truncated body (full Content-Length)": lambda p: p.add("truncate", path=CONFIG, keep=10, times=1),
    "a 502 from a proxy in between": lambda p: p.add("status", path=CONFIG, status=502, times=1),
    "a trickle past the deadline": lambda p: p.add("trickle", path=CONFIG, every=0.4, times=1),
    "a hang": lambda p: p.add("hang", path=WEIGHTS, times=1, seconds=30),
    "the second Range read of a header reset": lambda p: p.add(
        "reset", path=WEIGHTS, range=True, skip=1, after=2, times=1),
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_wire_fault_that_passes_is_retried_within_the_poll(
    add_repo: Callable[..., RepoBuilder], db: Store, hub: HubEmulator, proxy: HttpFaultProxy, scenario: str,
) -> None:
    builder = add_repo(REPO, commits=3)
    rule = SCENARIOS[scenario](proxy)
    slept: list[float] = []
    result = _check(db, proxy, slept)
    assert rule.hits == 1, f"the fault never fired: {[(p.method, p.target) for p in proxy.passed]}"
    assert result.status == "ok" and result.new_revisions == 3
    assert slept == [0.5]  # one retry, after the first backoff step
    _assert_nothing_lost(db, hub, builder, 3)


def test_a_503_storm_with_retry_after_leaves_the_revision_pending_then_whole(
    add_repo: Callable[..., RepoBuilder], db: Store, hub: HubEmulator, proxy: HttpFaultProxy,
) -> None:
    """Every file read answers 503 (Retry-After: 1) for three seconds: more than the poll's
    retries span. The revision is not stored half-read; the next poll, after the storm, reads
    it whole."""
    builder = add_repo(REPO, commits=2)
    storm = proxy.add("status", path=r"/resolve/", status=503, headers={"Retry-After": "1"}, window=3.0)
    with pytest.raises(ReadIncomplete):
        _check(db, proxy, [])  # no real sleeping: the three attempts fall inside the storm
    assert storm.hits >= 3 and db.history(REPO) == [] and db.get_repo(REPO).head_sha is None  # type: ignore[union-attr]
    time.sleep(max(0.0, 3.1 - (time.monotonic() - storm.added)))
    result = _check(db, proxy, [])
    assert result.status == "ok" and result.new_revisions == 2
    _assert_nothing_lost(db, hub, builder, 2)


def test_a_storm_on_every_route_fails_the_poll_and_the_next_one_completes(
    add_repo: Callable[..., RepoBuilder], db: Store, hub: HubEmulator, proxy: HttpFaultProxy,
) -> None:
    """503 on every request (the head check included) for two seconds, then resets for the
    listing of commits once: each poll either records nothing or records whole revisions."""
    builder = add_repo(REPO, commits=3)
    proxy.add("status", status=503, headers={"Retry-After": "1"}, window=2.0)
    proxy.add("reset", path=r"/commits/", times=1, after=30)
    outcomes: list[str] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            result = _check(db, proxy, [])
        except SourceError as e:
            outcomes.append(type(e).__name__)
            assert all(rev.error is None for rev in db.history(REPO))
            time.sleep(0.5)
            continue
        outcomes.append(result.status)
        if result.status == "ok":
            break
    assert outcomes[-1] == "ok" and len(outcomes) >= 2, outcomes
    _assert_nothing_lost(db, hub, builder, 3)


@pytest.mark.parametrize("fault", ["trickle", "hang"])
def test_a_slow_wire_cannot_stretch_a_hub_call_past_its_deadline(
    add_repo: Callable[..., RepoBuilder], hub: HubEmulator, proxy: HttpFaultProxy, fault: str,
) -> None:
    head = add_repo(REPO, commits=1, track=False).head()
    proxy.add(fault, path=r"/tree/", every=0.3, seconds=60)
    src = HfSource(REPO, endpoint=proxy.url, timeout=1.0)
    try:
        started = time.monotonic()
        with pytest.raises(SourceUnavailable, match=r"timed out|within"):
            src.list_files(head)
        assert time.monotonic() - started < 2.5
    finally:
        src.close()
