"""tokenizer.json changes through its summary; vocabulary files by content id."""

from __future__ import annotations

import copy
import json
from typing import Any

from tests.diff.helpers import diff_files, only
from tests.extract.snapshots import lfs
from tests.extract.test_tokenizer_summary import bpe
from tracker.model import Severity


def dump(doc: Any, **kw: Any) -> bytes:
    return json.dumps(doc, **kw).encode()


def test_reserialised_tokenizer_is_not_a_token_change() -> None:
    doc = bpe(["a b"])
    pairs = copy.deepcopy(doc)
    pairs["model"]["merges"] = [["a", "b"]]
    d = diff_files({"tokenizer.json": dump(doc)}, {"tokenizer.json": dump(pairs, indent=2)})
    c = only(d, "tokenizer.json")
    assert c.topics == ("tokenizer.format",) and c.severity is None


def test_vocab_added_tokens_and_pipeline() -> None:
    old = bpe(["a b"])
    new = copy.deepcopy(old)
    new["model"]["vocab"]["c"] = 6
    new["added_tokens"].append({"id": 7, "content": "<|tool|>", "special": True})
    new["decoder"] = {"type": "Metaspace"}
    new["model"]["byte_fallback"] = True
    d = diff_files({"tokenizer.json": dump(old)}, {"tokenizer.json": dump(new)})
    c = only(d, "tokenizer.json")
    assert set(c.topics) == {
        "tokenizer.vocab",
        "tokenizer.added_tokens",
        "tokenizer.decoder",
        "tokenizer.pipeline",
    }
    assert c.severity is Severity.HIGH
    assert c.detail["vocab"]["old"]["size"] == 6 and c.detail["vocab"]["new"]["size"] == 7
    assert c.detail["added_tokens"]["added"] == [[7, "<|tool|>", True]]
    assert set(c.detail["sections"]) == {"decoder", "settings"}
    assert c.summary.startswith("tokenizer.json: vocab 6 -> 7, added tokens +1/-0")


def test_decoder_only_is_moderate() -> None:
    old = bpe(["a b"])
    new = copy.deepcopy(old)
    new["decoder"] = None
    d = diff_files({"tokenizer.json": dump(old)}, {"tokenizer.json": dump(new)})
    assert only(d, "tokenizer.json").severity is Severity.MODERATE


def test_vocab_files_and_added_tokens_json() -> None:
    d = diff_files(
        {
            "tokenizer.model": lfs("a", 10),
            "vocab.txt": b"[PAD]\n",
            "added_tokens.json": b'{"<x>": 5}',
        },
        {
            "tokenizer.model": lfs("b", 11),
            "merges.txt": b"a b\n",
            "added_tokens.json": b'{"<y>": 5}',
        },
    )
    assert only(d, "tokenizer.model").topics == ("tokenizer.vocab_file.changed",)
    assert only(d, "vocab.txt").topics == ("tokenizer.vocab_file.removed",)
    assert only(d, "merges.txt").topics == ("tokenizer.vocab_file.added",)
    assert only(d, "added_tokens.json").topics == ("tokenizer.added_tokens",)
    assert {c.severity for c in d.changes} == {Severity.HIGH}


def test_unparseable_tokenizer_json() -> None:
    d = diff_files({"tokenizer.json": dump(bpe([]))}, {"tokenizer.json": b"{broken"})
    c = only(d, "tokenizer.json")
    assert c.topics == ("tokenizer.unreadable",) and c.severity is Severity.MODERATE
