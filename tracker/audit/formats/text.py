"""Audit report as text: one line per model reference, its advisories indented below."""

from __future__ import annotations

from collections.abc import Sequence

from tracker.audit.formats.report import Report
from tracker.audit.verdicts import LEVELS, Verdict, fails


def render_text(verdicts: Sequence[Verdict], report: Report) -> str:
    if not verdicts:
        return "no Hugging Face model references found\n"
    rows = [("MODEL", "REVISION", "STATUS", "BEHIND", "WHERE")]
    details: list[list[str]] = []
    for v in verdicts:
        pin = v.pin
        where = pin.source + (f":{pin.line}" if pin.line else "")
        rev = (v.revision or "")[:12] or f"({pin.ref or 'unpinned'})"
        rows.append((pin.repo, rev, _status(v), _behind(v), where))
        lines = [f"{f.severity or 'UNRATED':8} {f.id}  {f.summary}" for f in v.advisories]
        if v.note:
            lines.append(v.note)
        if not pin.pinned:
            lines.append("unpinned: pin a commit (revision=\"<40 hex>\") so what loads cannot move")
        if v.reachable is False:
            lines.append("no longer on the branch: upstream rewrote history")
        details.append(lines)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    out = []
    for i, row in enumerate(rows):
        out.append("  ".join(c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1])
        if i:
            out.extend(f"    {line}" for line in details[i - 1])
    total = sum(len(v.advisories) for v in verdicts)
    verdict = "FAIL" if fails(verdicts, report.fail_on) else "ok"
    out.append("")
    out.append(f"{len(verdicts)} reference(s), {total} advisory match(es); answered by {report.answered_by}; "
               f"--fail-on {report.fail_on}: {verdict}")
    return "\n".join(out) + "\n"


def _status(v: Verdict) -> str:
    if not v.pin.pinned:
        return "unpinned"
    if v.known is False:
        return "unknown"
    if v.advisories:
        worst = max((f.level for f in v.advisories), key=LEVELS.index)
        return f"{len(v.advisories)} advisory ({worst})" if len(v.advisories) == 1 else f"{len(v.advisories)} advisories ({worst})"
    return "ok" if v.known else "no advisories"


def _behind(v: Verdict) -> str:
    if v.behind is None:
        return "-"
    if not v.severities_since:
        return str(v.behind)
    sev = ", ".join(f"{n} {s}" for s, n in sorted(v.severities_since.items(), key=lambda kv: -_rank(kv[0])))
    return f"{v.behind} ({sev})"


def _rank(severity: str) -> int:
    return LEVELS.index(severity) if severity in LEVELS else 0
