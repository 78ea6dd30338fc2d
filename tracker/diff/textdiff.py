"""Bounded unified text diffs for templates, custom code and rendered prompts.

Layer 1 (stage 4, diff), pure. difflib is quadratic in the worst case, so inputs past a line
cap are compared by line counts only, and the excerpt kept in a change's detail is cut to a
fixed number of lines and characters (``truncated`` says so).
"""

from __future__ import annotations

import difflib
from typing import Any

MAX_INPUT_LINES = 20_000
MAX_DIFF_LINES = 400
MAX_DIFF_CHARS = 40_000
_MAX_LINE = 1_000


def unified(old: str, new: str, path_old: str, path_new: str, context: int = 3) -> dict[str, Any]:
    """``{"diff", "added", "removed", "truncated"}`` for two texts (``diff`` "" when equal)."""
    a, b = old.splitlines(), new.splitlines()
    if len(a) > MAX_INPUT_LINES or len(b) > MAX_INPUT_LINES:
        return {
            "diff": f"(not diffed: {len(a)} -> {len(b)} lines, over the {MAX_INPUT_LINES} cap)",
            "added": None,
            "removed": None,
            "truncated": True,
        }
    lines = list(
        difflib.unified_diff(a, b, f"a/{path_old}", f"b/{path_new}", lineterm="", n=context)
    )
    added = sum(1 for x in lines[2:] if x.startswith("+"))
    removed = sum(1 for x in lines[2:] if x.startswith("-"))
    kept: list[str] = []
    size = 0
    truncated = False
    for line in lines:
        if len(line) > _MAX_LINE:
            line = line[:_MAX_LINE] + f"... ({len(line)} chars)"
        if len(kept) >= MAX_DIFF_LINES or size + len(line) > MAX_DIFF_CHARS:
            truncated = True
            break
        kept.append(line)
        size += len(line) + 1
    return {"diff": "\n".join(kept), "added": added, "removed": removed, "truncated": truncated}
