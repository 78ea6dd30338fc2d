"""Stage 7 (emit): the text of an OSV record: Markdown details, one-line fields, plain JSON.

Repo content is hostile until parsed, and commit titles, file paths and diff text come from
upstream: everything here is cleaned (valid UTF-8, no control characters), escaped so that it
stays inert inline Markdown (no links, HTML, emphasis or table breaks), fenced with a fence
longer than any backtick run it holds, and bounded in length.

Imports: stdlib, tracker.model, advisories.rules (the reason of each severity).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from advisories.rules import reasons
from tracker.model.core import Change, ChangeKind, CommitInfo

EXCERPT_MAX_LINES = 40
EXCERPT_MAX_CHARS = 2_000
DETAIL_SECTIONS_MAX = 30  # changes shown with an excerpt in the Markdown
OTHER_LINES_MAX = 20  # severity-less changes listed in the Markdown
TEXT_MAX = 500  # one summary or path
PLAN_LINES_MAX = 60
FIELD_ROWS_MAX = 30  # rows of a key / before / after table
_MAX_DEPTH = 24
KIND_LABEL = {
    ChangeKind.CONFIG: "config",
    ChangeKind.GENERATION_CONFIG: "generation config",
    ChangeKind.TOKENIZER: "tokenizer",
    ChangeKind.CHAT_TEMPLATE: "chat template",
    ChangeKind.WEIGHTS: "weights",
    ChangeKind.CODE: "custom code",
    ChangeKind.HISTORY: "history",
    ChangeKind.RENAME: "repo renamed",
    ChangeKind.NAMESPACE_REUSE: "namespace reused",
    ChangeKind.OTHER: "other files",
}


def timestamp(value: datetime) -> str:
    """RFC 3339 UTC with a ``Z`` and whole seconds, as OSV consumers parse it."""
    if value.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(value: str) -> datetime:
    """The datetime of an OSV timestamp (``...Z``)."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


def render_details(
    *,
    repo_id: str,
    repo_url: str,
    commit_url: str,
    branch: str,
    commit: CommitInfo,
    parent: str | None,
    severity: str,
    flagged: Sequence[Change],
    others: Sequence[Change],
    plan_delta: Mapping[str, Any] | None,
) -> str:
    """The Markdown ``details``: facts table, each change with an excerpt, the plan delta."""
    sha = commit.sha.lower()
    authors = ", ".join(one_line(a) for a in commit.authors[:10])
    rows = [
        ("Repository", link(repo_id, repo_url)),
        ("Commit", link(sha, commit_url, as_code=True)),
        ("Parent", code(one_line(parent)) if parent else "none (a fresh baseline)"),
        ("Branch", code(one_line(branch))),
        ("Committed", timestamp(commit.committed_at)),
        ("Title", esc(fit(one_line(commit.title), 300))),
        ("Authors", esc(fit(authors, 300))),
        ("Severity", f"**{severity}**"),
    ]
    out = [
        f"Revision {code(sha[:7])} of {esc(one_line(repo_id))} has {len(flagged)} tracked "
        f"change{'s' if len(flagged) != 1 else ''} to what decides how the model loads and "
        f"behaves; the highest severity is **{severity}**.",
        "",
        "| | |\n| --- | --- |\n" + "\n".join(f"| {k} | {v} |" for k, v in rows if v),
        "",
        "## Changes",
    ]
    for change in flagged[:DETAIL_SECTIONS_MAX]:
        out += ["", _change_section(change, reasons(change))]
    if len(flagged) > DETAIL_SECTIONS_MAX:
        rest = len(flagged) - DETAIL_SECTIONS_MAX
        out += ["", f"_{rest} more changes are listed in `database_specific.changes`._"]
    if others:
        out += ["", "## Other changes (no severity)", ""]
        out += [
            f"- {KIND_LABEL[c.kind]}, {code(one_line(c.path))}: "
            f"{esc(fit(one_line(c.summary), 200))}"
            for c in others[:OTHER_LINES_MAX]
        ]
        if len(others) > OTHER_LINES_MAX:
            out.append(f"- … and {len(others) - OTHER_LINES_MAX} more")
    if plan_delta is not None:
        out += ["", "## Plan delta", "", _plan_markdown(plan_delta)]
    return "\n".join(out) + "\n"


def _change_section(change: Change, reasons: Sequence[str] = ()) -> str:
    severity = change.severity.value if change.severity else "NONE"
    where = f", {code(one_line(change.path))}" if one_line(change.path) else ""
    parts = [f"### {severity}: {KIND_LABEL[change.kind]}{where}", ""]
    parts.append(esc(fit(one_line(change.summary), TEXT_MAX)) or "_(no summary)_")
    for reason in reasons:
        parts += ["", f"Why this severity: {esc(reason)}"]
    blocks, omitted = _excerpt(change.detail)
    for info, text in blocks:
        parts += ["", text if info == "table" else fence(text, info)]
    if omitted:
        parts.append(f"_… {omitted} more lines not shown._")
    return "\n".join(parts)


def _excerpt(detail: Mapping[str, Any]) -> tuple[list[tuple[str, str]], int]:
    """A change's detail for people, bounded: a key / before / after table for JSON fields,
    then its text diffs (the rendered chat prompts before the template text). Blocks are
    ``(info, text)``: ``table`` is Markdown to insert as is, anything else is fenced."""
    data = jsonable(detail, limit=50)
    if not isinstance(data, dict) or not data:
        return [], 0
    blocks: list[tuple[str, str]] = []
    table = _fields_table(data.get("fields"))
    if table:
        blocks.append(("table", table))
    pending = [(_text_info(t), t.strip("\n")) for t in _texts(data)]
    budget_lines, budget_chars, omitted = EXCERPT_MAX_LINES, EXCERPT_MAX_CHARS, 0
    for info, text in pending:
        kept: list[str] = []
        lines = text.split("\n")
        for line in lines:
            line = fit(line, 200)
            if budget_lines <= 0 or len(line) + 1 > budget_chars:
                break
            kept.append(line)
            budget_lines, budget_chars = budget_lines - 1, budget_chars - len(line) - 1
        omitted += len(lines) - len(kept)
        if kept:
            blocks.append((info, "\n".join(kept)))
    return blocks, omitted


def _texts(data: Mapping[str, Any]) -> list[str]:
    """The multi-line texts of a detail: rendered prompt diffs, then the other diffs and texts."""
    out = [str(r["diff"]) for r in data.get("rendered") or [] if isinstance(r, dict)
           and isinstance(r.get("diff"), str) and r["diff"].strip()]
    for value in data.values():
        if isinstance(value, dict) and isinstance(value.get("diff"), str):
            value = value["diff"]
        if isinstance(value, str) and "\n" in value.strip("\n"):
            out.append(value)
    return out


def _fields_table(fields: Any) -> str:
    if not isinstance(fields, list) or not fields:
        return ""
    rows = ["| key | before | after |", "| --- | --- | --- |"]
    for f in fields[:FIELD_ROWS_MAX]:
        if isinstance(f, dict):
            old = "—" if f.get("op") == "added" else code(fit(_scalar(f.get("old")), 120))
            new = "—" if f.get("op") == "removed" else code(fit(_scalar(f.get("new")), 120))
            rows.append(f"| {code(fit(one_line(str(f.get('path', ''))), 120))} | {_cell(old)} | {_cell(new)} |")
    if len(fields) > FIELD_ROWS_MAX:
        rows.append(f"| … and {len(fields) - FIELD_ROWS_MAX} more | | |")
    return "\n".join(rows)


def _cell(text: str) -> str:
    """Inline code in a table cell: a pipe would end the cell, even inside backticks."""
    return text.replace("|", "\\|").replace("\n", " ")


def _text_info(text: str) -> str:
    return "diff" if re.search(r"^(@@|--- |\+\+\+ )", text, re.M) else "text"


def _plan_markdown(plan_delta: Mapping[str, Any]) -> str:
    lines = [f"- {code(key)}: {esc(value)}" for key, value in _flatten(jsonable(plan_delta))]
    if not lines:
        return "No change in parameters, memory or the cards that fit."
    if len(lines) > PLAN_LINES_MAX:
        lines = [*lines[:PLAN_LINES_MAX], f"- … and {len(lines) - PLAN_LINES_MAX} more"]
    return "\n".join(lines)


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    pairs = ({"old", "new"}, {"before", "after"})
    if isinstance(value, dict) and not value:
        return []
    if isinstance(value, dict) and set(value) not in pairs:
        out: list[tuple[str, str]] = []
        for key, item in value.items():
            out += _flatten(item, f"{prefix}.{key}" if prefix else str(key))
        return out
    if isinstance(value, dict):
        old, new = (
            (value["old"], value["new"]) if "old" in value else (value["before"], value["after"])
        )
        text = f"{_scalar(old)} → {_scalar(new)}"
    else:
        text = _scalar(value)
    return [(prefix or "value", fit(text, 300))]


def compact_json(value: Any, indent: int = 0, width: int = 100) -> str:
    """JSON with sorted keys, one line per item only where a value does not fit on one."""
    flat = json.dumps(value, ensure_ascii=False, sort_keys=True)
    if len(flat) + indent <= width or not isinstance(value, dict | list) or not value:
        return flat
    if isinstance(value, list) and not any(isinstance(v, dict | list) for v in value):
        return flat  # a long list of scalars stays on one (clipped) line
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = [
            f"{pad}{json.dumps(k, ensure_ascii=False)}: {compact_json(v, indent + 2, width)}"
            for k, v in sorted(value.items())
        ]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + compact_json(v, indent + 2, width) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def _scalar(value: Any) -> str:
    return (
        value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    )


def jsonable(value: Any, depth: int = 0, *, limit: int | None = None) -> Any:
    """Plain JSON (no NaN, str keys, clean text) of a caller-given, possibly hostile value.

    With ``limit``, containers keep their first ``limit`` items (plus a count of the rest)
    and strings ``limit`` × 2,000 characters: bounded work for an excerpt.
    """
    if depth > _MAX_DEPTH:
        return "…"
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return clean(value if limit is None else value[: limit * 2000])
    if isinstance(value, set | frozenset):
        value = sorted(value, key=str)
    if isinstance(value, Mapping):
        items = list(itertools.islice(value.items(), limit))
        out = {clean(str(k)): jsonable(v, depth + 1, limit=limit) for k, v in items}
        if len(value) > len(items):
            out["…"] = f"{len(value) - len(items)} more"
        return out
    if isinstance(value, list | tuple):
        kept = [jsonable(v, depth + 1, limit=limit) for v in value[:limit]]
        if len(value) > len(kept):
            kept.append(f"… {len(value) - len(kept)} more")
        return kept
    if isinstance(value, datetime) and value.tzinfo is not None:
        return timestamp(value)
    if hasattr(value, "value") and isinstance(value.value, str | int):  # enums
        return value.value
    return clean(str(value))


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def clean(text: str) -> str:
    """Valid UTF-8 without control characters (tabs and newlines kept)."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    return _CONTROL.sub("\ufffd", text.replace("\r\n", "\n").replace("\r", "\n"))


def one_line(text: str) -> str:
    return " ".join(clean(str(text)).split())


def fit(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def join(labels: Sequence[str]) -> str:
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")


def esc(text: str) -> str:
    """Untrusted text as inert inline Markdown (no links, HTML, emphasis or table breaks)."""
    return _MD_SPECIAL.sub(r"\\\1", text)


def code(text: str) -> str:
    run = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * (run + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def fence(text: str, info: str) -> str:
    run = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, run + 1)
    return f"{ticks}{info}\n{text}\n{ticks}"


def link(text: str, url: str, *, as_code: bool = False) -> str:
    label = code(text) if as_code else esc(one_line(text))
    if url and re.fullmatch(r"https?://[^\s<>()\[\]`]+", url):
        return f"[{label}]({url})"
    return label
