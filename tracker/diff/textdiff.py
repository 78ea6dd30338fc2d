"""Bounded unified text diffs for templates, custom code and rendered prompts.

Layer 1 (stage 4, diff), pure. difflib is quadratic (and worse) in the worst case: 20,000
reordered lines once took 119-320 s of CPU (issue 16, point 5). So difflib only ever sees a
range of at most ``MAX_CELLS`` line pairs: the common prefix and suffix are taken off first,
a larger range is split at the lines that occur once on each side (patience diff's anchors,
in order), and a range that is still too large with no anchor is reported as replaced whole
(``truncated`` says the diff is approximate). Inputs past a line cap are compared by line
counts only, and the excerpt kept in a change's detail is cut to a fixed number of lines and
characters (``truncated`` again).
"""

from __future__ import annotations

import difflib
from typing import Any

MAX_INPUT_LINES = 20_000
MAX_CELLS = 1_000_000  # line pairs of the largest range difflib compares
MAX_DEPTH = 8  # rounds of splitting at anchors
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
    ops, approximate = bounded_opcodes(a, b)
    lines = _unified_lines(a, b, ops, f"a/{path_old}", f"b/{path_new}", context)
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
    return {"diff": "\n".join(kept), "added": added, "removed": removed, "truncated": truncated or approximate}


Opcode = tuple[str, int, int, int, int]


def bounded_opcodes(a: list[str], b: list[str]) -> tuple[list[Opcode], bool]:
    """difflib-style opcodes turning ``a`` into ``b`` at a bounded cost; True when approximate."""
    out: list[Opcode] = []
    approximate = _segment(a, b, 0, len(a), 0, len(b), out, MAX_DEPTH)
    merged: list[Opcode] = []
    for op in out:
        if op[1] == op[2] and op[3] == op[4]:
            continue
        if merged and merged[-1][0] == op[0]:
            tag, i1, _, j1, _ = merged[-1]
            merged[-1] = (tag, i1, op[2], j1, op[4])
        else:
            merged.append(op)
    return merged, approximate


def _segment(a: list[str], b: list[str], alo: int, ahi: int, blo: int, bhi: int, out: list[Opcode],
             depth: int) -> bool:
    if (ahi - alo) * (bhi - blo) <= MAX_CELLS:  # small enough: exactly what difflib says
        sm = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi])
        out.extend((tag, i1 + alo, i2 + alo, j1 + blo, j2 + blo) for tag, i1, i2, j1, j2 in sm.get_opcodes())
        return False
    start_a, start_b = alo, blo
    while alo < ahi and blo < bhi and a[alo] == b[blo]:
        alo, blo = alo + 1, blo + 1
    out.append(("equal", start_a, alo, start_b, blo))
    end_a, end_b = ahi, bhi
    while ahi > alo and bhi > blo and a[ahi - 1] == b[bhi - 1]:
        ahi, bhi = ahi - 1, bhi - 1
    approximate = False
    if (ahi - alo) * (bhi - blo) <= MAX_CELLS:
        sm = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi])
        out.extend((tag, i1 + alo, i2 + alo, j1 + blo, j2 + blo) for tag, i1, i2, j1, j2 in sm.get_opcodes())
    else:
        anchors = _anchors(a, b, alo, ahi, blo, bhi) if depth > 0 else []
        if not anchors:
            out.append(("replace", alo, ahi, blo, bhi))
            approximate = True
        else:
            i, j = alo, blo
            for ai, bj in anchors:
                approximate |= _segment(a, b, i, ai, j, bj, out, depth - 1)
                out.append(("equal", ai, ai + 1, bj, bj + 1))
                i, j = ai + 1, bj + 1
            approximate |= _segment(a, b, i, ahi, j, bhi, out, depth - 1)
    out.append(("equal", ahi, end_a, bhi, end_b))
    return approximate


def _anchors(a: list[str], b: list[str], alo: int, ahi: int, blo: int, bhi: int) -> list[tuple[int, int]]:
    """Lines once in each range, as (i, j) pairs increasing in both (a longest such chain)."""
    count_a: dict[str, int] = {}
    for i in range(alo, ahi):
        count_a[a[i]] = count_a.get(a[i], 0) + 1
    where_b: dict[str, int] = {}
    count_b: dict[str, int] = {}
    for j in range(blo, bhi):
        count_b[b[j]] = count_b.get(b[j], 0) + 1
        where_b[b[j]] = j
    pairs = [(i, where_b[a[i]]) for i in range(alo, ahi) if count_a[a[i]] == 1 and count_b.get(a[i]) == 1]
    return _longest_increasing(pairs)


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest chain of ``pairs`` (sorted by i) whose j increases: O(n log n) patience sort."""
    tails: list[int] = []  # tails[k]: index in pairs of the smallest tail of a chain of length k+1
    back: list[int] = []
    for idx, (_, j) in enumerate(pairs):
        k = _bisect(pairs, tails, j)
        back.append(tails[k - 1] if k else -1)
        if k == len(tails):
            tails.append(idx)
        else:
            tails[k] = idx
    chain: list[tuple[int, int]] = []
    idx = tails[-1] if tails else -1
    while idx >= 0:
        chain.append(pairs[idx])
        idx = back[idx]
    return chain[::-1]


def _bisect(pairs: list[tuple[int, int]], tails: list[int], j: int) -> int:
    lo, hi = 0, len(tails)
    while lo < hi:
        mid = (lo + hi) // 2
        if pairs[tails[mid]][1] < j:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _unified_lines(a: list[str], b: list[str], ops: list[Opcode], name_a: str, name_b: str, n: int) -> list[str]:
    """What ``difflib.unified_diff`` prints, from precomputed opcodes."""
    sm = difflib.SequenceMatcher(None, a, b)
    sm.opcodes = ops  # type: ignore[attr-defined]  # get_grouped_opcodes() uses these: no matching
    lines: list[str] = []
    for group in sm.get_grouped_opcodes(n):
        if not lines:
            lines += [f"--- {name_a}", f"+++ {name_b}"]
        first, last = group[0], group[-1]
        lines.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [" " + x for x in a[i1:i2]]
                continue
            if tag in ("replace", "delete"):
                lines += ["-" + x for x in a[i1:i2]]
            if tag in ("replace", "insert"):
                lines += ["+" + x for x in b[j1:j2]]
    return lines


def _range(start: int, stop: int) -> str:
    """A unified diff hunk range, as difflib writes it."""
    beginning, length = start + 1, stop - start
    if length == 1:
        return f"{beginning}"
    if not length:
        beginning -= 1
    return f"{beginning},{length}"
