"""Stage 8 (read): a page of history as the revisions API's JSON (around the entries the
store encodes: :func:`storage.history_rows.page_json`) and as the repo page's rows
(:func:`storage.history_rows.page`). Decoding rows, building records and encoding them
again was most of a page's cost (issue 17).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring as _q  # type: ignore[attr-defined]
from urllib.parse import quote

from storage.history_rows import PageChange, PageRevision
from tracker.api.change_views import sentence


def page_json(repo_id: str, entries: Sequence[tuple[int, str]], next_cursor: str | None) -> bytes:
    """``{"repo", "revisions", "next_cursor"}`` around entries encoded by the store."""
    cursor = "null" if next_cursor is None else _q(next_cursor)
    return f'{{"repo":{_q(repo_id)},"revisions":[{",".join([e for _, e in entries])}],"next_cursor":{cursor}}}'.encode()


def _quiet(c: PageChange) -> bool:
    """A change with no severity that the page counts (the plan's own note left out)."""
    return c.severity is None and "plan.delta" not in json.loads(c.topics_json)


def _quiet_sentence(c: PageChange) -> str:
    return f"{c.path}: {sentence(c.summary)}" if c.path and c.path not in c.summary else sentence(c.summary)


@dataclass(frozen=True, slots=True)
class HistoryRow:
    """One row of the repo page's history table (attributes, not a dict: Jinja reads an
    attribute directly, a dict key only after a failed attribute look-up)."""

    sha: str
    short: str
    url: str
    committed: str
    title: str
    severity: str | None
    reachable: bool
    changes: list[tuple[str, str]]  # (severity, sentence) of the changes with a severity
    quiet: int
    quiet_text: list[str]
    advisory_id: str | None
    advisory_url: str | None


def html_rows(repo_url: str, advisory_root: str, revisions: Sequence[PageRevision]) -> list[HistoryRow]:
    """The repo page's history rows; ``repo_url`` and ``advisory_root`` are root-relative."""
    rows = []
    for r in revisions:
        quiet = [c for c in r.changes if c.severity is None]
        committed = r.committed_at
        rows.append(HistoryRow(
            r.sha, r.sha[:12], f"{repo_url}/{quote(r.sha)}",
            f"{committed[:10]} {committed[11:16]} UTC" if committed else "—",
            r.title, r.severity, r.reachable,
            [(c.severity, sentence(c.summary)) for c in r.changes if c.severity is not None],
            sum(1 for c in quiet if _quiet(c)), [_quiet_sentence(c) for c in quiet[:3]],
            r.advisory_id, f"{advisory_root}/{quote(r.advisory_id)}" if r.advisory_id else None,
        ))
    return rows
