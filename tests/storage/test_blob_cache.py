"""Blobs this process read or wrote are kept (storage.blob_cache): an unchanged file's bytes
are neither read from the database nor written to it again by the next revision."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import event

from storage import open_store
from storage.blob_cache import BlobCache
from storage.records import NewRevision

BIG = b"x" * 300_000  # a tokenizer.json, say


def _rev(sha: str, parent: str | None, blobs: dict[str, bytes]) -> NewRevision:
    return NewRevision(repo_id="org/model", sha=sha, parent=parent, parents=(parent,) if parent else (),
                       committed_at=datetime(2024, 1, 1, tzinfo=UTC), title="t", message="", authors=(),
                       changes=(), severity=None, tree=b"tree " + sha.encode(), blobs=blobs, new_head=sha)


@contextmanager
def _statements(store: Any) -> Iterator[list[tuple[str, Any]]]:
    seen: list[tuple[str, Any]] = []

    def record(_c: Any, _cur: Any, statement: str, parameters: Any, *_: Any) -> None:
        seen.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(store.engine, "before_cursor_execute", record)


def test_unchanged_blobs_are_not_read_or_written_again(store) -> None:  # type: ignore[no-untyped-def]
    store.add_repo("org/model", source="org/model", source_kind="hub")
    assert store.record_revision(_rev("1" * 40, None, {"git:big": BIG, "git:cfg": b"{}"}))
    with _statements(store) as seen:
        assert store.get_blobs(["git:big", "git:cfg"]) == {"git:big": BIG, "git:cfg": b"{}"}
        assert store.record_revision(_rev("2" * 40, "1" * 40, {"git:big": BIG, "git:new": b"[]"}))
    assert not any("FROM blobs" in sql for sql, _ in seen)  # answered from memory
    sent = [p for sql, p in seen if sql.startswith("INSERT INTO blobs")]
    assert sent and not any(BIG in (p if isinstance(p, (list, tuple)) else list(p.values())) for p in sent)
    # another process (here: another Store) reads them from the database
    other = open_store(str(store.engine.url))
    try:
        assert other.get_blobs(["git:big", "git:new", "git:none"]) == {"git:big": BIG, "git:new": b"[]"}
    finally:
        other.close()


def test_a_revision_not_written_keeps_nothing(store) -> None:  # type: ignore[no-untyped-def]
    store.add_repo("org/model", source="org/model", source_kind="hub")
    assert store.record_revision(_rev("1" * 40, None, {}))
    assert not store.record_revision(_rev("1" * 40, None, {"git:late": b"1"}))  # stored already: no write
    assert not store.blob_cache.holds("git:late") and store.get_blob("git:late") is None


def test_the_cache_is_bounded() -> None:
    cache = BlobCache(max_bytes=1000, max_one=400)
    cache.put_many({f"k{i}": b"x" * 300 for i in range(10)} | {"huge": b"y" * 500})
    assert not cache.holds("huge") and sum(cache.holds(f"k{i}") for i in range(10)) == 3
    assert cache.get_many(["k9", "k0"]) == {"k9": b"x" * 300}
