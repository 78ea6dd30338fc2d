"""tokenizer.json summaries change with the tokens, not with the serialisation."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tracker.errors import InvalidContent
from tracker.extract.tokenizer import summarise_tokenizer


def bpe(merges: list[Any], **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": 2, "content": "</s>", "special": True, "normalized": False},
            {"id": 0, "content": "<unk>", "special": True, "normalized": False},
        ],
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>"}}],
        },
        "decoder": {"type": "ByteLevel"},
        "model": {
            "type": "BPE",
            "unk_token": "<unk>",
            "byte_fallback": False,
            "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "a": 3, "b": 4, "ab": 5},
            "merges": merges,
        },
    }
    doc.update(extra)
    return doc


def test_summary_fields() -> None:
    s = summarise_tokenizer(bpe(["a b"]))
    assert s.model_type == "BPE"
    assert s.vocab_size == 6
    assert s.merges_count == 1
    assert s.added_tokens == ((0, "<unk>", True), (2, "</s>", True))
    assert json.loads(s.normalizer) == {"type": "NFC"}
    assert json.loads(s.settings)["model"] == {
        "type": "BPE",
        "unk_token": "<unk>",
        "byte_fallback": False,
    }


def test_merges_format_does_not_matter() -> None:
    """tokenizers >= 0.20 writes merges as pairs; the same merges must hash the same."""
    assert summarise_tokenizer(bpe(["a b"])) == summarise_tokenizer(bpe([["a", "b"]]))


def test_token_changes_change_the_summary() -> None:
    base = summarise_tokenizer(bpe(["a b"]))
    doc = bpe(["a b"])
    doc["model"]["vocab"]["c"] = 6
    assert summarise_tokenizer(doc).vocab_hash != base.vocab_hash
    doc = bpe(["a b"])
    doc["model"]["byte_fallback"] = True
    assert summarise_tokenizer(doc).settings != base.settings
    assert summarise_tokenizer(doc).vocab_hash == base.vocab_hash
    doc = bpe(["b a"])
    assert summarise_tokenizer(doc).merges_hash != base.merges_hash


def test_key_order_does_not_matter() -> None:
    doc = bpe(["a b"])
    reordered = json.loads(json.dumps(doc, sort_keys=True))
    reordered["model"]["vocab"] = dict(reversed(list(doc["model"]["vocab"].items())))
    assert summarise_tokenizer(reordered) == summarise_tokenizer(copy.deepcopy(doc))


def test_long_strings_are_hashed_not_kept() -> None:
    doc = bpe(["a b"], normalizer={"type": "Precompiled", "precompiled_charsmap": "x" * 100_000})
    s = summarise_tokenizer(doc)
    assert len(s.normalizer) < 200
    doc2 = bpe(["a b"], normalizer={"type": "Precompiled", "precompiled_charsmap": "y" * 100_000})
    assert summarise_tokenizer(doc2).normalizer != s.normalizer


def test_unigram_vocab_list() -> None:
    doc = {"model": {"type": "Unigram", "vocab": [["<unk>", 0.0], ["a", -1.5]]}}
    s = summarise_tokenizer(doc)
    assert (s.model_type, s.vocab_size, s.merges_count) == ("Unigram", 2, 0)
    assert s.decoder == "null"


@pytest.mark.parametrize(
    "doc",
    [
        [],
        {"model": []},
        {"model": {"vocab": "abc"}},
        {"model": {"merges": {"a": "b"}}},
        {"model": {"merges": [1]}},
        {"added_tokens": {"id": 1}},
        {"added_tokens": [{"id": "1", "content": "x"}]},
        {"added_tokens": ["x"]},
    ],
)
def test_malformed_tokenizer_json(doc: Any) -> None:
    with pytest.raises(InvalidContent):
        summarise_tokenizer(doc)
