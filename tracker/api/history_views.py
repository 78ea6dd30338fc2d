"""Stage 8 (read): a page of history as the revisions API's JSON (around the entries the
store keeps: :mod:`storage.history_entries`) and as the repo page's rows (their parts kept
likewise, :mod:`storage.history_markup`). Decoding rows, building records and encoding them
again was most of a page's cost (issue 17).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape as _e
from json.encoder import encode_basestring as _q  # type: ignore[attr-defined]
from typing import Any

from markupsafe import Markup

from storage.history_markup import attr, row

Row = tuple[int, str, Any, str, str, str | None, str]  # seq, sha, reachable, head, tail, advisory, option


def page_json(repo_id: str, entries: Sequence[tuple[int, str]], next_cursor: str | None) -> bytes:
    """``{"repo", "revisions", "next_cursor"}`` around entries encoded by the store."""
    cursor = "null" if next_cursor is None else _q(next_cursor)
    return f'{{"repo":{_q(repo_id)},"revisions":[{",".join([e for _, e in entries])}],"next_cursor":{cursor}}}'.encode()


def history_html(repo_url: str, advisory_root: str, rows: Sequence[Row], *,
                 cursor: int | None, next_url: str | None, first_url: str) -> Markup:
    """The repo page's compare form, history table and pager; ``repo_url`` and
    ``advisory_root`` are root-relative, ``rows`` each revision's ``(seq, sha, reachable,
    head, tail, advisory, option)`` (:meth:`storage.history_entries.KeptReader.page_rows`: its
    row's parts, kept when it was written). Written out here rather than by a template:
    Jinja's per-value look-ups and escapes were most of a page's render (issue 17). What the
    rows' parts hold is escaped (:mod:`storage.history_markup`); the prefixes are escaped
    once here.

    The compare form takes any stored sha or prefix in two fields, filled with the page's
    oldest and newest revisions and suggesting the page's own (a ``datalist``). It replaces a
    picker of the newest 300 revisions in two selects: 62 kB in every page, and no way to
    pick an older revision."""
    base, advisories = _e(repo_url), _e(advisory_root)
    out = [_compare_form(f"{base}/compare", rows) if len(rows) > 1 else "", "<h2>History</h2>\n"]
    if not rows:
        out.append(f'<p class="muted">No revisions stored{" before this point" if cursor else ""}.</p>\n')
    else:
        out.append('<table id="history">\n<tr><th>Revision</th><th>Committed</th><th>Severity</th>'
                   "<th>What changed</th><th>Advisory</th></tr>\n")
        out += [row(base, advisories, head, tail, adv, reachable) for _, _, reachable, head, tail, adv, _ in rows]
        out.append("</table>\n")
    out.append('<nav class="pager">\n')
    if cursor:
        out.append(f'<a href="{_e(first_url)}">newest</a>\n')
    if next_url:
        out.append(f'<a id="older" href="{_e(next_url)}">older revisions →</a>\n')
    out.append("</nav>\n")
    return Markup("".join(out))


_FIELD = ('<label>{label}<input name="{name}" list="page-revisions" value="{sha}" required size="42" '
          'maxlength="64" pattern="\\s*[0-9a-fA-F]{{4,64}}\\s*" autocomplete="off" spellcheck="false"></label>\n')


def _compare_form(action: str, rows: Sequence[Row]) -> str:
    return (f'<h2>Compare two revisions</h2>\n<form class="pick" method="get" action="{action}">\n'
            + _FIELD.format(label="Base (older)", name="base", sha=attr(rows[-1][1]))
            + _FIELD.format(label="Head (newer)", name="head", sha=attr(rows[0][1]))
            + '<button type="submit">Compare</button>\n</form>\n'
            '<p class="muted">Any stored revision: paste its sha (or its first 4 or more digits).</p>\n'
            f'<datalist id="page-revisions">{"".join([r[6] for r in rows])}</datalist>\n')
