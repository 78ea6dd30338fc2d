"""Tokenizer changes: tokenizer.json's structural summary, vocabulary files, added_tokens.json.

Layer 1 (stage 4, diff), pure. tokenizer.json is compared through its summary (vocab size
and hash, merges, added tokens, pipeline sections), so a re-serialised file with the same
tokens is not a tokenizer change. Binary vocabularies (``tokenizer.model``, ``vocab.txt``,
...) are compared by content id: replaced means the tokens may have changed.
"""

from __future__ import annotations

import posixpath
from typing import Any

from tracker.diff import topics as t
from tracker.diff.sides import Sides
from tracker.model import Change, ChangeKind, TokenizerSummary
from tracker.model.files import VOCAB_FILES

TOKENIZER_JSON = "tokenizer.json"
ADDED_TOKENS_JSON = "added_tokens.json"
_EMPTY = TokenizerSummary(None, 0, "", 0, "", (), "null", "null", "null", "null", "{}")
_SECTIONS = (
    ("normalizer", t.TOKENIZER_PIPELINE),
    ("pre_tokenizer", t.TOKENIZER_PIPELINE),
    ("post_processor", t.TOKENIZER_PIPELINE),
    ("settings", t.TOKENIZER_PIPELINE),
    ("decoder", t.TOKENIZER_DECODER),
)
MAX_TOKENS_SHOWN = 100
_SECTION_CHARS = 2000


def is_vocab_file(path: str) -> bool:
    return "/" not in path and (path in VOCAB_FILES or path.endswith(".tiktoken"))


def _pair(old: Any, new: Any) -> dict[str, Any]:
    return {"old": old, "new": new}


def _clip(text: str) -> str:
    return text if len(text) <= _SECTION_CHARS else text[:_SECTION_CHARS] + "..."


def compare_summaries(
    old: TokenizerSummary, new: TokenizerSummary
) -> tuple[list[str], list[str], dict[str, Any]]:
    """(topics, summary parts, detail) of two tokenizer summaries."""
    topics: set[str] = set()
    parts: list[str] = []
    detail: dict[str, Any] = {}
    if (old.model_type, old.vocab_hash) != (new.model_type, new.vocab_hash):
        topics.add(t.TOKENIZER_VOCAB)
        detail["model_type"] = _pair(old.model_type, new.model_type)
        detail["vocab"] = _pair(
            {"size": old.vocab_size, "hash": old.vocab_hash},
            {"size": new.vocab_size, "hash": new.vocab_hash},
        )
        if old.vocab_size != new.vocab_size:
            parts.append(f"vocab {old.vocab_size} -> {new.vocab_size}")
        else:
            parts.append(f"vocab of {new.vocab_size} re-mapped")
    if old.merges_hash != new.merges_hash:
        topics.add(t.TOKENIZER_VOCAB)
        detail["merges"] = _pair(
            {"count": old.merges_count, "hash": old.merges_hash},
            {"count": new.merges_count, "hash": new.merges_hash},
        )
        parts.append(f"merges {old.merges_count} -> {new.merges_count}")
    gone = sorted(set(old.added_tokens) - set(new.added_tokens))
    came = sorted(set(new.added_tokens) - set(old.added_tokens))
    if gone or came:
        topics.add(t.TOKENIZER_ADDED_TOKENS)
        detail["added_tokens"] = {
            "removed": [list(x) for x in gone[:MAX_TOKENS_SHOWN]],
            "added": [list(x) for x in came[:MAX_TOKENS_SHOWN]],
            "removed_total": len(gone),
            "added_total": len(came),
        }
        parts.append(f"added tokens +{len(came)}/-{len(gone)}")
    for name, topic in _SECTIONS:
        a, b = getattr(old, name), getattr(new, name)
        if a != b:
            topics.add(topic)
            detail.setdefault("sections", {})[name] = _pair(_clip(a), _clip(b))
            parts.append(f"{name} changed")
    return sorted(topics), parts, detail


def _tokenizer_json(sides: Sides) -> Change | None:
    op = sides.file_op(TOKENIZER_JSON)
    if op is None:
        return None
    old = sides.base.tokenizer if op != "added" else _EMPTY
    new = sides.head.tokenizer if op != "removed" else _EMPTY
    if old is None or new is None:
        reasons = {s: sides.issue(s, TOKENIZER_JSON) or "not parsed" for s in ("base", "head")}
        side = "base" if old is None else "head"
        return Change(
            ChangeKind.TOKENIZER,
            TOKENIZER_JSON,
            f"tokenizer.json {op} but could not be read ({side}: {reasons[side]})",
            (t.TOKENIZER_UNREADABLE,),
            detail={"op": op, "unreadable": {side: reasons[side]}},
        )
    topics, parts, detail = compare_summaries(old, new)
    if not topics:
        return None
    detail["op"] = op
    lead = {"added": "tokenizer.json added", "removed": "tokenizer.json removed"}.get(op)
    summary = lead if lead else "tokenizer.json: " + ", ".join(parts)
    return Change(ChangeKind.TOKENIZER, TOKENIZER_JSON, summary, tuple(topics), detail=detail)


def _file_change(sides: Sides, path: str, op: str) -> Change:
    old, new = sides.base_files.get(path), sides.head_files.get(path)
    if path == ADDED_TOKENS_JSON:
        topics: tuple[str, ...] = (t.TOKENIZER_ADDED_TOKENS,)
    else:
        topics = (
            t.by_op(
                op,
                t.TOKENIZER_VOCAB_FILE_ADDED,
                t.TOKENIZER_VOCAB_FILE_CHANGED,
                t.TOKENIZER_VOCAB_FILE_REMOVED,
            ),
        )
    name = posixpath.basename(path)
    if op == "changed" and old is not None and new is not None:
        summary = f"{name} replaced ({old.size} -> {new.size} bytes)"
    else:
        summary = f"{name} {op}"
    return Change(
        ChangeKind.TOKENIZER,
        path,
        summary,
        topics,
        detail={
            "op": op,
            "old": {"size": old.size, "content_id": old.content_id} if old else None,
            "new": {"size": new.size, "content_id": new.content_id} if new else None,
        },
    )


def diff_tokenizer_files(sides: Sides) -> list[Change]:
    """tokenizer.json, vocabulary files and added_tokens.json."""
    out: list[Change] = []
    tj = _tokenizer_json(sides)
    if tj is not None:
        out.append(tj)
    for path, op in sides.changed_paths().items():
        if is_vocab_file(path) or path == ADDED_TOKENS_JSON:
            out.append(_file_change(sides, path, op))
    return out
