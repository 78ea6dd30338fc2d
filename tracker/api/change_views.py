"""Stage 8 (read): a stored change as people read it: a sentence, a badge, the rule's reason, tables.

The diff stores structured detail for machines (``op``, ``fields``, ``rendered``,
``tensors_added``...). This module turns it into view objects whose every string is meant
for a reader: field tables (key / before / after), coloured text diffs, the rendered chat
prompts before the template text, compact tokenizer and weight tables. No internal field
name reaches the page. Weight files that changed the same way are grouped ("19 files
added") by :func:`group_changes`. The templates only lay these objects out.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from advisories.rules import reasons
from storage.history_markup import cut, sentence  # the history rows' too, kept in the store
from tracker.model import Change, ChangeKind

MAX_ROWS = 200
MAX_DIFF_LINES = 2000
CELL_MAX = 300

KIND_LABEL = {
    ChangeKind.CONFIG: "Model config",
    ChangeKind.GENERATION_CONFIG: "Generation defaults",
    ChangeKind.TOKENIZER: "Tokenizer",
    ChangeKind.CHAT_TEMPLATE: "Chat template",
    ChangeKind.WEIGHTS: "Weights",
    ChangeKind.CODE: "Custom code",
    ChangeKind.HISTORY: "Branch history",
    ChangeKind.RENAME: "Repo renamed",
    ChangeKind.NAMESPACE_REUSE: "Namespace reused",
    ChangeKind.OTHER: "Other file",
}
PROBE_LABEL = {
    "system_user": "a system prompt and a user message",
    "multi_turn": "a multi-turn conversation",
    "tool_call": "a tool call",
    "no_generation_prompt": "a conversation without the generation prompt",
    "user": "a user message",
}
_SECTION_LABEL = {
    "normalizer": "Normalizer", "pre_tokenizer": "Pre-tokenizer", "post_processor": "Post-processor",
    "decoder": "Decoder", "settings": "Model options (unk token, byte fallback, truncation, padding)",
}
_OP_WORD = {"added": "added", "removed": "removed", "changed": "replaced"}


# -- display blocks ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FieldRow:
    key: str
    old: str
    new: str
    what: str  # "added" | "removed" | "changed"


@dataclass(frozen=True, slots=True)
class FieldTable:
    """JSON changes as key / before / after."""

    rows: tuple[FieldRow, ...]
    more: int = 0
    kind: str = "fields"


@dataclass(frozen=True, slots=True)
class DiffLine:
    cls: str  # add | del | hunk | file | ctx
    text: str


@dataclass(frozen=True, slots=True)
class TextDiff:
    """A unified diff drawn in colour."""

    title: str
    lines: tuple[DiffLine, ...]
    more: int = 0
    note: str = ""
    kind: str = "diff"


@dataclass(frozen=True, slots=True)
class Prompt:
    """What one probe conversation renders to, before and after."""

    label: str
    diff: TextDiff | None = None
    text: str = ""  # the prompt when there is no "before" (a template added)
    note: str = ""  # a template error, said in words


@dataclass(frozen=True, slots=True)
class PromptDiff:
    """The rendered chat-template diff: what a user's prompts become."""

    prompts: tuple[Prompt, ...]
    unchanged: tuple[str, ...] = ()
    kind: str = "prompts"


@dataclass(frozen=True, slots=True)
class Table:
    """A small table with headers; ``folded`` tables are shown behind a summary line."""

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    title: str = ""
    more: int = 0
    folded: bool = False
    kind: str = "table"


@dataclass(frozen=True, slots=True)
class Note:
    text: str
    kind: str = "note"


Block = FieldTable | TextDiff | PromptDiff | Table | Note


@dataclass(frozen=True, slots=True)
class ChangeView:
    """One change (or a group of like weight files) as a reader sees it."""

    label: str
    path: str
    sentence: str
    severity: str | None
    reasons: tuple[str, ...]
    blocks: tuple[Block, ...] = field(default_factory=tuple)
    anchor: str = ""


# -- text helpers ------------------------------------------------------------------------


def show_value(value: Any) -> str:
    """A JSON value as a reader writes it: strings quoted, lists and objects compact."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return cut(json.dumps(value, ensure_ascii=False))
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, int):
        return str(value)
    return cut(json.dumps(value, ensure_ascii=False, sort_keys=True))


def size_text(n: Any) -> str:
    if not isinstance(n, int | float) or isinstance(n, bool):
        return "—"
    if n >= 1e9:
        return f"{n / 1e9:.2f} GB"
    if n >= 1e6:
        return f"{n / 1e6:.1f} MB"
    if n >= 1e3:
        return f"{n / 1e3:.1f} kB"
    return f"{int(n)} B"


def reasons_of(change: Change) -> tuple[str, ...]:
    """Why the change has its severity: the severity rules' own words."""
    return reasons(change)


def diff_lines(text: str) -> tuple[tuple[DiffLine, ...], int]:
    lines = text.strip("\n").split("\n")
    more = max(0, len(lines) - MAX_DIFF_LINES)
    out = []
    for line in lines[:MAX_DIFF_LINES]:
        if line.startswith(("+++", "---")):
            cls = "file"
        elif line.startswith("@@"):
            cls = "hunk"
        elif line.startswith("+"):
            cls = "add"
        elif line.startswith("-"):
            cls = "del"
        else:
            cls = "ctx"
        out.append(DiffLine(cls, line))
    return tuple(out), more


def text_diff(title: str, doc: Any, *, headers: bool = True) -> TextDiff | None:
    """A TextDiff of a stored unified diff (a string, or ``{"diff", "truncated", ...}``)."""
    truncated = False
    if isinstance(doc, Mapping):
        truncated = bool(doc.get("truncated"))
        doc = doc.get("diff")
    if not isinstance(doc, str) or not doc.strip():
        return None
    lines, more = diff_lines(doc)
    if not headers:  # "--- a/old/multi_turn": the title says it in words
        lines = tuple(line for line in lines if line.cls != "file")
    return TextDiff(title, lines, more, "The diff was cut at its size limit." if truncated else "")


# -- per kind of detail ----------------------------------------------------------------


def _field_table(detail: Mapping[str, Any]) -> FieldTable | None:
    fields = detail.get("fields")
    if not isinstance(fields, list) or not fields:
        return None
    rows = []
    for f in fields[:MAX_ROWS]:
        if not isinstance(f, Mapping):
            continue
        what = str(f.get("op") or "changed")
        rows.append(FieldRow(cut(str(f.get("path", "")), 120),
                             "—" if what == "added" else show_value(f.get("old")),
                             "—" if what == "removed" else show_value(f.get("new")), what))
    total = detail.get("fields_total")
    more = (int(total) - len(rows)) if isinstance(total, int) and total > len(rows) else 0
    return FieldTable(tuple(rows), more)


def _prompts(detail: Mapping[str, Any]) -> PromptDiff | None:
    rendered = detail.get("rendered")
    if not isinstance(rendered, list) or not rendered:
        return None
    prompts: list[Prompt] = []
    same: list[str] = []
    for r in rendered:
        if not isinstance(r, Mapping):
            continue
        probe = str(r.get("probe", ""))
        label = PROBE_LABEL.get(probe, probe.replace("_", " "))
        if not r.get("changed"):
            same.append(label)
            continue
        old_err, new_err = r.get("old_error"), r.get("new_error")
        notes = []
        if old_err and not new_err:
            notes.append(f"Before, the template failed here ({cut(str(old_err), 160)}).")
        if new_err:
            notes.append(f"Now the template fails here ({cut(str(new_err), 160)}).")
        diff = text_diff(f"Prompt for {label}", r.get("diff"), headers=False) if r.get("diff") else None
        text = ""
        if diff is None and isinstance(r.get("new"), str) and r.get("old") is None:
            text = str(r["new"])[:20_000]
        prompts.append(Prompt(label, diff, text, " ".join(notes)))
    return PromptDiff(tuple(prompts), tuple(same))


def _tokenizer_tables(detail: Mapping[str, Any]) -> list[Block]:
    blocks: list[Block] = []
    rows: list[tuple[str, str, str]] = []
    for key, label, inner in (("model_type", "Model type", None), ("vocab", "Vocabulary size", "size"),
                              ("merges", "Merges", "count")):
        pair = detail.get(key)
        if not isinstance(pair, Mapping):
            continue
        old, new = pair.get("old"), pair.get("new")
        if inner:
            old = old.get(inner) if isinstance(old, Mapping) else old
            new = new.get(inner) if isinstance(new, Mapping) else new
            hashes = [s.get("hash") for s in (pair.get("old"), pair.get("new")) if isinstance(s, Mapping)]
            if old == new and len(set(hashes)) > 1:
                new = f"{show_value(new)} (other content)"
        rows.append((label, show_value(old) if old not in (None, 0, "") else "—",
                     new if isinstance(new, str) and new.endswith("(other content)") else
                     (show_value(new) if new not in (None, 0, "") else "—")))
    if rows:
        blocks.append(Table(("", "Before", "After"), tuple(rows)))
    tokens = detail.get("added_tokens")
    if isinstance(tokens, Mapping):
        token_rows = []
        for what, key in (("added", "added"), ("removed", "removed")):
            for t in tokens.get(key) or []:
                if isinstance(t, list | tuple) and len(t) >= 3:
                    token_rows.append((str(t[0]), show_value(t[1]), "yes" if t[2] else "no", what))
        total = sum(int(tokens.get(k) or 0) for k in ("added_total", "removed_total"))
        if token_rows:
            shown = token_rows[:MAX_ROWS]
            blocks.append(Table(("Id", "Token", "Special", ""), tuple(shown),
                                title=f"Added tokens: +{tokens.get('added_total', 0)} / -{tokens.get('removed_total', 0)}",
                                more=max(0, total - len(shown)), folded=len(shown) > 12))
    sections = detail.get("sections")
    if isinstance(sections, Mapping):
        for name, pair in sections.items():
            if not isinstance(pair, Mapping):
                continue
            before, after = _pretty_json(pair.get("old")), _pretty_json(pair.get("new"))
            lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), "before", "after", lineterm=""))
            if lines:
                d, more = diff_lines("\n".join(lines))
                blocks.append(TextDiff(_SECTION_LABEL.get(str(name), str(name).replace("_", " ")), d, more))
    return blocks


def _pretty_json(text: Any) -> str:
    if not isinstance(text, str):
        return ""
    try:
        return json.dumps(json.loads(text), indent=1, ensure_ascii=False, sort_keys=True)
    except ValueError:
        return text


def _index_table(detail: Mapping[str, Any]) -> list[Block]:
    rows = []
    for key, label, fmt in (("shards", "Shards", len), ("tensors", "Tensors", None), ("total_size", "Total size", size_text)):
        pair = detail.get(key)
        if not isinstance(pair, Mapping):
            continue
        old, new = pair.get("old"), pair.get("new")
        if fmt is len:
            old, new = (len(v) if isinstance(v, list) else v for v in (old, new))
        elif fmt is size_text:
            old, new = size_text(old), size_text(new)
        rows.append((label, "—" if old in (None, 0) and detail.get("op") == "added" else str(old),
                     "—" if new in (None, 0) and detail.get("op") == "removed" else str(new)))
    blocks: list[Block] = [Table(("", "Before", "After"), tuple(rows))] if rows else []
    moved = detail.get("tensors_moved")
    if isinstance(moved, int) and moved:
        blocks.append(Note(f"{moved} tensors moved to another shard."))
    for key, what in (("tensors_added", "Tensors listed now"), ("tensors_removed", "Tensors no longer listed")):
        names = detail.get(key)
        if isinstance(names, list) and names and detail.get("op") == "changed":
            blocks.append(Table(("Tensor",), tuple((str(n),) for n in names[:MAX_ROWS]),
                                title=f"{what} ({len(names)})", folded=True))
    return blocks


def _tensor_table(tensors: Mapping[str, Any]) -> list[Block]:
    rows = []
    for r in tensors.get("changes") or []:
        if not isinstance(r, Mapping):
            continue
        rows.append((str(r.get("name", "")), _tensor_side(r.get("old")), _tensor_side(r.get("new"))))
    blocks: list[Block] = []
    total = tensors.get("changes_total")
    if rows:
        blocks.append(Table(("Tensor", "Before", "After"), tuple(rows[:MAX_ROWS]),
                            title=f"Tensors that changed ({total if isinstance(total, int) else len(rows)})",
                            more=max(0, (total if isinstance(total, int) else 0) - len(rows[:MAX_ROWS])),
                            folded=len(rows) > 12))
    by_dtype = tensors.get("params_by_dtype")
    if isinstance(by_dtype, Mapping) and by_dtype:
        blocks.append(Table(("Parameters in", "Before", "After"), tuple(
            (str(d), f"{v.get('old', 0):,}", f"{v.get('new', 0):,}") for d, v in by_dtype.items()
            if isinstance(v, Mapping))))
    return blocks


def _tensor_side(side: Any) -> str:
    if isinstance(side, str):
        return side
    if not isinstance(side, Mapping):
        return "—"
    shape = side.get("shape")
    dims = " × ".join(str(d) for d in shape) if isinstance(shape, list) else ""
    return f"{side.get('dtype', '?')} [{dims}]"


def _unreadable(detail: Mapping[str, Any]) -> Note | None:
    bad = detail.get("unreadable")
    if not isinstance(bad, Mapping) or not bad:
        return None
    parts = [f"{'before' if side == 'base' else 'after' if side == 'head' else side}: {cut(str(why), 200)}"
             for side, why in bad.items()]
    return Note("The file could not be read (" + "; ".join(parts) + "), so its content was not compared.")


def plan_delta_blocks(delta: Mapping[str, Any]) -> list[Block]:
    """A stored plan delta as tables: parameters, memory at batch 1, cards that moved."""
    from tracker.api.plan_views import card_name, mode_label  # one vocabulary for plan words

    rows: list[tuple[str, str, str]] = []
    params = delta.get("params")
    if isinstance(params, Mapping):
        for key, label in (("total", "Parameters"), ("active", "Active parameters")):
            pair = params.get(key)
            if isinstance(pair, list) and len(pair) == 2 and pair[0] != pair[1]:
                rows.append((label, f"{pair[0]:,}", f"{pair[1]:,}"))
    memory = delta.get("memory_bytes")
    labels = {"full_finetune": "Full fine-tune, batch 1", "lora": "LoRA r=16, batch 1",
              "serve_weights": "Serve: bf16 weights", "kv_cache": "Serve: KV cache per sequence"}
    if isinstance(memory, Mapping):
        for key, pair in memory.items():
            if isinstance(pair, list) and len(pair) == 2 and pair[0] != pair[1]:
                rows.append((labels.get(str(key), str(key).replace("_", " ")), size_text(pair[0]), size_text(pair[1])))
    dims = delta.get("dims")
    if isinstance(dims, Mapping):
        for key, pair in dims.items():
            if isinstance(pair, list) and len(pair) == 2:
                rows.append((str(key).replace("_", " ").capitalize(), show_value(pair[0]), show_value(pair[1])))
    blocks: list[Block] = []
    if rows:
        blocks.append(Table(("", "Before", "After"), tuple(rows)))
    cards = [c for c in delta.get("cards") or [] if isinstance(c, Mapping)]
    if cards:
        blocks.append(Table(("Card", "Run", "Largest batch before", "After"), tuple(
            (card_name(str(c.get("card"))), mode_label(str(c.get("mode"))), _batch(c.get("before")),
             _batch(c.get("after"))) for c in cards[:MAX_ROWS])))
    for key, what in (("findings_added", "New finding"), ("findings_removed", "Finding gone")):
        for f in delta.get(key) or []:
            if isinstance(f, Mapping):
                blocks.append(Note(f"{what}: {cut(str(f.get('message', '')), 400)}"))
    return blocks


def _batch(n: Any) -> str:
    if n == 0:
        return "does not fit"
    return f"batch {n}" if isinstance(n, int) else "—"


def _file_rows(changes: Sequence[Change]) -> tuple[tuple[str, ...], ...]:
    rows = []
    for c in changes:
        d = c.detail
        old, new = d.get("old"), d.get("new")
        size_old = size_text(old.get("size")) if isinstance(old, Mapping) else "—"
        size_new = size_text(new.get("size")) if isinstance(new, Mapping) else "—"
        rows.append((c.path, _OP_WORD.get(str(d.get("op")), str(d.get("op"))), str(d.get("format") or "—"),
                     size_old, size_new))
    return tuple(rows)


def _is_file_change(c: Change) -> bool:
    return c.kind is ChangeKind.WEIGHTS and "format" in c.detail


def _groupable(c: Change) -> bool:
    """A weight file change with nothing of its own to show beyond its row (no tensor table)."""
    return _is_file_change(c) and not isinstance(c.detail.get("tensors"), Mapping)


# -- the public functions ----------------------------------------------------------------


def change_view(change: Change, anchor: str = "") -> ChangeView:
    """One change as a sentence, its badge, its reason and its tables."""
    d = change.detail or {}
    blocks: list[Block] = []
    words = change.summary
    unreadable = _unreadable(d)
    if unreadable:
        blocks.append(unreadable)
    if "plan_delta" in d and isinstance(d["plan_delta"], Mapping):
        words = "The memory plan moved: " + str(d["plan_delta"].get("summary") or change.summary.removeprefix("plan: "))
        blocks += plan_delta_blocks(d["plan_delta"])
    elif change.kind is ChangeKind.CHAT_TEMPLATE and "rendered" in d:
        prompts = _prompts(d)
        if prompts is not None:
            blocks.append(prompts)
        td = text_diff("Template text", d.get("text"))
        if td is not None:
            blocks.append(td)
    elif "fields" in d:
        ft = _field_table(d)
        if ft is not None:
            blocks.append(ft)
    elif change.kind is ChangeKind.TOKENIZER and any(k in d for k in ("vocab", "added_tokens", "sections")):
        blocks += _tokenizer_tables(d)
    elif change.kind is ChangeKind.WEIGHTS and "shards" in d:
        blocks += _index_table(d)
    elif _is_file_change(change):
        blocks.append(Table(("File", "", "Format", "Size before", "Size after"), _file_rows([change])))
        if isinstance(d.get("tensors"), Mapping):
            blocks += _tensor_table(d["tensors"])
    elif change.kind is ChangeKind.WEIGHTS and isinstance(d.get("tensors"), Mapping):
        blocks += _tensor_table(d["tensors"])
    if change.kind is ChangeKind.CODE:
        loaded = d.get("loaded_by")
        if loaded:
            blocks.append(Note(f"Loaded by: {cut(show_value(loaded), 300)}."))
        td = text_diff(f"{change.path}", d.get("diff"))
        if td is not None:
            blocks.append(td)
    elif not blocks and isinstance(d.get("diff"), str | Mapping):
        td = text_diff(change.path, d.get("diff"))
        if td is not None:
            blocks.append(td)
    return ChangeView(KIND_LABEL.get(change.kind, "Change"), change.path, sentence(words),
                      change.severity.value if change.severity else None, reasons_of(change), tuple(blocks), anchor)


def group_changes(changes: Iterable[Change], min_group: int = 3) -> list[ChangeView]:
    """Views in severity order; weight files changed the same way collapse into one view."""
    ordered = list(changes)
    groups: dict[tuple[str, str, str | None, tuple[str, ...]], list[Change]] = {}
    for c in ordered:
        if _groupable(c):
            key = (str(c.detail.get("op")), str(c.detail.get("format")), c.severity.value if c.severity else None,
                   c.topics)
            groups.setdefault(key, []).append(c)
    views: list[ChangeView] = []
    done: set[int] = set()
    for i, c in enumerate(ordered):
        if id(c) in done:
            continue
        key = (str(c.detail.get("op")), str(c.detail.get("format")), c.severity.value if c.severity else None,
               c.topics) if _groupable(c) else None
        members = groups.get(key, []) if key else []
        if key and len(members) >= min_group:
            done.update(id(m) for m in members)
            op, fmt = _OP_WORD.get(key[0], key[0]), key[1]
            total = sum(int((m.detail.get("new") or m.detail.get("old") or {}).get("size") or 0) for m in members)
            words = f"{len(members)} {fmt} weight files {op} ({size_text(total)} in all)"
            table = Table(("File", "", "Format", "Size before", "Size after"), _file_rows(members),
                          title=f"The {len(members)} files", folded=True)
            views.append(ChangeView(KIND_LABEL[ChangeKind.WEIGHTS], f"{len(members)} files", sentence(words),
                                    key[2], reasons_of(c), (table,), f"change-{i + 1}"))
            continue
        views.append(change_view(c, f"change-{i + 1}"))
    rank = {"CRITICAL": 0, "HIGH": 1, "MODERATE": 2, "LOW": 3, None: 4}
    return sorted(views, key=lambda v: rank.get(v.severity, 4))


def quiet_count(changes: Iterable[Change]) -> int:
    """Changes with no severity (README, bookkeeping), the plan's own note left out."""
    return sum(1 for c in changes if c.severity is None and "plan.delta" not in c.topics)
