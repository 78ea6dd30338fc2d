"""Stage 8 (read): a page of history as the revisions API's JSON (around the entries the
store encodes: :func:`storage.history_rows.page_json`) and as the repo page's rows
(:func:`storage.history_rows.page`). Decoding rows, building records and encoding them
again was most of a page's cost (issue 17).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from json.encoder import encode_basestring as _q  # type: ignore[attr-defined]
from typing import Any
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


def html_rows(repo_url: str, advisory_root: str, revisions: Sequence[PageRevision]) -> list[dict[str, Any]]:
    """The repo page's history rows; ``repo_url`` and ``advisory_root`` are root-relative."""
    rows = []
    for r in revisions:
        quiet = [c for c in r.changes if c.severity is None]
        committed = r.committed_at
        rows.append({
            "sha": r.sha, "url": f"{repo_url}/{quote(r.sha)}",
            "committed": f"{committed[:10]} {committed[11:16]} UTC" if committed else "—",
            "title": r.title, "severity": r.severity, "reachable": r.reachable,
            "changes": [(c.severity, sentence(c.summary)) for c in r.changes if c.severity is not None],
            "quiet": sum(1 for c in quiet if _quiet(c)),
            "quiet_text": [_quiet_sentence(c) for c in quiet[:3]],
            "advisory_id": r.advisory_id,
            "advisory_url": f"{advisory_root}/{quote(r.advisory_id)}" if r.advisory_id else None,
        })
    return rows
