"""Which topic a changed JSON field belongs to, per document (config, generation, tokenizer).

Layer 1 (stage 4, diff), pure. The key lists say which fields decide a model's structure,
context, positions, precision and token ids (the fields DESIGN.md's severity table calls
out); everything else is "other", and pure bookkeeping (``_name_or_path``,
``transformers_version``) is kept apart so it never raises an advisory on its own.
"""

from __future__ import annotations

from typing import Any

from tracker.diff import topics as t
from tracker.diff.jsondiff import MISSING, FieldChange, lookup
from tracker.diff.keys import (
    ADD_SPECIAL,
    ADDED_TOKENS,
    ARCHITECTURE,
    CONFIG_BOOKKEEPING,
    CONTEXT,
    DTYPE,
    GENERATION_BOOKKEEPING,
    QUANT,
    ROPE,
    SAMPLING,
    SLIDING,
    SPECIAL_TOKEN_KEYS,
    SUBCONFIGS,
    TOKEN_IDS,
    TOKENIZER_BOOKKEEPING,
)

#: Keys that name remote code to run: a class in a repo file, or a pipeline implementation.
REMOTE_CODE_KEYS = ("auto_map", "custom_pipelines")


def _auto_map_topic(old_doc: Any, new_doc: Any, added: str, changed: str, removed: str) -> str:
    had = any(lookup(old_doc, (k,)) is not MISSING for k in REMOTE_CODE_KEYS)
    has = any(lookup(new_doc, (k,)) is not MISSING for k in REMOTE_CODE_KEYS)
    if has and not had:
        return added
    if had and not has:
        return removed
    return changed


def config_topic(keys: tuple[str, ...], old_doc: Any, new_doc: Any) -> str:
    """Topic of a changed config.json field."""
    if not keys:
        return t.CONFIG_OTHER
    if keys[0] in SUBCONFIGS and len(keys) > 1:
        keys = keys[1:]
    k = keys[0]
    if k in REMOTE_CODE_KEYS:
        return _auto_map_topic(
            old_doc,
            new_doc,
            t.CONFIG_AUTO_MAP_ADDED,
            t.CONFIG_AUTO_MAP_CHANGED,
            t.CONFIG_AUTO_MAP_REMOVED,
        )
    for names, topic in (
        (ARCHITECTURE, t.CONFIG_ARCHITECTURE),
        (CONTEXT, t.CONFIG_CONTEXT),
        (ROPE, t.CONFIG_ROPE),
        (SLIDING, t.CONFIG_SLIDING_WINDOW),
        (DTYPE, t.CONFIG_DTYPE),
        (QUANT, t.CONFIG_QUANTIZATION),
        (TOKEN_IDS, t.CONFIG_TOKEN_IDS),
        (CONFIG_BOOKKEEPING, t.CONFIG_BOOKKEEPING),
    ):
        if k in names:
            return topic
    return t.CONFIG_OTHER


def generation_topic(keys: tuple[str, ...], old_doc: Any, new_doc: Any) -> str:
    """Topic of a changed generation_config.json field."""
    k = keys[0] if keys else ""
    if k in TOKEN_IDS:
        return t.GENERATION_TOKEN_IDS
    if k in SAMPLING:
        return t.GENERATION_SAMPLING
    if k in GENERATION_BOOKKEEPING:
        return t.GENERATION_BOOKKEEPING
    return t.GENERATION_OTHER


def token_content(value: Any) -> Any:
    """A special token's text, whether written as a string or an AddedToken object."""
    return value.get("content") if isinstance(value, dict) else value


def _token_flags(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if k != "content" and not k.startswith("__")}


def _special_token_topic(old: Any, new: Any) -> str:
    """Content or flags changed: the tokens change; same content re-spelled: format only."""
    if old is MISSING or new is MISSING or token_content(old) != token_content(new):
        return t.TOKENIZER_SPECIAL_TOKENS
    of, nf = _token_flags(old), _token_flags(new)
    if any(of[k] != nf[k] for k in of.keys() & nf.keys()):
        return t.TOKENIZER_SPECIAL_TOKENS
    return t.TOKENIZER_SPECIAL_TOKENS_FORMAT


def tokenizer_topic(keys: tuple[str, ...], old_doc: Any, new_doc: Any) -> str:
    """Topic of a changed tokenizer_config.json / special_tokens_map.json field."""
    k = keys[0] if keys else ""
    if k in SPECIAL_TOKEN_KEYS:
        return _special_token_topic(lookup(old_doc, (k,)), lookup(new_doc, (k,)))
    if k == "auto_map":
        return _auto_map_topic(
            old_doc,
            new_doc,
            t.TOKENIZER_AUTO_MAP_ADDED,
            t.TOKENIZER_AUTO_MAP_CHANGED,
            t.TOKENIZER_AUTO_MAP_REMOVED,
        )
    if k in ADD_SPECIAL:
        return t.TOKENIZER_ADD_SPECIAL
    if k in ADDED_TOKENS:
        return t.TOKENIZER_ADDED_TOKENS
    if k in TOKENIZER_BOOKKEEPING:
        return t.TOKENIZER_BOOKKEEPING
    return t.TOKENIZER_CONFIG


def classify(kind: str, change: FieldChange, old_doc: Any, new_doc: Any) -> str:
    """Dispatch on the document kind: ``config``, ``generation_config`` or ``tokenizer``."""
    fn = {"config": config_topic, "generation_config": generation_topic}.get(kind, tokenizer_topic)
    return fn(change.keys, old_doc, new_doc)
