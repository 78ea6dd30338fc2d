"""The analysis worker is not sent again what it holds (tracker.pipeline.analysis_wire): its
last analyses and the bytes of its last snapshots; what it analyses is the same either way,
and a reference it can no longer resolve gets the job in full."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.extract.snapshots import snapshot_of, st_header
from tracker.model import Artifacts, FileEntry, Snapshot
from tracker.pipeline import analysis_wire
from tracker.pipeline.analysis import Analysis, AnalysisBudget, AnalysisPool, _Job
from tracker.pipeline.analysis_wire import Held, WorkerCache, pack
from tracker.pipeline.plan_step import PlanStep

TEMPLATE = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"


def _revision(sha: str, n: int, template: str) -> Snapshot:
    vocab = {f"t{i}": i for i in range(20_000)}
    files = {"config.json": json.dumps({"model_type": "llama", "n": n}).encode(),
             "tokenizer.json": json.dumps({"model": {"type": "BPE", "vocab": vocab, "merges": []}}).encode(),
             "tokenizer_config.json": json.dumps({"chat_template": template}).encode(),
             "model.safetensors": b"weights"}
    header = st_header({f"layer.{i}.w": ("F16", [8, 8]) for i in range(200)})
    return snapshot_of(files, sha, headers={"model.safetensors": header})


def _job(snap: Snapshot, base: Artifacts | None, base_sha: str | None) -> _Job:
    return _Job(snap, base, base_sha, snap.sha, 32, PlanStep())


def _run(pool: AnalysisPool, snap: Snapshot, base: Artifacts | None, base_sha: str | None) -> Analysis:
    return pool.run(snap, base, base_sha=base_sha, head_sha=snap.sha, max_json_depth=32, plan=PlanStep())


@pytest.fixture
def pool() -> Iterator[AnalysisPool]:
    p = AnalysisPool(AnalysisBudget(seconds=60))
    yield p
    p.close()


INLINE = AnalysisPool(AnalysisBudget(seconds=0))


def test_a_child_revision_is_sent_without_its_parent_and_unchanged_bytes(pool: AnalysisPool) -> None:
    first, second = _revision("a" * 40, 1, TEMPLATE), _revision("b" * 40, 2, TEMPLATE + "{{ eos_token }}")
    parent = _run(pool, first, None, None)
    assert parent == _run(INLINE, first, None, None)
    (worker,) = pool._idle
    # what the next job is sent: a reference for the parent, none of the unchanged bytes
    wire = pack(_job(second, parent.head, "a" * 40), 99, worker.held, worker.produced)
    assert wire.base_token is not None and wire.job.base is None
    assert "tokenizer.json" in wire.contents and "tokenizer.json" not in wire.job.snap.contents
    assert "model.safetensors" in wire.headers and not wire.job.snap.safetensors_headers
    assert "config.json" in wire.job.snap.contents  # changed: sent
    # and what it answers is what the process answers with everything at hand
    assert _run(pool, second, parent.head, "a" * 40) == _run(INLINE, second, parent.head, "a" * 40)


def test_a_reference_the_worker_lost_gets_the_job_in_full(pool: AnalysisPool) -> None:
    first, second = _revision("a" * 40, 1, TEMPLATE), _revision("b" * 40, 2, TEMPLATE + "!")
    parent = _run(pool, first, None, None)
    (worker,) = pool._idle
    # the fault: this side believes the worker holds an analysis and bytes it never had
    worker.held = Held(artifacts=(*worker.held.artifacts, 424242),
                       blobs=worker.held.blobs | {("content", "git:" + "f" * 40)})
    worker.produced = {424242: parent.head}
    lost = Snapshot(sha="c" * 40, files=(FileEntry("config.json", 8, "f" * 40),), contents={"config.json": b"{}"})
    assert _run(pool, lost, parent.head, "a" * 40) == _run(INLINE, lost, parent.head, "a" * 40)
    assert _run(pool, second, parent.head, "a" * 40) == _run(INLINE, second, parent.head, "a" * 40)


def test_the_worker_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(analysis_wire, "MAX_BLOB_BYTES", 1000)
    cache = WorkerCache()
    held = Held()
    for i in range(10):
        snap = snapshot_of({"config.json": json.dumps({"pad": "x" * 300, "i": i}).encode()}, f"{i:040x}")
        head: Any = Artifacts(files=snap.files)
        held = cache.keep(_job(snap, None, None), i, head)
        assert cache.blob_bytes <= 1000 and len(held.artifacts) <= analysis_wire.MAX_ARTIFACTS
    assert held.artifacts == (6, 7, 8, 9) and len(held.blobs) == 3


def test_an_answer_with_the_bases_weights_comes_back_without_them() -> None:
    first, second = _revision("a" * 40, 1, TEMPLATE), _revision("b" * 40, 2, TEMPLATE)
    parent = _run(INLINE, first, None, None)
    child = _run(INLINE, second, parent.head, "a" * 40)
    sent = analysis_wire.compact(child, parent.head)
    assert isinstance(sent, analysis_wire.SameWeights) and not sent.analysis.head.weights.files
    assert analysis_wire.expand(sent, parent.head) == child
    other = snapshot_of({"config.json": b'{"model_type": "llama"}', "model.safetensors": b"other weights"}, "c" * 40,
                        headers={"model.safetensors": st_header({"w": ("F16", [2, 2])})})
    changed = _run(INLINE, other, parent.head, "a" * 40)
    assert analysis_wire.compact(changed, parent.head) is changed  # other tensors: sent whole
