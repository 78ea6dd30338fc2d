"""A new revision reads what it must once: its parent from memory, its known blobs in one query.

The cost of reading one new commit was mostly work redone (issue 17, benchmarks/new_revision.py):
the parent revision extracted again from the store, tokenizer.json parsed again although its
content id had not changed, and the store asked once per file for bytes it already held. These
tests hold the cuts and that they change nothing in what is recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storage import Store, open_store
from tests.daemon.helpers import config_bytes
from tests.hubemu import HubEmulator, RepoBuilder, safetensors_bytes
from tracker.hub.hf import HfSource
from tracker.model import Artifacts
from tracker.pipeline import check_repo
from tracker.pipeline.check import RECENT, RecentArtifacts, _ArtifactCache

REPO = "org/moving"
TOKENIZER = json.dumps({"model": {"type": "BPE", "vocab": {f"t{i}": i for i in range(500)}, "merges": ["t1 t2"]},
                        "added_tokens": [{"id": 0, "content": "<s>", "special": True}]}).encode()


@pytest.fixture
def hub() -> Iterator[HubEmulator]:
    with HubEmulator() as h:
        yield h


def _repo(path: Path) -> RepoBuilder:
    b = RepoBuilder.init(path)
    b.commit({"config.json": config_bytes(), "tokenizer.json": TOKENIZER, "README.md": b"# r\n",
              "model.safetensors": safetensors_bytes({"w": ("BF16", [4, 4])})}, title="init")
    return b


def _check(store: Store, hub: HubEmulator) -> None:
    record = store.get_repo(REPO)
    assert record is not None
    with HfSource(REPO, endpoint=hub.url, timeout=10) as src:
        assert check_repo(store, src, record).status == "ok"


def _changes(store: Store) -> list[list[tuple[str, str, str | None]]]:
    return [[(c.path, c.summary, c.severity.value if c.severity else None) for c in rev.changes]
            for rev in store.history(REPO)]


def _counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[Any]:
    calls: list[Any] = []
    real = getattr(Store, name)

    def counted(self: Store, *args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Store, name, counted)
    return calls


def _track_then_move(tmp_path: Path, hub: HubEmulator, label: str) -> tuple[Store, RepoBuilder]:
    builder = _repo(tmp_path / f"{label}.git")
    hub.add_repo(REPO, builder.path)
    store = open_store(f"sqlite:///{tmp_path / f'{label}.db'}")
    store.add_repo(REPO, source=REPO, source_kind="hub", backfill="all")
    _check(store, hub)
    builder.commit({"config.json": config_bytes(max_position_embeddings=4096)}, title="longer context")
    return store, builder


def test_the_parent_comes_from_memory_and_the_record_is_the_same(tmp_path: Path, hub: HubEmulator,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    warm, _ = _track_then_move(tmp_path, hub, "warm")
    cold, _ = _track_then_move(tmp_path, hub, "cold")
    rebuilt = _counting(monkeypatch, "snapshot")
    _check(warm, hub)
    assert rebuilt == []  # the parent was analysed by this process: not rebuilt from the store
    RECENT.clear()  # a restarted daemon: the parent is rebuilt from the store
    _check(cold, hub)
    assert len(rebuilt) == 1
    assert _changes(warm) == _changes(cold)
    assert any("max_position_embeddings" in s for rev in _changes(warm) for _, s, _ in rev)
    warm.close()
    cold.close()


def test_known_blobs_are_asked_for_in_one_query(tmp_path: Path, hub: HubEmulator,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    store, _ = _track_then_move(tmp_path, hub, "batched")
    one_by_one, batched = _counting(monkeypatch, "get_blob"), _counting(monkeypatch, "get_blobs")
    hub.reset_stats()
    _check(store, hub)
    assert one_by_one == []
    assert len(batched) == 1
    asked = set(batched[0][0])
    assert {k for k in asked if k.startswith("git:")} >= {"git:" + e for e in _blob_ids(store)}
    # the unchanged tokenizer.json and weights header came from the store, not the Hub
    assert [r.path.split("/")[-1] for r in hub.requests if r.route == "resolve"] == ["config.json"]
    store.close()


def _blob_ids(store: Store) -> list[str]:
    last = store.history(REPO)[0]
    snap = store.snapshot(REPO, last.sha)
    assert snap is not None
    return [f.blob_id for f in snap.files if f.path in ("tokenizer.json", "config.json")]


def test_a_cut_analysis_is_kept_for_its_own_check_only(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'cut.db'}")
    recent = RecentArtifacts(max_items=2)
    cache = _ArtifactCache(store, 32, recent)
    empty = Artifacts()
    cache.put(REPO, "a" * 40, empty, complete=False)
    assert cache.get(REPO, "a" * 40) is empty
    assert _ArtifactCache(store, 32, recent).get(REPO, "a" * 40) is None  # not stored, not shared
    full = Artifacts(config={"x": 1})
    cache.put(REPO, "b" * 40, full, complete=True)
    assert _ArtifactCache(store, 32, recent).get(REPO, "b" * 40) is full
    for sha in ("c" * 40, "d" * 40):  # bounded: the least recently used goes first
        cache.put(REPO, sha, full, complete=True)
    assert _ArtifactCache(store, 32, recent).get(REPO, "b" * 40) is None
    store.close()
