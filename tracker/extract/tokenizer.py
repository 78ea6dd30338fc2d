"""Summarise tokenizer.json into what changes a model's tokens, not its bytes.

Layer 1 (stage 3, extract), pure. A tokenizer.json is megabytes of vocabulary; the diff needs
its size and identity (a hash), the merges, the added tokens, and the pipeline sections
(normalizer, pre-tokenizer, post-processor, decoder) as canonical JSON. Serialisation details
that do not change tokens (merges as ``"a b"`` strings or ``["a", "b"]`` pairs, key order,
whitespace) do not change the summary.
"""

from __future__ import annotations

import hashlib
from typing import Any

from tracker.errors import InvalidContent
from tracker.extract.jsonsafe import canonical_json
from tracker.model import TokenizerSummary

#: Strings longer than this inside a pipeline section (a normalizer's precompiled charsmap)
#: are replaced by their hash, so the summary stays small and still changes with them.
LONG_STRING = 512
_SECTIONS = ("normalizer", "pre_tokenizer", "post_processor", "decoder")


def _digest(value: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(value).encode()).hexdigest()


def _shrink(value: Any) -> Any:
    """Replace long strings by a digest, recursively (depth is bounded by the parser)."""
    if isinstance(value, str) and len(value) > LONG_STRING:
        return f"<{len(value)} chars {hashlib.sha256(value.encode()).hexdigest()[:16]}>"
    if isinstance(value, dict):
        return {k: _shrink(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shrink(v) for v in value]
    return value


def _merges(raw: Any) -> list[list[str]]:
    """Merges as [left, right] pairs whatever the file's format."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InvalidContent("tokenizer.json model.merges is not a list")
    pairs: list[list[str]] = []
    for m in raw:
        if isinstance(m, str):
            left, _, right = m.partition(" ")
            pairs.append([left, right])
        elif isinstance(m, list) and len(m) == 2 and all(isinstance(p, str) for p in m):
            pairs.append([m[0], m[1]])
        else:
            raise InvalidContent("tokenizer.json has a merge that is neither 'a b' nor [a, b]")
    return pairs


def _added_tokens(raw: Any) -> tuple[tuple[int, str, bool], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InvalidContent("tokenizer.json added_tokens is not a list")
    out: list[tuple[int, str, bool]] = []
    for t in raw:
        if not isinstance(t, dict):
            raise InvalidContent("tokenizer.json has an added token that is not an object")
        tid, content = t.get("id"), t.get("content")
        if type(tid) is not int or not isinstance(content, str):
            raise InvalidContent("tokenizer.json has an added token without id/content")
        out.append((tid, content, bool(t.get("special", False))))
    return tuple(sorted(out))


def summarise_tokenizer(doc: Any) -> TokenizerSummary:
    """The structural summary of a parsed tokenizer.json; InvalidContent when it is not one."""
    if not isinstance(doc, dict):
        raise InvalidContent("tokenizer.json is not a JSON object")
    model = doc.get("model")
    if model is None:
        model = {}
    if not isinstance(model, dict):
        raise InvalidContent("tokenizer.json model is not an object")
    vocab = model.get("vocab")
    if vocab is None:
        vocab = {}
    if not isinstance(vocab, (dict, list)):
        raise InvalidContent("tokenizer.json model.vocab is neither an object nor a list")
    merges = _merges(model.get("merges"))
    model_type = model.get("type")
    settings = {
        "model": _shrink({k: v for k, v in model.items() if k not in ("vocab", "merges")}),
        "truncation": doc.get("truncation"),
        "padding": doc.get("padding"),
    }
    sections = {s: canonical_json(_shrink(doc.get(s))) for s in _SECTIONS}
    return TokenizerSummary(
        model_type=model_type if isinstance(model_type, str) else None,
        vocab_size=len(vocab),
        vocab_hash=_digest(vocab),
        merges_count=len(merges),
        merges_hash=_digest(merges),
        added_tokens=_added_tokens(doc.get("added_tokens")),
        normalizer=sections["normalizer"],
        pre_tokenizer=sections["pre_tokenizer"],
        post_processor=sections["post_processor"],
        decoder=sections["decoder"],
        settings=canonical_json(settings),
    )
