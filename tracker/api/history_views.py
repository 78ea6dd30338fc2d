"""Stage 8 (read): a page of history as the revisions API's JSON (around the entries the
store encodes: :func:`storage.history_rows.page_json`) and as the repo page's rows
(:func:`storage.history_rows.page`). Decoding rows, building records and encoding them
again was most of a page's cost (issue 17).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape as _e
from json.encoder import encode_basestring as _q  # type: ignore[attr-defined]
from urllib.parse import quote

from markupsafe import Markup

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


def history_table_html(repo_url: str, advisory_root: str, revisions: Sequence[PageRevision], *,
                       cursor: int | None, next_url: str | None, first_url: str) -> Markup:
    """The repo page's history table and pager; ``repo_url`` and ``advisory_root`` are
    root-relative. Written out here rather than by a template: Jinja's per-value look-ups and
    escapes were most of a page's render (issue 17). Every value from the store is escaped
    (``_e``); links are built from ``quote`` (no character HTML treats specially) after a
    prefix escaped once."""
    base, advisories = _e(repo_url), _e(advisory_root)
    out = ["<h2>History</h2>\n"]
    if not revisions:
        out.append(f'<p class="muted">No revisions stored{" before this point" if cursor else ""}.</p>\n')
    else:
        out.append('<table id="history">\n<tr><th>Revision</th><th>Committed</th><th>Severity</th>'
                   "<th>What changed</th><th>Advisory</th></tr>\n")
        for r in revisions:
            out.append(_history_row(base, advisories, r))
        out.append("</table>\n")
    out.append('<nav class="pager">\n')
    if cursor:
        out.append(f'<a href="{_e(first_url)}">newest</a>\n')
    if next_url:
        out.append(f'<a id="older" href="{_e(next_url)}">older revisions →</a>\n')
    out.append("</nav>\n")
    return Markup("".join(out))


def _badge(severity: str | None) -> str:
    """``macros.sev``: the severity badge."""
    if severity is None:
        return '<span class="sev sev-NONE">no severity</span>'
    sev = _e(severity)
    return f'<span class="sev sev-{sev}">{sev}</span>'


def _history_row(base: str, advisories: str, r: PageRevision) -> str:
    committed = f"{_e(r.committed_at[:10])} {_e(r.committed_at[11:16])} UTC" if r.committed_at else "—"
    cell = [_e(r.title)]
    if not r.reachable:
        cell.append(' <span class="muted">(no longer on the branch)</span>')
    flagged = [f"<li>{_badge(c.severity)} {_e(sentence(c.summary))}</li>" for c in r.changes if c.severity is not None]
    if flagged:
        cell.append(f"\n    <ul>{''.join(flagged)}</ul>")
    quiet = [c for c in r.changes if c.severity is None]
    counted = sum(1 for c in quiet if _quiet(c))
    if counted:
        said = " ".join(_e(_quiet_sentence(c)) for c in quiet[:3])
        cell.append(f'\n    <div class="muted">{counted} other change{"s" if counted > 1 else ""} (no severity)'
                    f'{": " + said if said else ""}</div>')
    advisory = (f'<a href="{advisories}/{quote(r.advisory_id)}">{_e(r.advisory_id)}</a>' if r.advisory_id else "—")
    return (f'<tr>\n  <td class="mono"><a href="{base}/{quote(r.sha)}">{_e(r.sha[:12])}</a></td>\n'
            f'  <td class="nowrap">{committed}</td>\n  <td>{_badge(r.severity)}</td>\n'
            f'  <td>{"".join(cell)}\n  </td>\n  <td>{advisory}</td>\n</tr>\n')
