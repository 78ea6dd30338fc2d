"""What crosses to the analysis worker and back pickles to equal values (the model's values
pickle as constructor calls of their fields: tracker.model.core)."""

from __future__ import annotations

import pickle

import pytest

from tests.extract.snapshots import load_pair, pair_names, snapshot_of, st_header
from tracker.diff import diff_artifacts
from tracker.extract import extract_artifacts
from tracker.model import CommitInfo, FileEntry, TensorInfo


@pytest.mark.parametrize("name", pair_names()[:12])
def test_artifacts_and_diffs_round_trip(name: str) -> None:
    before, after = load_pair(name)
    headers = {"model.safetensors": st_header({"w": ("F16", [4, 4]), "b": ("F32", [4])})}
    old = extract_artifacts(snapshot_of({**before, "model.safetensors": b"w"}, headers=headers))
    new = extract_artifacts(snapshot_of({**after, "model.safetensors": b"w"}, "1" * 40, headers=headers))
    diff = diff_artifacts(old, new, base_sha="0" * 40, head_sha="1" * 40)
    for value in (old, new, diff, snapshot_of(after)):
        assert pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)) == value


def test_defaults_and_types_survive() -> None:
    from datetime import UTC, datetime

    values = [FileEntry("a", 1, "b" * 40), FileEntry("a", 1, "b" * 40, "c" * 64), TensorInfo("t", "F16", (2, 3)),
              CommitInfo("d" * 40, ("e" * 40,), datetime(2024, 1, 1, tzinfo=UTC), "title")]
    for value in values:
        back = pickle.loads(pickle.dumps(value))
        assert back == value and type(back) is type(value) and hash(back) == hash(value)
