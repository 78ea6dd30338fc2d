"""Every input kind, detected by content and written the way real tools write it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.audit.sboms import cyclonedx_bom, spdx_bom
from tests.hubemu import HubEmulator, RepoBuilder
from tracker.audit.inputs import InputError, default_cache, read_input

A, B = "a" * 40, "b" * 40


@pytest.mark.parametrize("spec", ["1.4", "1.5", "1.6"])
def test_cyclonedx_written_by_the_library(tmp_path: Path, spec: str) -> None:
    path = cyclonedx_bom(tmp_path / "bom.json", [("org/model", A), ("org/other", "main"), ("acme/nested", B)], spec=spec)
    scanned = read_input(str(path))
    assert scanned.kind == "cyclonedx"
    got = {(p.repo, p.revision, p.ref) for p in scanned.pins}
    assert got == {("org/model", A, None), ("org/other", None, "main"), ("acme/nested", B, None)}
    lines = path.read_text().splitlines()
    for p in scanned.pins:  # each line is where its purl is written
        assert p.line is not None and f"pkg:huggingface/{p.repo}" in lines[p.line - 1]


def test_spdx_written_by_spdx_tools(tmp_path: Path) -> None:
    path = spdx_bom(tmp_path / "sbom.spdx.json", [("org/model", A), ("acme/x", B)])
    scanned = read_input(str(path))
    assert scanned.kind == "spdx"
    assert [(p.repo, p.revision) for p in scanned.pins] == [("org/model", A), ("acme/x", B)]
    assert all(p.line and p.repo in path.read_text().splitlines()[p.line - 1] for p in scanned.pins)


def test_hf_cache_made_by_a_real_download(tmp_path: Path) -> None:
    from huggingface_hub import hf_hub_download

    builder = RepoBuilder.init(tmp_path / "tiny.git")
    first = builder.commit({"config.json": b'{"model_type": "llama"}', "README.md": b"a"})
    second = builder.commit({"config.json": b'{"model_type": "llama", "x": 1}'})
    cache = tmp_path / "hub"
    with HubEmulator() as hub:
        hub.add_repo("acme/tiny", builder.path)
        hf_hub_download("acme/tiny", "config.json", revision=first, cache_dir=cache, endpoint=hub.url)
        hf_hub_download("acme/tiny", "config.json", cache_dir=cache, endpoint=hub.url)  # main = second
    assert (cache / "models--acme--tiny" / "refs" / "main").read_text() == second
    for given in (cache, tmp_path):  # the hub/ folder or HF_HOME above it
        scanned = read_input(str(given))
        assert scanned.kind == "hf-cache"
        assert sorted(p.revision or "" for p in scanned.pins) == sorted([first, second])
        assert {p.repo for p in scanned.pins} == {"acme/tiny"}
        assert all(Path(p.source).is_dir() and Path(p.source).name == p.revision for p in scanned.pins)


def test_default_cache_follows_huggingface_hub() -> None:
    home = Path("/home/u")
    assert default_cache({"HF_HUB_CACHE": "/c"}, home) == Path("/c")
    assert default_cache({"HF_HOME": "/h"}, home) == Path("/h/hub")
    assert default_cache({"XDG_CACHE_HOME": "/x"}, home) == Path("/x/huggingface/hub")
    assert default_cache({}, home) == Path("/home/u/.cache/huggingface/hub")
    from huggingface_hub import constants

    env = {k: v for k, v in os.environ.items() if k in ("HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME")}
    assert default_cache(env, Path.home()) == Path(constants.HF_HUB_CACHE)


def test_lock_file_with_lines(tmp_path: Path) -> None:
    path = tmp_path / "models.lock"
    path.write_text(f'# pins\n[[model]]\nrepo = "org/model"\nrevision = "{A}"\n\n[[model]]\nrepo = "acme/x"\n'
                    f'revision = "main"\n', encoding="utf-8")
    pins = read_input(str(path)).pins
    assert [(p.repo, p.revision, p.ref, p.line) for p in pins] == [("org/model", A, None, 2), ("acme/x", None, "main", 6)]
    path.write_text('[[model]]\nrevision = "abc"\n', encoding="utf-8")
    with pytest.raises(InputError, match="repo"):
        read_input(str(path))


SOURCE = f'''
from transformers import AutoModel, AutoTokenizer, pipeline
from huggingface_hub import hf_hub_download, snapshot_download

model = AutoModel.from_pretrained("org/model", revision="{A}")
tok = AutoTokenizer.from_pretrained("org/model")
other = AutoModel.from_pretrained(
    "acme/x",
    revision="v1.0",
)
path = hf_hub_download(repo_id="acme/y", filename="config.json", revision=REV)
data = hf_hub_download("acme/dataset", "train.csv", repo_type="dataset")
snap = snapshot_download("acme/z", revision="{B[:12]}")
local = AutoModel.from_pretrained("./checkpoints/run1")
p = pipeline("text-generation", model="acme/pipe", revision=None)
'''


def test_python_sources_parsed_not_imported(tmp_path: Path) -> None:
    path = tmp_path / "app.py"
    path.write_text(SOURCE + "import this_module_does_not_exist\n", encoding="utf-8")
    pins = read_input(str(path)).pins
    got = [(p.repo, p.revision, p.ref, p.line) for p in pins]
    assert got == [
        ("org/model", A, None, 5),
        ("org/model", None, None, 6),
        ("acme/x", None, "v1.0", 7),
        ("acme/y", None, "<computed at run time>", 11),
        ("acme/z", B[:12], None, 13),
        ("acme/pipe", None, None, 15),
    ]


def test_a_source_tree_reads_python_and_lock_files(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "src" / "broken.py").write_text("def (:\n", encoding="utf-8")
    (tmp_path / ".venv" / "lib").mkdir(parents=True)
    (tmp_path / ".venv" / "lib" / "dep.py").write_text('M.from_pretrained("no/thanks")\n', encoding="utf-8")
    (tmp_path / "models.lock").write_text(f'[[model]]\nrepo = "org/locked"\nrevision = "{A}"\n', encoding="utf-8")
    scanned = read_input(str(tmp_path))
    repos = {p.repo for p in scanned.pins}
    assert "org/locked" in repos and "org/model" in repos and "no/thanks" not in repos
    assert {p.kind for p in scanned.pins} == {"python", "lockfile"}


def test_unknown_content_is_an_input_error(tmp_path: Path) -> None:
    cases = {"x.json": json.dumps({"hello": 1}), "notes.txt": "this is : not python {", "bad.json": "{nope"}
    for name, text in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        with pytest.raises(InputError):
            read_input(str(tmp_path / name))
    with pytest.raises(InputError, match="cannot read"):
        read_input(str(tmp_path / "missing.json"))


def test_cyclonedx_ml_bom_subject_in_metadata(tmp_path: Path) -> None:
    doc = {"bomFormat": "CycloneDX", "specVersion": "1.6", "version": 1,
           "components": [{"type": "data", "name": "train", "purl": "pkg:huggingface/org/other@" + B}],
           "metadata": {"component": {"type": "machine-learning-model", "name": "model",
                                      "purl": f"pkg:huggingface/org/model@{A.upper()}"}}}
    path = tmp_path / "mlbom.json"
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    pins = read_input(str(path)).pins
    assert [(p.repo, p.revision) for p in pins] == [("org/model", A), ("org/other", B)]
    lines = path.read_text().splitlines()
    assert all(p.line and p.repo in lines[p.line - 1] for p in pins)
