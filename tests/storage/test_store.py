"""The store on SQLite and PostgreSQL: repos, revisions in one transaction, idempotency."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from storage.records import NewRevision
from storage.tables import RevisionRow
from tracker.model import Change, ChangeKind, Severity

SHA1 = "1" * 40
SHA2 = "2" * 40


def _rev(sha: str, parent: str | None, **kw) -> NewRevision:  # type: ignore[no-untyped-def]
    base = dict(
        repo_id="org/model", sha=sha, parent=parent, parents=(parent,) if parent else (),
        committed_at=datetime(2024, 1, 1, tzinfo=UTC), title=f"commit {sha[:4]}", message="", authors=("alice",),
        changes=(Change(ChangeKind.CONFIG, "config.json", "eos 2 -> 3", ("config.special_ids",), Severity.MODERATE,
                        {"fields": [{"path": "eos_token_id", "old": 2, "new": 3}]}),),
        severity="MODERATE", tree=b"tree-bytes-" + sha.encode(), blobs={"git:abc": b"{}"}, new_head=sha,
    )
    base.update(kw)
    return NewRevision(**base)  # type: ignore[arg-type]


def test_repo_lifecycle(store) -> None:  # type: ignore[no-untyped-def]
    rec, created = store.add_repo("org/model", source="org/model", source_kind="hub")
    assert created and rec.active and rec.head_sha is None
    _, again = store.add_repo("org/model", source="org/model", source_kind="hub")
    assert not again
    assert [r.id for r in store.list_repos()] == ["org/model"]
    assert store.untrack("org/model")
    assert store.list_repos() == []
    assert store.get_repo("org/model") is not None  # history is kept
    assert [r.id for r in store.list_repos(include_inactive=True)] == ["org/model"]


def test_record_revision_is_idempotent_and_atomic(store) -> None:  # type: ignore[no-untyped-def]
    store.add_repo("org/model", source="org/model", source_kind="hub")
    assert store.record_revision(_rev(SHA1, None))
    assert not store.record_revision(_rev(SHA1, None))  # a retry records nothing twice
    assert store.record_revision(_rev(SHA2, SHA1))
    hist = store.history("org/model")
    assert [r.sha for r in hist] == [SHA2, SHA1]
    assert hist[0].changes[0].severity is Severity.MODERATE
    assert hist[0].changes[0].detail == {"fields": [{"path": "eos_token_id", "old": 2, "new": 3}]}
    assert hist[0].chain_hash != hist[1].chain_hash
    assert store.get_repo("org/model").head_sha == SHA2
    assert store.get_blob("git:abc") == b"{}"
    assert store.get_revision("org/model", SHA2[:7]).sha == SHA2
    assert store.get_revision("org/model", "22") is None  # too short to be a prefix


def test_unique_repo_sha_backs_idempotency(store) -> None:  # type: ignore[no-untyped-def]
    import pytest
    from sqlalchemy.exc import IntegrityError

    store.add_repo("org/model", source="org/model", source_kind="hub")
    store.record_revision(_rev(SHA1, None))
    with store.session() as s, pytest.raises(IntegrityError):
        s.add(RevisionRow(repo_id="org/model", sha=SHA1, seq=99, committed_at=datetime.now(UTC), title="x",
                          chain_hash="x", recorded_at=datetime.now(UTC)))
        s.commit()


def test_failed_transaction_writes_nothing(store) -> None:  # type: ignore[no-untyped-def]
    import pytest

    store.add_repo("org/model", source="org/model", source_kind="hub")
    bad = _rev(SHA1, None, advisory={"id": "x_HUBWATCH-aaaa-bbbb-cccc"})  # no "modified": fails mid-write
    with pytest.raises(KeyError):
        store.record_revision(bad)
    assert store.history("org/model") == []
    assert store.get_blob("git:abc") is None
    assert store.get_repo("org/model").head_sha is None


def test_history_cursor_is_stable_under_new_arrivals(store) -> None:  # type: ignore[no-untyped-def]
    store.add_repo("org/model", source="org/model", source_kind="hub")
    shas = [f"{i:040x}" for i in range(1, 8)]
    parent = None
    for sha in shas[:5]:
        store.record_revision(_rev(sha, parent))
        parent = sha
    page1 = store.history("org/model", limit=2)
    for sha in shas[5:]:
        store.record_revision(_rev(sha, parent))
        parent = sha
    page2 = store.history("org/model", limit=2, before_seq=page1[-1].seq)
    page3 = store.history("org/model", limit=2, before_seq=page2[-1].seq)
    assert [r.sha for r in page1 + page2 + page3] == list(reversed(shas[:5]))


def test_claims_and_leases(store) -> None:  # type: ignore[no-untyped-def]
    now = datetime(2026, 1, 1, tzinfo=UTC)
    for i in range(3):
        store.add_repo(f"org/m{i}", source=f"org/m{i}", source_kind="hub", now=now)
    a = store.claim_due("daemon-a", now=now, limit=2, lease_seconds=60)
    b = store.claim_due("daemon-b", now=now, limit=5, lease_seconds=60)
    assert len(a) == 2 and len(b) == 1
    assert {r.id for r in a}.isdisjoint({r.id for r in b})
    assert store.claim_due("daemon-c", now=now, limit=5, lease_seconds=60) == []
    later = now + timedelta(seconds=61)  # daemon-a died: its leases expire and are taken over
    c = store.claim_due("daemon-c", now=later, limit=5, lease_seconds=60)
    assert {r.id for r in c} == {r.id for r in a} | {r.id for r in b}


def test_mark_due_and_unreachable(store) -> None:  # type: ignore[no-untyped-def]
    now = datetime(2026, 1, 1, tzinfo=UTC)
    store.add_repo("org/model", source="org/model", source_kind="hub", now=now)
    store.record_poll("org/model", now=now, next_check_at=now + timedelta(hours=1))
    assert store.claim_due("d", now=now, limit=5, lease_seconds=60) == []
    assert store.mark_due("org/model", now)
    assert [r.id for r in store.claim_due("d", now=now, limit=5, lease_seconds=60)] == ["org/model"]
    store.record_revision(_rev(SHA1, None))
    store.mark_unreachable("org/model", [SHA1], head=SHA2)
    assert store.history("org/model")[0].reachable is False
    assert store.reachable_shas("org/model") == set()


def test_concurrent_claims_never_share_a_repo(store) -> None:  # type: ignore[no-untyped-def]
    from concurrent.futures import ThreadPoolExecutor

    now = datetime(2026, 1, 1, tzinfo=UTC)
    for i in range(20):
        store.add_repo(f"org/m{i}", source=f"org/m{i}", source_kind="hub", now=now)
    with ThreadPoolExecutor(4) as pool:
        claims = list(pool.map(lambda k: store.claim_due(f"d{k}", now=now, limit=20, lease_seconds=60), range(4)))
    claimed = [r.id for c in claims for r in c]
    assert len(claimed) == len(set(claimed)) == 20


def test_the_same_blob_written_twice_at_once_fails_nobody(store) -> None:  # type: ignore[no-untyped-def]
    from concurrent.futures import ThreadPoolExecutor

    for i in range(8):
        store.add_repo(f"org/m{i}", source=f"org/m{i}", source_kind="hub")
    shared = {"git:readme": b"# same readme everywhere"}
    revs = [_rev(f"{i + 1:040x}", None, repo_id=f"org/m{i}", blobs=shared) for i in range(8)]
    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(store.record_revision, revs))
    assert store.get_blob("git:readme") == b"# same readme everywhere"


def test_a_revision_with_files_unreadable_for_now_gets_a_pending_repair(store) -> None:  # type: ignore[no-untyped-def]
    """Hostile file names too (not UTF-8: a lone surrogate): the repair names them cleaned,
    so the revision is recorded and the repo's head moves (issue 16, point 3; issue 10)."""
    from storage import repairs

    store.add_repo("org/model", source="org/model", source_kind="hub")
    assert store.record_revision(_rev(SHA1, None))
    assert store.get_repo("org/model").repair_due_at is None
    assert store.record_revision(_rev(SHA2, SHA1, unreadable=("config.json", "x\udcff/config.json"), base_sha=SHA1))
    state = repairs.state(store, "org/model", SHA2)
    assert state is not None and state["status"] == "pending" and state["paths"] == ["config.json", "x\\xff/config.json"]
    assert store.get_repo("org/model").repair_due_at is not None and store.get_repo("org/model").head_sha == SHA2
    [item] = repairs.due(store, "org/model", now=state["next_attempt_at"], limit=5)
    assert item.base_sha == SHA1 and item.sha == SHA2
