"""Weight manifests: tensors from safetensors headers, dtype totals, sharding indexes."""

from __future__ import annotations

import json

from tests.diff.helpers import diff_files, only
from tests.extract.snapshots import lfs
from tests.extract.snapshots import st_header as header
from tracker.model import Severity


def test_dtype_change_under_the_same_name() -> None:
    before = {"model.safetensors": lfs("fp32", 400)}
    after = {"model.safetensors": lfs("bf16", 200)}
    hb = {"model.safetensors": header({"w": ("F32", [10, 10]), "b": ("F32", [10])})}
    ha = {"model.safetensors": header({"w": ("BF16", [10, 10]), "b": ("BF16", [10])})}
    d = diff_files(before, after, headers_before=hb, headers_after=ha)
    per_file = [c for c in d.changes if "weights.replaced" in c.topics]
    assert len(per_file) == 1 and per_file[0].severity is Severity.HIGH
    assert per_file[0].detail["tensors"]["changes_total"] == 2
    tensors = [c for c in d.changes if c.topics == ("weights.tensors",)]
    assert len(tensors) == 1
    t = tensors[0]
    assert t.severity is Severity.HIGH
    assert t.detail["tensors"]["params_by_dtype"] == {
        "BF16": {"old": 0, "new": 110},
        "F32": {"old": 110, "new": 0},
    }
    rows = {r["name"]: r for r in t.detail["tensors"]["changes"]}
    assert rows["w"]["old"] == {"dtype": "F32", "shape": [10, 10]}
    assert "2 dtype" in t.summary


def test_reshard_with_the_same_tensors_is_not_a_tensor_change() -> None:
    one = {"model.safetensors": lfs("one", 100)}
    two = {
        "model-00001-of-00002.safetensors": lfs("s1", 50),
        "model-00002-of-00002.safetensors": lfs("s2", 50),
        "model.safetensors.index.json": json.dumps(
            {
                "metadata": {"total_size": 100},
                "weight_map": {
                    "a": "model-00001-of-00002.safetensors",
                    "b": "model-00002-of-00002.safetensors",
                },
            }
        ).encode(),
    }
    h1 = {"model.safetensors": header({"a": ("F16", [25]), "b": ("F16", [25])})}
    h2 = {
        "model-00001-of-00002.safetensors": header({"a": ("F16", [25])}),
        "model-00002-of-00002.safetensors": header({"b": ("F16", [25])}),
    }
    d = diff_files(one, two, headers_before=h1, headers_after=h2)
    assert not [c for c in d.changes if "weights.tensors" in c.topics]
    assert all("weights.reupload" in c.topics for c in d.changes if c.path.endswith(".safetensors"))
    assert only(d, "model.safetensors.index.json").detail["op"] == "added"
    # a changed shape across the re-shard is caught at the tensor level
    h2["model-00002-of-00002.safetensors"] = header({"b": ("F16", [5, 5]), "c": ("F16", [1])})
    d = diff_files(one, two, headers_before=h1, headers_after=h2)
    t = [c for c in d.changes if c.topics == ("weights.tensors",)]
    assert len(t) == 1 and t[0].path == "model.safetensors.index.json"
    assert {r["name"]: r["op"] for r in t[0].detail["tensors"]["changes"]} == {
        "b": "changed",
        "c": "added",
    }


def test_index_tensor_set_change_is_high() -> None:
    def index(names: list[str], total: int) -> bytes:
        return json.dumps(
            {"metadata": {"total_size": total}, "weight_map": {n: "a.bin" for n in names}}
        ).encode()

    d = diff_files(
        {"pytorch_model.bin.index.json": index(["x", "y"], 10)},
        {"pytorch_model.bin.index.json": index(["x", "z"], 12)},
    )
    c = only(d, "pytorch_model.bin.index.json")
    assert c.topics == ("weights.index.tensors",) and c.severity is Severity.HIGH
    assert c.detail["tensors_added"] == ["z"] and c.detail["tensors_removed"] == ["y"]
    assert "total_size 0.00 GB -> 0.00 GB" in c.summary


def test_reformatted_index_is_not_an_advisory() -> None:
    doc = {"metadata": {"total_size": 10}, "weight_map": {"x": "a.safetensors"}}
    d = diff_files(
        {"model.safetensors.index.json": json.dumps(doc).encode()},
        {"model.safetensors.index.json": json.dumps(doc, indent=2).encode()},
    )
    c = only(d, "model.safetensors.index.json")
    assert c.topics == ("weights.index.format",) and c.severity is None


def test_unreadable_index() -> None:
    d = diff_files(
        {"model.safetensors.index.json": b'{"weight_map": {}}'},
        {"model.safetensors.index.json": b"{oops"},
    )
    c = only(d, "model.safetensors.index.json")
    assert c.topics == ("weights.unreadable",) and c.severity is Severity.MODERATE
    assert "invalid JSON" in c.detail["unreadable"]["head"]
