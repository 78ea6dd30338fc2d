"""deepdiff flattened to ``path: old -> new``, lists as whole values, bounded excerpts."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.corpus import CORPUS
from tracker.diff.jsondiff import MISSING, diff_json, excerpt, field_changes, format_path, short


def flat(old: object, new: object) -> list[tuple[str, str, object, object]]:
    return [(f.path, f.op, f.old, f.new) for f in diff_json(old, new)]


def test_nested_keys_added_removed_changed() -> None:
    old = {"rope_scaling": {"factor": 8.0, "type": "llama3"}, "a": 1, "gone": True}
    new = {"rope_scaling": {"factor": 32.0, "type": "llama3", "low": 1.0}, "a": 1, "came": None}
    assert flat(old, new) == [
        ("came", "added", MISSING, None),
        ("gone", "removed", True, MISSING),
        ("rope_scaling.factor", "changed", 8.0, 32.0),
        ("rope_scaling.low", "added", MISSING, 1.0),
    ]


def test_a_list_changes_as_a_whole() -> None:
    assert flat({"eos": [1, 2]}, {"eos": [1, 2, 3]}) == [("eos", "changed", [1, 2], [1, 2, 3])]
    assert flat({"x": [{"a": 1}]}, {"x": [{"a": 2}]}) == [("x", "changed", [{"a": 1}], [{"a": 2}])]


def test_types_matter_but_nan_equals_nan() -> None:
    assert flat({"a": 1}, {"a": 1.0}) == [("a", "changed", 1, 1.0)]
    assert flat({"a": True}, {"a": 1}) == [("a", "changed", True, 1)]
    assert flat({"a": None}, {"a": 4096}) == [("a", "changed", None, 4096)]
    assert flat({"a": float("nan")}, {"a": float("nan")}) == []


def test_whole_documents() -> None:
    assert flat({}, {"a": {"b": 1}}) == [("a", "added", MISSING, {"b": 1})]
    assert flat({"a": 1}, {}) == [("a", "removed", 1, MISSING)]
    assert flat({"a": 1}, [1]) == [("(document)", "changed", {"a": 1}, [1])]


def test_paths_quote_what_is_not_a_plain_key() -> None:
    assert (
        format_path(("added_tokens_decoder", "106", "content"))
        == "added_tokens_decoder.106.content"
    )
    assert format_path(("a.b", "c d")) == '["a.b"]["c d"]'
    assert format_path(("auto_map", "AutoModel")) == "auto_map.AutoModel"


def test_excerpts_are_bounded() -> None:
    labels = {str(i): f"LABEL_{i}" for i in range(21843)}
    assert excerpt(labels).startswith("<object with 21843 keys, sha256 ")
    assert excerpt([0] * 1000).startswith("<list of 1000 items")
    assert len(excerpt("x" * 10_000)) < 500
    assert excerpt({"factor": 8.0}) == {"factor": 8.0}
    assert (
        short([1] * 100) == "[100 items]"
        and short("<s>") == '"<s>"'
        and short(MISSING) == "(absent)"
    )


# -- equal members are dropped before DeepDiff walks the documents: the result must not move ---
_SCALARS = (st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from([1.0, 0.5, float("nan")])
            | st.sampled_from(["", "a", "1"]))
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "c", "1"]), inner,
                                                                max_size=4),
    max_leaves=12,
)
_DOCS = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), _VALUES, max_size=4)


def _full(old: object, new: object) -> list[tuple[str, str, str, str]]:
    return [(f.path, f.op, repr(f.old), repr(f.new)) for f in field_changes(old, new, old, new)]


def _fast(old: object, new: object) -> list[tuple[str, str, str, str]]:
    return [(f.path, f.op, repr(f.old), repr(f.new)) for f in diff_json(old, new)]


@settings(max_examples=300, deadline=None)
@given(_DOCS, _DOCS)
def test_dropping_equal_members_finds_what_deepdiff_finds_on_the_whole(old: dict, new: dict) -> None:
    assert _fast(old, new) == _full(old, new)


@settings(max_examples=100, deadline=None)
@given(_DOCS, st.sampled_from(["a", "b", "c"]), _VALUES)
def test_one_member_edited(doc: dict, key: str, value: object) -> None:
    edited = {**doc, key: value}
    assert _fast(doc, edited) == _full(doc, edited)


def test_real_tokenizer_config_edit_same_as_the_whole_walk() -> None:
    changes = CORPUS / "changes" / "mistral-7b-instruct-v0.3__chat-template-added"
    old = json.loads((changes / "before" / "tokenizer_config.json").read_bytes())
    new = json.loads((changes / "after" / "tokenizer_config.json").read_bytes())
    assert _fast(old, new) == _full(old, new) != []
    nested = {"outer": old, "same": {"x": [1, 2]}}
    assert _fast(nested, {"outer": new, "same": {"x": [1, 2]}}) == _full(nested, {"outer": new, "same": {"x": [1, 2]}})
