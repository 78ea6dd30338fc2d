"""Chat template changes: a unified diff per named template plus the rendered difference.

Layer 1 (stage 4, diff), pure. The text diff says what the template's author edited; the
rendered diff (old and new rendered on the same probe conversations, each with its own
revision's special tokens) says what users' prompts actually become. A template whose text
is unchanged is not a change, even when the file it comes from moved; a template that moved
between files is reported at the alphabetically first of its two source files, so the
inverse diff reports it at the same path.
"""

from __future__ import annotations

import re
from typing import Any

from tracker.diff import topics as t
from tracker.diff.probes import MAX_RENDER_CHARS, Rendered, render_probes, special_tokens
from tracker.diff.sides import Sides
from tracker.diff.textdiff import unified
from tracker.model import Artifacts, Change, ChangeKind

#: Files templates are read from (mirrors tracker.extract.templates, test-checked).
TEMPLATE_FILES = ("tokenizer_config.json", "chat_template.json", "chat_template.jinja")
TEMPLATE_DIR = "additional_chat_templates/"
MAX_RENDERED_TEMPLATES = 8
_BOS_FIRST = re.compile(r"\s*\{\{-?\s*bos_token\s*-?\}\}")
_FEATURES = (
    ("tools", "tools"),
    ("tool_calls", "tool calls"),
    ("eos_token", "eos_token"),
    ("add_generation_prompt", "add_generation_prompt"),
)


def is_template_file(path: str) -> bool:
    return path in TEMPLATE_FILES or (path.startswith(TEMPLATE_DIR) and path.endswith(".jinja"))


def edit_hints(old: str, new: str) -> list[str]:
    """Short words on what an edit did, for the summary line."""
    hints = []
    ob, nb = bool(_BOS_FIRST.match(old)), bool(_BOS_FIRST.match(new))
    if nb and not ob:
        hints.append("now starts with bos_token")
    elif ob and not nb:
        hints.append("no longer starts with bos_token")
    for word, label in _FEATURES:
        pattern = re.compile(rf"\b{word}\b")
        o, n = bool(pattern.search(old)), bool(pattern.search(new))
        if n and not o:
            hints.append(f"now uses {label}")
        elif o and not n:
            hints.append(f"no longer uses {label}")
    return hints


def change_hints(old: str, new: str, probes: int, differ: int, rendered: bool) -> list[str]:
    """The edit hints plus what rendering showed, for a changed template's summary."""
    hints = edit_hints(old, new)
    if rendered:
        hints.append(
            f"rendered prompt differs on {differ} of {probes} probes"
            if differ
            else "rendered prompts unchanged"
        )
    return hints


def _clip(text: str | None) -> str | None:
    if text is None or len(text) <= MAX_RENDER_CHARS:
        return text
    return text[:MAX_RENDER_CHARS] + f"... ({len(text)} chars)"


def _render(arts: Artifacts, text: str | None, allowed: bool) -> list[Rendered] | None:
    if text is None or not allowed:
        return None
    return render_probes(text, special_tokens(arts.tokenizer_config, arts.special_tokens_map))


def rendered_detail(
    old: list[Rendered] | None, new: list[Rendered] | None
) -> tuple[list[dict[str, Any]], int]:
    """Per probe: old/new prompt or error and their diff; plus how many probes differ."""
    rows: list[dict[str, Any]] = []
    differ = 0
    names = [r.probe for r in (new or old or [])]
    old_by = {r.probe: r for r in old or []}
    new_by = {r.probe: r for r in new or []}
    for name in names:
        o, n = old_by.get(name), new_by.get(name)
        row: dict[str, Any] = {"probe": name}
        if o is not None:
            row["old"], row["old_error"] = _clip(o.text), o.error
        if n is not None:
            row["new"], row["new_error"] = _clip(n.text), n.error
        changed = (o.text, o.error) != (n.text, n.error) if o and n else True
        row["changed"] = changed
        if o and n and changed and o.text is not None and n.text is not None:
            row["diff"] = unified(o.text, n.text, f"old/{name}", f"new/{name}", context=2)["diff"]
        differ += changed
        rows.append(row)
    return rows, differ


def _change(sides: Sides, name: str, index: int) -> Change | None:
    old = sides.base.chat_templates.get(name)
    new = sides.head.chat_templates.get(name)
    if old == new:
        return None
    src_old = sides.base.chat_template_sources.get(name)
    src_new = sides.head.chat_template_sources.get(name)
    path = min(p for p in (src_old, src_new) if p is not None)
    op = "added" if old is None else "removed" if new is None else "changed"
    allowed = index < MAX_RENDERED_TEMPLATES
    rows, differ = rendered_detail(
        _render(sides.base, old, allowed), _render(sides.head, new, allowed)
    )
    detail: dict[str, Any] = {
        "op": op,
        "name": name,
        "sources": {"old": src_old, "new": src_new},
        "rendered": rows,
        "rendered_changed": differ,
    }
    if not allowed:
        detail["rendered_skipped"] = f"only the first {MAX_RENDERED_TEMPLATES} are rendered"
    if op == "changed":
        assert old is not None and new is not None
        detail["text"] = unified(old, new, src_old or path, src_new or path)
        hints = change_hints(old, new, len(rows), differ, allowed)
        summary = f"chat template '{name}' changed: " + "; ".join(hints)
        topic = t.CHAT_TEMPLATE_CHANGED
    elif op == "added":
        summary, topic = f"chat template '{name}' added ({src_new})", t.CHAT_TEMPLATE_ADDED
    else:
        summary, topic = f"chat template '{name}' removed", t.CHAT_TEMPLATE_REMOVED
    return Change(ChangeKind.CHAT_TEMPLATE, path, summary, (topic,), detail=detail)


def _unreadable(sides: Sides, name: str) -> Change | None:
    """A template missing on one side only because its file could not be parsed there."""
    in_base = name in sides.base.chat_templates
    present = sides.base if in_base else sides.head
    missing_side = "head" if in_base else "base"
    source = present.chat_template_sources.get(name)
    if source is None:
        return None
    reason = sides.issue(missing_side, source)
    if reason is None:
        return None
    return Change(
        ChangeKind.CHAT_TEMPLATE,
        source,
        f"chat template '{name}': {source} could not be read ({missing_side}: {reason})",
        (t.CHAT_TEMPLATE_UNREADABLE,),
        detail={"op": "changed", "name": name, "unreadable": {missing_side: reason}},
    )


def diff_templates(sides: Sides) -> list[Change]:
    """One change per named template whose text differs."""
    names = sorted(
        n
        for n in sides.base.chat_templates.keys() | sides.head.chat_templates.keys()
        if sides.base.chat_templates.get(n) != sides.head.chat_templates.get(n)
    )
    out: list[Change] = []
    for i, name in enumerate(names):
        one_sided = (name in sides.base.chat_templates) != (name in sides.head.chat_templates)
        change = _unreadable(sides, name) if one_sided else None
        if change is None:
            change = _change(sides, name, i)
        if change is not None:
            out.append(change)
    return out
