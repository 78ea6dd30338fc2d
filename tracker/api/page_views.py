"""Stage 8 (read): stored data shaped for the HTML templates (no HTML is built here).

``view(value)`` turns any JSON-able change detail (field diffs, unified diffs, rendered
chat-template diffs, tensor tables, plan deltas) into a small tree of display nodes the
templates render recursively, with caps so a huge diff never makes a huge page.
``markdown_blocks(text)`` splits an advisory's Markdown into blocks the template shows
escaped (headings, paragraphs, lists, fenced code, tables): no raw HTML ever passes through.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

MAX_ITEMS = 200
MAX_ROWS = 500
MAX_LINES = 2000
MAX_DEPTH = 6
FOLD_LINES = 3  # longer plain text is shown folded (<details>), diffs always open
_DIFF_HINT = re.compile(r"^(@@|--- |\+\+\+ )", re.M)
GB = 1e9


def view(value: Any, depth: int = 0) -> dict[str, Any]:
    """A display node: text, diff, pre, list, table (key/value) or grid (rows of records)."""
    if depth >= MAX_DEPTH:
        return {"t": "pre", "text": _json(value)[:5000]}
    if isinstance(value, str):
        if "\n" in value.strip("\n"):
            return _text_block(value)
        return {"t": "text", "text": value}
    if isinstance(value, Mapping):
        if not value:
            return {"t": "text", "text": "—"}
        items = list(value.items())
        pairs = [(str(k), view(v, depth + 1)) for k, v in items[:MAX_ITEMS]]
        return {"t": "table", "rows": pairs, "more": max(0, len(items) - MAX_ITEMS)}
    if isinstance(value, list | tuple):
        if not value:
            return {"t": "text", "text": "—"}
        if all(isinstance(v, Mapping) for v in value):
            cols = list(dict.fromkeys(k for v in value for k in v))
            if len(cols) <= 10 and all(_flat(x) for v in value for x in v.values()):
                rows = [[view(v.get(c), depth + 1) if c in v else {"t": "text", "text": ""} for c in cols]
                        for v in value[:MAX_ROWS]]
                return {"t": "grid", "cols": [str(c) for c in cols], "rows": rows,
                        "more": max(0, len(value) - MAX_ROWS)}
        if all(v is None or isinstance(v, str | int | float | bool) for v in value):
            shown = ", ".join(_scalar(v) for v in value[:MAX_ITEMS])
            more = f" … and {len(value) - MAX_ITEMS} more" if len(value) > MAX_ITEMS else ""
            return {"t": "text", "text": f"[{shown}]{more}"}
        return {"t": "list", "items": [view(v, depth + 1) for v in value[:MAX_ITEMS]],
                "more": max(0, len(value) - MAX_ITEMS)}
    return {"t": "text", "text": _scalar(value)}


def _flat(v: Any) -> bool:
    """Fits a grid cell: a scalar, a short one-line string, or a short list of those."""
    if isinstance(v, str):
        return "\n" not in v and len(v) <= 200
    if isinstance(v, list | tuple):
        return len(v) <= 20 and all(not isinstance(x, list | tuple | Mapping) and _flat(x) for x in v)
    return v is None or isinstance(v, int | float | bool)


def _text_block(text: str) -> dict[str, Any]:
    lines = text.strip("\n").split("\n")
    more = max(0, len(lines) - MAX_LINES)
    lines = lines[:MAX_LINES]
    if not _DIFF_HINT.search(text):
        return {"t": "pre", "text": "\n".join(lines), "more": more, "fold": len(lines) > FOLD_LINES}
    out = []
    for line in lines:
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
        out.append((cls, line))
    return {"t": "diff", "lines": out, "more": more}


def _scalar(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _json(v: Any) -> str:
    return json.dumps(v, indent=2, ensure_ascii=False, default=str)


def human_bytes(n: Any) -> str:
    if not isinstance(n, int | float) or isinstance(n, bool):
        return "—"
    return f"{n / GB:,.2f} GB"


def _count(n: Any) -> str:
    return f"{n:,}" if isinstance(n, int) and not isinstance(n, bool) else "—"


def _section(doc: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = doc.get(key)
    return value if isinstance(value, Mapping) else {}


def plan_summary(plan: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The headline numbers of a ``plan --json`` document, tolerant of missing parts."""
    if not isinstance(plan, Mapping):
        return None
    params, memory, cards, cost = (_section(plan, k) for k in ("params", "memory_bytes", "cards", "cost"))
    modes = list(dict.fromkeys(m for c in cards.values() if isinstance(c, Mapping) for m in c))
    return {
        "params": [(k, params.get(k)) for k in ("total", "active", "checkpoint", "delta_pct") if k in params],
        "memory": [(k, _count(v) if k.endswith("params") else human_bytes(v)) for k, v in memory.items()],
        "cost": {k: cost.get(k) for k in ("usd", "hours", "card") if k in cost},
        "modes": modes,
        "cards": [(name, [c.get(m) if isinstance(c, Mapping) else None for m in modes]) for name, c in cards.items()],
        "findings": [str(f) if not isinstance(f, Mapping) else str(f.get("message") or f) for f in
                     (plan.get("findings") or [])][:50],
    }


def markdown_blocks(text: str) -> list[dict[str, Any]]:
    """Block structure of a Markdown text; inline markup is left as plain text."""
    blocks: list[dict[str, Any]] = []
    lines = text.replace("\r\n", "\n").split("\n")[:MAX_LINES * 2]
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            blocks.append(_text_block("\n".join(lines[i + 1:j])) if lines[i + 1:j] else {"t": "pre", "text": ""})
            i = j + 1
            continue
        heading = re.match(r"^(#{1,6})\s+(.*)$", line)
        if heading:
            blocks.append({"t": "h", "level": min(6, len(heading.group(1)) + 2), "text": heading.group(2)})
        elif re.match(r"^\s*[-*]\s+", line):
            items = []
            while i < len(lines) and re.match(r"^\s*[-*]\s+", lines[i]):
                items.append(re.sub(r"^\s*[-*]\s+", "", lines[i]))
                i += 1
            blocks.append({"t": "ul", "items": items})
            continue
        elif line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                if not all(re.fullmatch(r":?-{3,}:?", c) for c in cells):
                    rows.append(cells)
                i += 1
            blocks.append({"t": "mdtable", "rows": rows})
            continue
        elif line.strip():
            para = [line]
            while i + 1 < len(lines) and lines[i + 1].strip() and not re.match(r"^(#|```|\||\s*[-*]\s)", lines[i + 1]):
                i += 1
                para.append(lines[i])
            blocks.append({"t": "p", "text": " ".join(s.strip() for s in para)})
        i += 1
    return blocks
