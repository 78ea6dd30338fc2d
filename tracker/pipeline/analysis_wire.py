"""What crosses the pipe to an analysis worker: only what the worker does not hold already.

A new revision's job is its snapshot and its parent's artifacts; the worker analysed that
parent last time (it produced those artifacts) and received most of the snapshot's bytes then
(a tokenizer.json of megabytes that did not change). Pickling both to the worker again was
most of what the daemon's thread spent on a revision's analysis (benchmarks/new_revision.py).
So a worker keeps the artifacts of its last analyses and the bytes of its last snapshots (by
content id: the same id is the same bytes), bounded, and says after each job what it holds;
the daemon then sends a reference for those instead. A reference the worker no longer holds
is answered "missing" and the job is sent again in full: the analysis never depends on what
a cache happens to hold.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tracker.model import Artifacts, Snapshot, WeightManifest

MAX_ARTIFACTS = 4  # analyses a worker keeps (a parent is almost always the last one)
MAX_BLOB_BYTES = 64 * 1024 * 1024  # snapshot bytes a worker keeps, by content id


@dataclass(frozen=True, slots=True)
class Held:
    """What a worker said it holds after its last job: artifact tokens, blob keys."""

    artifacts: tuple[int, ...] = ()
    blobs: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True, slots=True)
class WireJob:
    """A job as sent: ``job`` with its base and some of its bytes left out, and how to find them."""

    job: Any  # the pool's job, its ``base`` None when ``base_token`` names it, its snapshot cut
    token: int  # this job's: the worker keeps its head artifacts under it
    base_token: int | None = None
    contents: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # path -> blob key
    headers: Mapping[str, tuple[str, str]] = field(default_factory=dict)


def _key(kind: str, content_id: str) -> tuple[str, str]:
    return kind, content_id


def pack(job: Any, token: int, held: Held, produced: Mapping[int, Artifacts]) -> WireJob:
    """``job`` without what the worker holds (``produced``: the daemon's side of its tokens)."""
    base_token = None
    if job.base is not None:
        base_token = next((t for t in held.artifacts if produced.get(t) is job.base), None)
    snap: Snapshot = job.snap
    ids = {f.path: f.content_id for f in snap.files}
    contents = {p: _key("content", ids[p]) for p in snap.contents if p in ids and _key("content", ids[p]) in held.blobs}
    headers = {p: _key("header", ids[p]) for p in snap.safetensors_headers
               if p in ids and _key("header", ids[p]) in held.blobs}
    if base_token is None and not contents and not headers:
        return WireJob(job, token)
    cut = replace(snap, contents={p: b for p, b in snap.contents.items() if p not in contents},
                  safetensors_headers={p: b for p, b in snap.safetensors_headers.items() if p not in headers})
    return WireJob(replace(job, snap=cut, base=None if base_token is not None else job.base), token, base_token,
                   contents, headers)


class WorkerCache:
    """The worker's side: the artifacts and snapshot bytes of its last jobs."""

    def __init__(self) -> None:
        self.artifacts: OrderedDict[int, Artifacts] = OrderedDict()
        self.blobs: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self.blob_bytes = 0

    def unpack(self, wire: WireJob) -> Any | None:
        """The whole job; None when something it refers to is no longer held."""
        job = wire.job
        base = job.base
        if wire.base_token is not None:
            base = self.artifacts.get(wire.base_token)
            if base is None:
                return None
            self.artifacts.move_to_end(wire.base_token)
        contents, headers = dict(job.snap.contents), dict(job.snap.safetensors_headers)
        for into, refs in ((contents, wire.contents), (headers, wire.headers)):
            for path, key in refs.items():
                data = self.blobs.get(key)
                if data is None:
                    return None
                self.blobs.move_to_end(key)
                into[path] = data
        if wire.base_token is None and not wire.contents and not wire.headers:
            return job
        return replace(job, base=base, snap=replace(job.snap, contents=contents, safetensors_headers=headers))

    def keep(self, job: Any, token: int, head: Artifacts) -> Held:
        """Remember what this job brought and produced; what is held now."""
        self.artifacts[token] = head
        self.artifacts.move_to_end(token)
        while len(self.artifacts) > MAX_ARTIFACTS:
            self.artifacts.popitem(last=False)
        ids = {f.path: f.content_id for f in job.snap.files}
        for kind, items in (("content", job.snap.contents), ("header", job.snap.safetensors_headers)):
            for path, data in items.items():
                if path not in ids or len(data) > MAX_BLOB_BYTES // 2:
                    continue
                key = _key(kind, ids[path])
                if key not in self.blobs:
                    self.blobs[key] = data
                    self.blob_bytes += len(data)
                self.blobs.move_to_end(key)
        while self.blob_bytes > MAX_BLOB_BYTES:
            _, dropped = self.blobs.popitem(last=False)
            self.blob_bytes -= len(dropped)
        return Held(tuple(self.artifacts), frozenset(self.blobs))


@dataclass(frozen=True, slots=True)
class SameWeights:
    """An answer whose head has its base's weight manifest (a revision that did not touch the
    weights: the common case), sent without it; the daemon puts the base's back."""

    analysis: Any


def compact(found: Any, base: Artifacts | None) -> Any:
    """The worker's answer, the head's manifest left out when it equals the base's (thousands of
    tensors pickled back and read again for nothing)."""
    if base is None or not base.weights.files or found.head.weights != base.weights:
        return found
    return SameWeights(replace(found, head=replace(found.head, weights=WeightManifest())))


def expand(answer: Any, base: Artifacts | None) -> Any:
    """The answer as the worker made it (``base``: what the job was sent with, on this side)."""
    if isinstance(answer, SameWeights):
        assert base is not None
        return replace(answer.analysis, head=replace(answer.analysis.head, weights=base.weights))
    return answer
