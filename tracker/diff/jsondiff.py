"""Structural diff of two JSON documents, flattened to ``path: old -> new`` field changes.

Layer 1 (stage 4, diff), pure. deepdiff finds what changed inside objects; a change anywhere
inside a list is reported once, as the whole list changing (``eos_token_id: [1, 2] -> [1, 2,
3]``): element-wise list diffs are neither stable nor symmetric, and for config lists the
whole value is what a reader wants. Values shown in ``detail`` are bounded by
:func:`excerpt`, so a 20,000-label ``id2label`` does not end up in an advisory.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from deepdiff import DeepDiff


class _Missing:
    """The value of a key on the side where it does not exist."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
EXCERPT_CHARS = 400
_BARE_KEY = re.compile(r"[A-Za-z0-9_\-]+")


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One changed key path of a JSON document."""

    keys: tuple[str, ...]
    op: str  # added | removed | changed
    old: Any
    new: Any

    @property
    def path(self) -> str:
        return format_path(self.keys)

    def to_detail(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "keys": list(self.keys), "op": self.op}
        if self.old is not MISSING:
            out["old"] = excerpt(self.old)
        if self.new is not MISSING:
            out["new"] = excerpt(self.new)
        return out


def format_path(keys: tuple[str, ...]) -> str:
    """``rope_scaling.factor``; keys that are not plain words are quoted: ``a["b.c"]``."""
    if not keys:
        return "(document)"
    out = ""
    for k in keys:
        if _BARE_KEY.fullmatch(k):
            out += f".{k}" if out else k
        else:
            out += f"[{json.dumps(k, ensure_ascii=False)}]"
    return out


def compared_text(value: Any) -> str:
    """The JSON text two values are compared by: members equal in it produce no change."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


_dump = compared_text


def excerpt(value: Any) -> Any:
    """The value itself when small; else a short description with a content hash."""
    text = _dump(value)
    if len(text) <= EXCERPT_CHARS:
        return value
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    if isinstance(value, dict):
        return f"<object with {len(value)} keys, sha256 {digest}>"
    if isinstance(value, list):
        return f"<list of {len(value)} items, sha256 {digest}>"
    if isinstance(value, str):
        return f"{value[:EXCERPT_CHARS]}... <{len(value)} chars, sha256 {digest}>"
    return f"<{len(text)} chars, sha256 {digest}>"


def short(value: Any, limit: int = 40) -> str:
    """A one-line rendering for summaries: ``8.0``, ``"<s>"``, ``[3 items]``."""
    if value is MISSING:
        return "(absent)"
    if isinstance(value, list) and len(_dump(value)) > limit:
        return f"[{len(value)} items]"
    if isinstance(value, dict) and len(_dump(value)) > limit:
        return f"{{{len(value)} keys}}"
    text = _dump(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def lookup(doc: Any, keys: tuple[str, ...]) -> Any:
    """The value at ``keys`` in ``doc``, or MISSING."""
    cur = doc
    for k in keys:
        if not isinstance(cur, dict) or k not in cur:
            return MISSING
        cur = cur[k]
    return cur


def _shallow(old: Any, new: Any, prefix: tuple[str, ...]) -> list[FieldChange]:
    """A deepdiff-free fallback: objects key by key, anything else as one value."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[FieldChange] = []
        for k in sorted(set(old) | set(new)):
            if k not in new:
                out.append(FieldChange((*prefix, k), "removed", old[k], MISSING))
            elif k not in old:
                out.append(FieldChange((*prefix, k), "added", MISSING, new[k]))
            elif _dump(old[k]) != _dump(new[k]):
                out.extend(_shallow(old[k], new[k], (*prefix, k)))
        return out
    return [] if _dump(old) == _dump(new) else [FieldChange(prefix, "changed", old, new)]


def _without_equal(old: Any, new: Any) -> tuple[Any, Any]:
    """Both documents less the object members whose values are the same JSON, at every depth.

    DeepDiff walks every node and builds an object per node: on a tokenizer_config.json with
    hundreds of added tokens that was seconds for a one-line change (benchmarks/new_revision.py).
    Members equal as canonical JSON produce no report, so dropping them first changes nothing in
    the result (``1`` and ``1.0``, or ``true`` and ``1``, dump differently and stay).
    """
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return old, new
    kept_old, kept_new = {}, {}
    for k in old.keys() | new.keys():
        if k in old and k in new:
            a, b = old[k], new[k]
            if a is b or _dump(a) == _dump(b):
                continue
            kept_old[k], kept_new[k] = _without_equal(a, b)
        elif k in old:
            kept_old[k] = old[k]
        else:
            kept_new[k] = new[k]
    return kept_old, kept_new


def diff_json(old: Any, new: Any) -> list[FieldChange]:
    """Field changes from ``old`` to ``new`` (absent documents are passed as ``{}``)."""
    try:
        pruned_old, pruned_new = _without_equal(old, new)
    except (TypeError, ValueError, RecursionError):  # not plain JSON: let DeepDiff see it all
        pruned_old, pruned_new = old, new
    return field_changes(old, new, pruned_old, pruned_new)


def field_changes(old: Any, new: Any, walk_old: Any, walk_new: Any) -> list[FieldChange]:
    """The changes DeepDiff finds between ``walk_old`` and ``walk_new`` (the documents, or the
    parts of them that differ), with their values looked up in ``old`` and ``new``."""
    try:
        tree = DeepDiff(
            walk_old,
            walk_new,
            view="tree",
            ignore_nan_inequality=True,
            threshold_to_diff_deeper=0,
            verbose_level=2,
        )
    except Exception:  # deepdiff on hostile input: fall back to a plain walk
        return _shallow(old, new, ())
    seen: dict[tuple[str, ...], FieldChange] = {}
    for report, levels in tree.items():
        for level in levels:
            path = level.path(output_format="list")
            keys: list[str] = []
            in_list = False
            for p in path:
                if not isinstance(p, str):
                    in_list = True
                    break
                keys.append(p)
            key = tuple(keys)
            if key in seen:
                continue
            o, n = lookup(old, key), lookup(new, key)
            if in_list or key == ():
                op = "changed"
            elif report == "dictionary_item_added":
                op = "added"
            elif report == "dictionary_item_removed":
                op = "removed"
            else:
                op = "changed"
            seen[key] = FieldChange(key, op, o, n)
    return [seen[k] for k in sorted(seen)]
