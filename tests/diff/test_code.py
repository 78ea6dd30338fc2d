"""Custom code: which files auto_map loads (with their relative imports) decides the topic."""

from __future__ import annotations

import json

import pytest

from tests.diff.helpers import diff_files, only
from tests.extract.snapshots import snapshot_of
from tracker.diff import diff_artifacts
from tracker.diff.code import module_file
from tracker.extract import extract_artifacts
from tracker.model import ChangeKind, Severity

CONFIG = json.dumps(
    {
        "model_type": "rw",
        "auto_map": {
            "AutoConfig": "configuration_rw.RWConfig",
            "AutoModelForCausalLM": "modelling_rw.RWForCausalLM",
        },
    }
).encode()
MODEL = (
    b"import torch\nfrom .configuration_rw import RWConfig\nfrom .layers.attention import Attn\n"
)


def repo(**extra: bytes) -> dict[str, bytes]:
    files = {
        "config.json": CONFIG,
        "configuration_rw.py": b"class RWConfig: pass\n",
        "modelling_rw.py": MODEL,
        "layers/attention.py": b"class Attn: pass\n",
        "handler.py": b"def handle(): pass\n",
    }
    files.update({k.replace("__", "/").replace("_py", ".py"): v for k, v in extra.items()})
    return files


def test_loaded_code_changed_is_critical_with_a_diff() -> None:
    d = diff_files(repo(), repo(modelling_rw_py=MODEL + b"import os; os.system('x')\n"))
    c = only(d, "modelling_rw.py")
    assert (c.kind, c.topics, c.severity) == (
        ChangeKind.CODE,
        ("code.auto_map_target.changed",),
        Severity.CRITICAL,
    )
    assert c.detail["loaded_by"] == ["config.json auto_map.AutoModelForCausalLM"]
    assert "+import os; os.system('x')" in c.detail["diff"]["diff"]
    assert (
        c.summary
        == "custom code changed: modelling_rw.py (+1/-0 lines), loaded by config.json auto_map.AutoModelForCausalLM"
    )


def test_relative_imports_of_loaded_code_are_loaded_too() -> None:
    d = diff_files(repo(), repo(layers__attention_py=b"import subprocess\n"))
    c = only(d, "layers/attention.py")
    assert c.topics == ("code.auto_map_target.changed",) and c.severity is Severity.CRITICAL
    assert c.detail["loaded_by"] == ["imported by modelling_rw.py"]


def test_code_nothing_loads_is_moderate() -> None:
    d = diff_files(repo(), repo(handler_py=b"def handle(): return 1\n"))
    c = only(d, "handler.py")
    assert c.topics == ("code.changed",) and c.severity is Severity.MODERATE
    assert c.detail["loaded_by"] == []


def test_added_and_removed_code() -> None:
    before = repo()
    after = dict(before)
    del after["configuration_rw.py"]
    after["configuration_new.py"] = b"x = 1\n"
    after["config.json"] = json.dumps({"auto_map": {"AutoConfig": "configuration_new.C"}}).encode()
    d = diff_files(before, after)
    assert only(d, "configuration_new.py").topics == ("code.auto_map_target.added",)
    assert only(d, "configuration_new.py").severity is Severity.CRITICAL
    assert only(d, "configuration_rw.py").topics == ("code.auto_map_target.removed",)
    assert only(d, "configuration_rw.py").severity is Severity.LOW
    assert "config.auto_map.changed" in only(d, "config.json").topics


def test_tokenizer_auto_map_and_custom_pipelines_count() -> None:
    files = {
        "tokenizer_config.json": json.dumps(
            {"auto_map": {"AutoTokenizer": ["tok.SlowTok", None]}}
        ).encode(),
        "config.json": json.dumps(
            {"custom_pipelines": {"text-generation": {"impl": "pipe.MyPipe"}}}
        ).encode(),
        "tok.py": b"a = 1\n",
        "pipe.py": b"b = 1\n",
    }
    d = diff_files(None, files)
    assert only(d, "tok.py").topics == ("code.auto_map_target.added",)
    assert only(d, "pipe.py").detail["loaded_by"] == [
        "config.json custom_pipelines.text-generation"
    ]
    assert only(d, "tokenizer_config.json").topics == ("tokenizer.auto_map.added",)
    assert only(d, "tokenizer_config.json").severity is Severity.CRITICAL


def test_module_file() -> None:
    assert module_file("modeling_x.Model") == "modeling_x.py"
    assert module_file("pkg.sub.mod.Cls") == "pkg/sub/mod.py"
    assert (
        module_file("tiiuae/falcon-7b--modelling_RW.RWForCausalLM") is None
    )  # another repo's code
    assert module_file("NoModule") is None


def test_unreadable_code_still_counts() -> None:
    before = extract_artifacts(snapshot_of(repo()))
    after_snap = snapshot_of(
        repo(modelling_rw_py=b"x" * 10), read_errors={"modelling_rw.py": "over the cap"}
    )
    after = extract_artifacts(after_snap)
    d = diff_artifacts(before, after, base_sha="a", head_sha="b")
    c = only(d, "modelling_rw.py")
    assert c.topics == ("code.auto_map_target.changed",)
    assert c.detail["diff"] is None and "over the cap" in c.detail["unreadable"]["head"]


def _reordered(n: int, distinct: int, how: str) -> tuple[bytes, bytes]:
    lines = [f"x{i % distinct} = {i % distinct}  # filler" for i in range(n)]
    if how == "reversed":
        new = lines[::-1]
    else:  # neighbours swapped: difflib's recursion goes n/2 deep, each level O(n)
        new = [x for i in range(0, n - 1, 2) for x in (lines[i + 1], lines[i])]
    return "\n".join(lines).encode(), "\n".join(new).encode()


@pytest.mark.parametrize(("distinct", "how"), [(100, "reversed"), (20_000, "swapped")])
def test_a_diff_bomb_costs_a_bounded_time(distinct: int, how: str) -> None:
    """Issue 16, point 5: 20,000 reordered lines once took 119-320 s in difflib."""
    import time

    old, new = _reordered(20_000, distinct, how)
    started = time.process_time()
    d = diff_files({"modeling_x.py": old}, {"modeling_x.py": new})
    assert time.process_time() - started < 3
    diff = only(d, "modeling_x.py").detail["diff"]
    assert diff["truncated"] is True and diff["diff"].startswith("--- a/modeling_x.py")


def test_the_bounded_diff_is_difflibs_on_ordinary_input() -> None:
    import difflib
    import random

    from tracker.diff.textdiff import MAX_CELLS, bounded_opcodes, unified

    rng = random.Random(7)
    for _ in range(200):
        a = [rng.choice("abcdefg") for _ in range(rng.randint(0, 40))]
        b = [rng.choice("abcdefg") for _ in range(rng.randint(0, 40))]
        expected = "\n".join(difflib.unified_diff(a, b, "a/x", "b/x", lineterm=""))
        assert unified("\n".join(a), "\n".join(b), "x", "x")["diff"] == expected
    # past the cell cap the opcodes still rebuild the new text exactly
    a = [f"l{i % 300}" for i in range(3_000)] + [f"u{i}" for i in range(500)]
    b = a[::-1]
    assert len(a) * len(b) > MAX_CELLS
    ops, _ = bounded_opcodes(a, b)
    rebuilt = [x for tag, i1, i2, j1, j2 in ops for x in (a[i1:i2] if tag == "equal" else b[j1:j2])]
    assert rebuilt == b
    assert all(a[i1:i2] == b[j1:j2] for tag, i1, i2, j1, j2 in ops if tag == "equal")
