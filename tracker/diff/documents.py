"""Changes of the JSON documents: config, generation config, tokenizer config, special tokens.

Layer 1 (stage 4, diff), pure. One :class:`~tracker.model.Change` per changed file, carrying
every changed field (``detail["fields"]``) and the union of their topics; the summary names
the most telling fields first. A file that changed but could not be parsed on one side is
reported as unreadable rather than silently skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracker.diff import topics as t
from tracker.diff.fields import classify
from tracker.diff.jsondiff import MISSING, FieldChange, diff_json, short
from tracker.diff.sides import Sides
from tracker.model import Change, ChangeKind

MAX_FIELDS = 200
_SUMMARY_FIELDS = 3
_PRIORITY = (
    t.CONFIG_AUTO_MAP_ADDED,
    t.CONFIG_AUTO_MAP_CHANGED,
    t.TOKENIZER_AUTO_MAP_ADDED,
    t.TOKENIZER_AUTO_MAP_CHANGED,
    t.CONFIG_ARCHITECTURE,
    t.CONFIG_DTYPE,
    t.CONFIG_QUANTIZATION,
    t.CONFIG_ROPE,
    t.CONFIG_CONTEXT,
    t.CONFIG_SLIDING_WINDOW,
    t.TOKENIZER_SPECIAL_TOKENS,
    t.TOKENIZER_ADD_SPECIAL,
    t.TOKENIZER_ADDED_TOKENS,
    t.CONFIG_TOKEN_IDS,
    t.GENERATION_TOKEN_IDS,
    t.GENERATION_SAMPLING,
)


@dataclass(frozen=True, slots=True)
class DocSpec:
    """One diffed JSON document: its file, change kind, Artifacts attribute and topics."""

    kind: str  # the field classifier: config | generation_config | tokenizer
    path: str
    change_kind: ChangeKind
    attr: str
    unreadable: str


DOCUMENTS = (
    DocSpec("config", "config.json", ChangeKind.CONFIG, "config", t.CONFIG_UNREADABLE),
    DocSpec(
        "generation_config",
        "generation_config.json",
        ChangeKind.GENERATION_CONFIG,
        "generation_config",
        t.GENERATION_UNREADABLE,
    ),
    DocSpec(
        "tokenizer",
        "tokenizer_config.json",
        ChangeKind.TOKENIZER,
        "tokenizer_config",
        t.TOKENIZER_UNREADABLE,
    ),
    DocSpec(
        "tokenizer",
        "special_tokens_map.json",
        ChangeKind.TOKENIZER,
        "special_tokens_map",
        t.TOKENIZER_UNREADABLE,
    ),
)


def describe(fc: FieldChange) -> str:
    """``rope_scaling.factor 8.0 -> 32.0``, ``do_sample added: true``, ``pad_token_id removed``."""
    if fc.op == "added":
        return f"{fc.path} added: {short(fc.new)}"
    if fc.op == "removed":
        return f"{fc.path} removed (was {short(fc.old)})"
    return f"{fc.path} {short(fc.old)} -> {short(fc.new)}"


def _rank(topic: str) -> int:
    return _PRIORITY.index(topic) if topic in _PRIORITY else len(_PRIORITY)


def _summary(spec: DocSpec, op: str, ranked: list[tuple[str, FieldChange]]) -> str:
    if op == "removed":
        return f"{spec.path} removed ({len(ranked)} fields)"
    if op == "added":
        shown = [f"{fc.path}={short(fc.new)}" for _, fc in ranked[:_SUMMARY_FIELDS]]
    else:
        shown = [describe(fc) for _, fc in ranked[:_SUMMARY_FIELDS]]
    more = len(ranked) - len(shown)
    text = ", ".join(shown) + (f" and {more} more" if more > 0 else "")
    if op == "added":
        return f"{spec.path} added: {text}"
    return text if len(ranked) <= _SUMMARY_FIELDS else f"{spec.path}: {text}"


def _unreadable(spec: DocSpec, sides: Sides, op: str, missing: list[str]) -> Change:
    reasons = {side: sides.issue(side, spec.path) or "not parsed" for side in missing}
    why = "; ".join(f"{k}: {v}" for k, v in reasons.items())
    return Change(
        kind=spec.change_kind,
        path=spec.path,
        summary=f"{spec.path} {op} but could not be read ({why})",
        topics=(spec.unreadable,),
        detail={"op": op, "unreadable": reasons},
    )


def diff_document(spec: DocSpec, sides: Sides) -> Change | None:
    """The change of one JSON document between the two revisions, if its content differs."""
    op = sides.file_op(spec.path)
    if op is None:
        return None
    old_doc: Any = getattr(sides.base, spec.attr) if op != "added" else {}
    new_doc: Any = getattr(sides.head, spec.attr) if op != "removed" else {}
    if old_doc is None or new_doc is None:
        missing = [s for s, d in (("base", old_doc), ("head", new_doc)) if d is None]
        return _unreadable(spec, sides, op, missing)
    ranked = sorted(
        ((classify(spec.kind, fc, old_doc, new_doc), fc) for fc in diff_json(old_doc, new_doc)),
        key=lambda tf: (_rank(tf[0]), tf[1].keys),
    )
    if not ranked:
        return None  # same fields: the coverage pass reports the re-serialised file
    fields = [fc.to_detail() for _, fc in sorted(ranked, key=lambda tf: tf[1].keys)]
    for (topic, _), d in zip(sorted(ranked, key=lambda tf: tf[1].keys), fields, strict=True):
        d["topic"] = topic
    return Change(
        kind=spec.change_kind,
        path=spec.path,
        summary=_summary(spec, op, ranked),
        topics=tuple(sorted({topic for topic, _ in ranked})),
        detail={
            "op": op,
            "fields": fields[:MAX_FIELDS],
            "fields_total": len(fields),
            "truncated": len(fields) > MAX_FIELDS,
        },
    )


def diff_documents(sides: Sides) -> list[Change]:
    """Changes of every JSON document that differs."""
    out = []
    for spec in DOCUMENTS:
        change = diff_document(spec, sides)
        if change is not None:
            out.append(change)
    return out


__all__ = ["DOCUMENTS", "MISSING", "DocSpec", "describe", "diff_document", "diff_documents"]
