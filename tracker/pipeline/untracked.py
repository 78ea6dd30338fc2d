"""Stage 1-5 for one revision of a repo nobody tracks: just what its plan needs, in a few requests.

``hubwatch plan ORG/NAME[@REV]`` on an untracked repo reads, and stores nothing: the
revision's sha (one request, none when REV is a full sha), its file tree (one), config.json
(one), the top-level sharding index when there is one (one) and, for the checkpoint's own
count, the safetensors headers of the shards the loader reads (two exact range reads each,
never a tensor byte). No history, no tokenizer, no templates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tracker.extract import extract_artifacts
from tracker.hub.interface import HubSource
from tracker.model import Artifacts, Snapshot
from tracker.snapshot import read_safetensors_header

FULL_SHA = re.compile(r"^[0-9a-f]{40}$")
MAX_CONFIG_BYTES = 1_000_000
MAX_INDEX_BYTES = 20_000_000
MAX_HEADER_BYTES = 100_000_000


@dataclass(frozen=True, slots=True)
class PlanInputs:
    """What the planner needs of one revision: its sha and parsed artifacts (config and weights)."""

    sha: str
    artifacts: Artifacts
    requests: int


def read_plan_inputs(source: HubSource, revision: str | None, *, branch: str = "main",
                     max_header_bytes: int = MAX_HEADER_BYTES) -> PlanInputs:
    """config.json and the top-level safetensors headers of ``revision`` (default: the branch head)."""
    requests = 0
    if revision is not None and FULL_SHA.match(revision.lower()):
        sha = revision.lower()
    else:
        sha = source.resolve_head(revision or branch)
        requests += 1
    files = source.list_files(sha)
    requests += 1
    paths = {f.path for f in files}
    contents: dict[str, bytes] = {}
    if "config.json" in paths:
        contents["config.json"] = source.read_file(sha, "config.json", max_bytes=MAX_CONFIG_BYTES)
        requests += 1
    index = "model.safetensors.index.json"
    if index in paths:
        contents[index] = source.read_file(sha, index, max_bytes=MAX_INDEX_BYTES)
        requests += 1
    wanted = [f for f in files if f.path.endswith(".safetensors") and "/" not in f.path]
    if index in contents:
        listed = _shards(contents[index])
        wanted = [f for f in wanted if f.path in listed]
    headers = {}
    for entry in wanted:
        headers[entry.path] = read_safetensors_header(source, sha, entry, max_header_bytes)
        requests += 2
    snapshot = Snapshot(sha=sha, files=files, contents=contents, safetensors_headers=headers)
    return PlanInputs(sha, extract_artifacts(snapshot), requests)


def _shards(index: bytes) -> set[str]:
    import json

    try:
        doc = json.loads(index)
    except ValueError:
        return set()
    weight_map = doc.get("weight_map") if isinstance(doc, dict) else None
    return {v for v in weight_map.values() if isinstance(v, str)} if isinstance(weight_map, dict) else set()
