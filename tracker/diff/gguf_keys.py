"""GGUF metadata changes: the tokenizer keys and the architecture hyper-parameters.

Layer 1 (stage 4, diff), pure. A GGUF header carries what a transformers repo keeps in
tokenizer.json / tokenizer_config.json and config.json; its changes get the topics (and so
the severities) of those files: special tokens, vocab and merges, the pre-tokenizer, and
``<arch>.context_length`` / heads / rope / experts as ``config`` topics. Descriptive
``general.*`` keys (name, license, url) are kept apart and raise no advisory.
"""

from __future__ import annotations

from typing import Any

from tracker.diff import topics as t
from tracker.diff.jsondiff import short
from tracker.model import Change, ChangeKind
from tracker.model.inside import GgufInfo

MAX_FIELDS = 200
_VOCAB = {"tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type",
          "tokenizer.ggml.merges", "tokenizer.ggml.model"}  # fmt: skip
_PIPELINE = {"tokenizer.ggml.pre", "tokenizer.ggml.add_space_prefix",
             "tokenizer.ggml.remove_extra_whitespaces", "tokenizer.ggml.precompiled_charsmap"}  # fmt: skip
_ADD_SPECIAL = {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token",
                "tokenizer.ggml.add_sep_token"}  # fmt: skip
_ARCH_SUFFIXES = {
    "block_count", "embedding_length", "feed_forward_length", "vocab_size",
    "attention.head_count", "attention.head_count_kv", "attention.key_length",
    "attention.value_length", "expert_count", "expert_used_count", "expert_shared_count",
    "expert_feed_forward_length", "leading_dense_block_count", "attention.q_lora_rank",
    "attention.kv_lora_rank", "tie_word_embeddings",
}  # fmt: skip
_WEIGHT_KEYS = {"general.file_type", "general.quantization_version", "general.alignment"}
_LABELS = {"tokens": "vocab", "merges": "merges", "model": "tokenizer model",
           "pre": "pre-tokenizer"}  # fmt: skip


def config_topic(key: str, arch: str | None) -> str | None:
    """The config.json topic of a GGUF key; None for keys that are not architecture keys."""
    if key == "general.architecture":
        return t.CONFIG_ARCHITECTURE
    if arch is None or not key.startswith(arch + "."):
        return None
    rest = key[len(arch) + 1 :]
    if rest == "context_length":
        return t.CONFIG_CONTEXT
    if rest.startswith("rope."):
        return t.CONFIG_ROPE
    if rest.startswith("attention.sliding_window"):
        return t.CONFIG_SLIDING_WINDOW
    if rest in _ARCH_SUFFIXES:
        return t.CONFIG_ARCHITECTURE
    return t.CONFIG_OTHER


def tokenizer_topic(key: str) -> str | None:
    if not key.startswith("tokenizer."):
        return None
    if key in _VOCAB:
        return t.TOKENIZER_VOCAB
    if key in _PIPELINE:
        return t.TOKENIZER_PIPELINE
    if key in _ADD_SPECIAL:
        return t.TOKENIZER_ADD_SPECIAL
    if key.endswith("_token_id"):
        return t.TOKENIZER_SPECIAL_TOKENS
    return t.TOKENIZER_CONFIG


def _value(value: Any) -> Any:
    """Arrays kept as a summary show as their count."""
    if isinstance(value, dict) and "count" in value and "sha256" in value:
        return {"count": value["count"], "sha256": value["sha256"][:16]}
    return value


def _describe(key: str, old: Any, new: Any) -> str:
    label = key.rsplit(".", 1)[-1]
    if isinstance(old, dict) and isinstance(new, dict) and "count" in old and "count" in new:
        what = _LABELS.get(label, label)
        if old["count"] != new["count"]:
            return f"{what} {old['count']} -> {new['count']}"
        return f"{what} of {new['count']} re-mapped"
    return f"{key} {short(old)} -> {short(new)}"


def _fields(old: GgufInfo, new: GgufInfo, topic_of: Any) -> list[dict[str, Any]]:
    rows = []
    for key in sorted(old.metadata.keys() | new.metadata.keys()):
        a, b = old.metadata.get(key), new.metadata.get(key)
        if a == b:
            continue
        topic = topic_of(key)
        if topic is not None:
            rows.append({"key": key, "old": _value(a), "new": _value(b), "topic": topic})
    return rows


def _token(value: tuple[int, str | None] | None) -> str:
    if value is None:
        return "(none)"
    return f"{value[1]!r} ({value[0]})" if value[1] is not None else f"id {value[0]}"


def tokenizer_change(path: str, old: GgufInfo, new: GgufInfo) -> Change | None:
    """Special tokens, vocab / merges (count and hash), tokenizer model and pre-tokenizer."""
    rows = [r for r in _fields(old, new, tokenizer_topic) if not r["key"].endswith("_token_id")]
    parts: list[str] = []
    topics = {r["topic"] for r in rows}
    special = []
    for name in sorted(old.special_tokens.keys() | new.special_tokens.keys()):
        a, b = old.special_tokens.get(name), new.special_tokens.get(name)
        if a != b:
            special.append({"token": name, "old": list(a) if a else None, "new": list(b) if b else None})
            parts.append(f"{name} {_token(a)} -> {_token(b)}")
    if special:
        topics.add(t.TOKENIZER_SPECIAL_TOKENS)
    if not topics:
        return None
    parts += [_describe(r["key"], r["old"], r["new"]) for r in rows]
    return Change(
        ChangeKind.TOKENIZER,
        path,
        "GGUF tokenizer: " + ", ".join(parts[:4]) + (f" and {len(parts) - 4} more" if len(parts) > 4 else ""),
        tuple(sorted(topics)),
        detail={"op": "changed", "special_tokens": special, "fields": rows[:MAX_FIELDS]},
    )


def config_change(path: str, old: GgufInfo, new: GgufInfo) -> Change | None:
    """Architecture hyper-parameters, with config.json's topics (and so its severities)."""
    arch = new.architecture or old.architecture

    def topic_of(key: str) -> str | None:
        topic = config_topic(key, arch)
        if topic is None and not key.startswith("tokenizer.") and key not in _WEIGHT_KEYS:
            return t.CONFIG_GGUF_METADATA
        return topic

    rows = _fields(old, new, topic_of)
    if not rows:
        return None
    ranked = sorted(rows, key=lambda r: (r["topic"] in (t.CONFIG_OTHER, t.CONFIG_GGUF_METADATA), r["key"]))
    shown = [_describe(r["key"], r["old"], r["new"]) for r in ranked[:3]]
    more = len(rows) - len(shown)
    return Change(
        ChangeKind.CONFIG,
        path,
        "GGUF metadata: " + ", ".join(shown) + (f" and {more} more" if more > 0 else ""),
        tuple(sorted({r["topic"] for r in rows})),
        detail={"op": "changed", "fields": rows[:MAX_FIELDS], "fields_total": len(rows)},
    )
