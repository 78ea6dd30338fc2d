"""extract_artifacts on real repo files and on hostile ones: parsed, or a ParseIssue."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.extract.snapshots import TOKENIZERS, load_pair, pair_names, read_tree, snapshot_of
from tracker.extract import extract_artifacts
from tracker.model import Artifacts


@pytest.fixture(scope="module")
def pairs() -> dict[str, tuple[dict[str, bytes], dict[str, bytes]]]:
    return {name: load_pair(name) for name in pair_names()}


@pytest.fixture(scope="module")
def tokenizer_files() -> dict[str, bytes]:
    return read_tree(TOKENIZERS)


def issues(arts: Artifacts) -> dict[str, str]:
    return {i.path: i.message for i in arts.issues}


def test_every_corpus_revision_extracts_cleanly(pairs: dict[str, Any]) -> None:
    for name, (before, after) in pairs.items():
        for files in (before, after):
            arts = extract_artifacts(snapshot_of(files))
            assert arts.issues == (), (name, arts.issues)
            assert {f.path for f in arts.files} == set(files)


def test_chat_template_is_taken_out_of_tokenizer_config(pairs: dict[str, Any]) -> None:
    _, after = pairs["gemma-2b-it__chat-template-bos-token"]
    arts = extract_artifacts(snapshot_of(after))
    assert set(arts.chat_templates) == {"default"}
    assert arts.chat_templates["default"].startswith("{{ bos_token }}")
    assert arts.chat_template_sources == {"default": "tokenizer_config.json"}
    assert "chat_template" not in arts.tokenizer_config
    assert arts.tokenizer_config["bos_token"] == "<bos>"


def test_jinja_file_wins_over_chat_template_json(pairs: dict[str, Any]) -> None:
    before, after = pairs["gpt-oss-20b__chat-template-json-removed"]
    b, a = extract_artifacts(snapshot_of(before)), extract_artifacts(snapshot_of(after))
    assert b.chat_template_sources == {"default": "chat_template.jinja"}
    assert a.chat_template_sources == {"default": "chat_template.jinja"}
    assert b.chat_templates == a.chat_templates
    only_json = {"chat_template.json": before["chat_template.json"]}
    j = extract_artifacts(snapshot_of(only_json))
    assert j.chat_template_sources == {"default": "chat_template.json"}
    assert j.chat_templates == a.chat_templates


def test_named_templates_from_list_and_folder() -> None:
    tc = {
        "chat_template": [
            {"name": "default", "template": "{{ messages }}"},
            {"name": "tool_use", "template": "{{ tools }}"},
        ],
        "eos_token": "</s>",
    }
    arts = extract_artifacts(
        snapshot_of(
            {
                "tokenizer_config.json": json.dumps(tc).encode(),
                "additional_chat_templates/rag.jinja": b"{{ documents }}",
            }
        )
    )
    assert arts.chat_templates == {
        "default": "{{ messages }}",
        "rag": "{{ documents }}",
        "tool_use": "{{ tools }}",
    }
    assert arts.chat_template_sources["rag"] == "additional_chat_templates/rag.jinja"
    assert arts.tokenizer_config == {"eos_token": "</s>"}


def test_every_corpus_template_is_found(tokenizer_files: dict[str, bytes]) -> None:
    for name, data in tokenizer_files.items():
        if name.endswith(".tokenizer_config.json"):
            arts = extract_artifacts(snapshot_of({"tokenizer_config.json": data}))
            has = "chat_template" in json.loads(data)
            assert bool(arts.chat_templates) == has, name
        elif name.endswith(".jinja"):
            arts = extract_artifacts(snapshot_of({"chat_template.jinja": data}))
            assert arts.chat_templates["default"] == data.decode()


def test_weight_manifest_of_a_pickle_reshard(pairs: dict[str, Any]) -> None:
    before, after = pairs["llama2-7b-hf__weights-reshard-bin-3-to-2-shards"]
    b, a = extract_artifacts(snapshot_of(before)), extract_artifacts(snapshot_of(after))
    assert [f.path for f in b.weights.files] == [
        f"pytorch_model-0000{i}-of-00003.bin" for i in (1, 2, 3)
    ]
    assert {f.format for f in a.weights.files} == {"pickle"}
    first = a.weights.by_path()["pytorch_model-00001-of-00002.bin"]
    assert first.size == 9976634558
    assert (
        first.content_id
        == "sha256:ee62ed2ad7ded505ae47df50bc6c52916860dfb1c009df4715148cc4bfb50d2f"
    )
    assert first.tensors is None
    wmap = a.weights.index_weight_maps["pytorch_model.bin.index.json"]
    assert wmap["lm_head.weight"] == "pytorch_model-00002-of-00002.bin"
    assert b.weights.index_total_sizes["pytorch_model.bin.index.json"] == 26953670656
    assert a.weights.index_total_sizes["pytorch_model.bin.index.json"] == 13476839424


def test_safetensors_headers_fill_the_manifest() -> None:
    good = json.dumps({"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}}).encode()
    arts = extract_artifacts(
        snapshot_of(
            {"a.safetensors": b"x", "b.safetensors": b"y", "c.safetensors": b"z"},
            headers={"a.safetensors": good, "b.safetensors": b"{not json"},
        )
    )
    by = arts.weights.by_path()
    assert by["a.safetensors"].tensors is not None and by["a.safetensors"].tensors[0].shape == (
        2,
        2,
    )
    assert by["b.safetensors"].tensors is None
    assert by["c.safetensors"].tensors is None  # no header read: unknown, not an issue
    assert "invalid JSON" in issues(arts)["b.safetensors"]


@pytest.mark.parametrize(
    ("files", "path", "message"),
    [
        ({"config.json": b"{nope"}, "config.json", "invalid JSON"),
        ({"config.json": b"[1, 2]"}, "config.json", "expected a JSON object"),
        ({"generation_config.json": b"\xff"}, "generation_config.json", "UTF-8"),
        ({"tokenizer.json": b'{"model": []}'}, "tokenizer.json", "model is not an object"),
        (
            {"tokenizer_config.json": b'{"chat_template": 5}'},
            "tokenizer_config.json",
            "chat_template",
        ),
        ({"chat_template.json": b'{"template": "x"}'}, "chat_template.json", "no chat_template"),
        ({"chat_template.jinja": b"\xc3\x28"}, "chat_template.jinja", "UTF-8"),
        (
            {"model.safetensors.index.json": b'{"weight_map": [1]}'},
            "model.safetensors.index.json",
            "weight_map",
        ),
        ({"modeling_x.py": b"x = '\xff'\n"}, "modeling_x.py", "UTF-8"),
        ({"config.json": b"[" * 50 + b"]" * 50}, "config.json", "levels deep"),
    ],
)
def test_bad_files_become_issues(files: dict[str, bytes], path: str, message: str) -> None:
    arts = extract_artifacts(snapshot_of(files))
    assert message in issues(arts)[path]


def test_unreadable_files_become_issues() -> None:
    snap = snapshot_of(
        {"config.json": b"{}", "tokenizer.json": b"{}", "generation_config.json": b"{}"},
        read_errors={"tokenizer.json": "30000000 bytes, over the cap"},
    )
    # generation_config.json is in the tree but its bytes never arrived
    snap = type(snap)(snap.sha, snap.files, {"config.json": b"{}"}, {}, snap.read_errors)
    arts = extract_artifacts(snap)
    got = issues(arts)
    assert got["tokenizer.json"].startswith("not read: 30000000 bytes")
    assert "not available" in got["generation_config.json"]
    assert arts.config == {} and arts.tokenizer is None and arts.generation_config is None


def test_content_over_the_cap_is_refused_even_if_present() -> None:
    big = b'{"a": "' + b"x" * (2 * 1024 * 1024) + b'"}'
    arts = extract_artifacts(snapshot_of({"config.json": big}))
    assert arts.config is None
    assert "cap" in issues(arts)["config.json"]


def test_code_is_kept_as_text() -> None:
    arts = extract_artifacts(snapshot_of({"pkg/modeling_x.py": b"import os\n", "README.md": b"hi"}))
    assert arts.code == {"pkg/modeling_x.py": "import os\n"}
    broken = extract_artifacts(snapshot_of({"m.py": b"x = '\xff'\n"}))
    assert broken.code["m.py"] == "x = '\ufffd'\n"


_WANTED = [
    "config.json",
    "generation_config.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "tokenizer.json",
    "chat_template.json",
    "chat_template.jinja",
    "model.safetensors.index.json",
    "modeling.py",
]
_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=25,
).map(lambda v: json.dumps(v).encode())


@settings(max_examples=150, database=None, deadline=None)  # no timing here: a loaded CI box must not fail it
@given(
    st.dictionaries(
        st.sampled_from(_WANTED), st.binary(max_size=200) | _JSONISH, max_size=len(_WANTED)
    ),
    st.dictionaries(st.just("model.safetensors"), st.binary(max_size=100) | _JSONISH, max_size=1),
)
def test_extraction_never_raises(files: dict[str, bytes], headers: dict[str, bytes]) -> None:
    if headers:
        files = {**files, "model.safetensors": b"weights"}
    arts = extract_artifacts(snapshot_of(files, headers=headers))
    assert {f.path for f in arts.files} == set(files)


def _tokenizer_json(vocab: dict[str, int]) -> bytes:
    return json.dumps({"model": {"type": "BPE", "vocab": vocab, "merges": ["a b"]}, "added_tokens": []}).encode()


def test_an_unchanged_tokenizer_json_is_taken_from_the_earlier_revision() -> None:
    tok = _tokenizer_json({"a": 0, "b": 1, "ab": 2})
    first = extract_artifacts(snapshot_of({"tokenizer.json": tok, "config.json": b'{"a": 1}'}))
    assert first.tokenizer is not None and first.tokenizer.vocab_size == 3
    second = snapshot_of({"tokenizer.json": tok, "config.json": b'{"a": 2}'})
    assert extract_artifacts(second, earlier=first) == extract_artifacts(second)
    # taken, not parsed again: a summary planted in the earlier artifacts comes through ...
    planted = Artifacts(files=first.files, tokenizer=replace(first.tokenizer, vocab_size=99))
    assert extract_artifacts(second, earlier=planted).tokenizer.vocab_size == 99  # type: ignore[union-attr]
    # ... but only while the file's content id is the same
    changed = snapshot_of({"tokenizer.json": _tokenizer_json({"a": 0}), "config.json": b'{"a": 2}'})
    assert extract_artifacts(changed, earlier=planted).tokenizer.vocab_size == 1  # type: ignore[union-attr]
    gone = snapshot_of({"config.json": b'{"a": 2}'})
    assert extract_artifacts(gone, earlier=planted).tokenizer is None


def _header(tensors: dict[str, list[int]]) -> bytes:
    doc, offset = {}, 0
    for name, shape in tensors.items():
        n = 2 * (shape[0] * shape[1])
        doc[name] = {"dtype": "F16", "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    return json.dumps(doc).encode()


def test_unchanged_safetensors_tensors_are_taken_from_the_earlier_revision() -> None:
    header = _header({"a": [2, 2], "b": [4, 2]})
    files = {"model.safetensors": b"weights v1", "config.json": b'{"a": 1}'}
    first = extract_artifacts(snapshot_of(files, headers={"model.safetensors": header}))
    second = snapshot_of({**files, "config.json": b'{"a": 2}'}, headers={"model.safetensors": header})
    assert extract_artifacts(second, earlier=first) == extract_artifacts(second)
    # taken, not parsed again: tensors planted in the earlier manifest come through ...
    (shard,) = first.weights.files
    planted = replace(first, weights=replace(first.weights, files=(replace(shard, tensors=()),)))
    assert extract_artifacts(second, earlier=planted).weights.files[0].tensors == ()
    # ... but only while the shard's content id is the same
    moved = snapshot_of({**files, "model.safetensors": b"weights v2"}, headers={"model.safetensors": header})
    assert extract_artifacts(moved, earlier=planted).weights.files[0].tensors == first.weights.files[0].tensors
