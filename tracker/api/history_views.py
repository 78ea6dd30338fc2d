"""Stage 8 (read): a page of history as the revisions API's JSON (around the entries the
store encodes: :func:`storage.history_rows.page_json`) and as the repo page's rows
(:func:`storage.history_rows.page`). Decoding rows, building records and encoding them
again was most of a page's cost (issue 17).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape as _e
from json.encoder import encode_basestring as _q  # type: ignore[attr-defined]
from urllib.parse import quote

from markupsafe import Markup

from storage.history_rows import PageChange, PageRevision
from tracker.api.change_views import cut, sentence


def page_json(repo_id: str, entries: Sequence[tuple[int, str]], next_cursor: str | None) -> bytes:
    """``{"repo", "revisions", "next_cursor"}`` around entries encoded by the store."""
    cursor = "null" if next_cursor is None else _q(next_cursor)
    return f'{{"repo":{_q(repo_id)},"revisions":[{",".join([e for _, e in entries])}],"next_cursor":{cursor}}}'.encode()


def _quiet_sentence(c: PageChange) -> str:
    return f"{c.path}: {sentence(c.summary)}" if c.path and c.path not in c.summary else sentence(c.summary)


def history_html(repo_url: str, advisory_root: str, revisions: Sequence[PageRevision], *,
                 cursor: int | None, next_url: str | None, first_url: str) -> Markup:
    """The repo page's compare form, history table and pager; ``repo_url`` and
    ``advisory_root`` are root-relative. Written out here rather than by a template: Jinja's
    per-value look-ups and escapes were most of a page's render (issue 17). Every value from
    the store is escaped (``_esc``: ``html.escape`` where it has anything to escape) or checked to hold no character HTML or a URL path treats
    specially (``_PLAIN``); links are built from ``quote`` (no character HTML treats
    specially) after a prefix escaped once.

    The compare form takes any stored sha or prefix in two fields, filled with the page's
    oldest and newest revisions and suggesting the page's own (a ``datalist``). It replaces a
    picker of the newest 300 revisions in two selects: 62 kB in every page, and no way to
    pick an older revision."""
    base, advisories = _e(repo_url), _e(advisory_root)
    rows, options = [], []
    for r in revisions:
        row, option = _history_row(base, advisories, r)
        rows.append(row)
        options.append(option)
    out = [_compare_form(f"{base}/compare", revisions, options) if len(revisions) > 1 else "", "<h2>History</h2>\n"]
    if not revisions:
        out.append(f'<p class="muted">No revisions stored{" before this point" if cursor else ""}.</p>\n')
    else:
        out.append('<table id="history">\n<tr><th>Revision</th><th>Committed</th><th>Severity</th>'
                   "<th>What changed</th><th>Advisory</th></tr>\n")
        out += rows
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


def _compare_form(action: str, revisions: Sequence[PageRevision], options: list[str]) -> str:
    return (f'<h2>Compare two revisions</h2>\n<form class="pick" method="get" action="{action}">\n'
            + _FIELD.format(label="Base (older)", name="base", sha=_attr(revisions[-1].sha))
            + _FIELD.format(label="Head (newer)", name="head", sha=_attr(revisions[0].sha))
            + '<button type="submit">Compare</button>\n</form>\n'
            '<p class="muted">Any stored revision: paste its sha (or its first 4 or more digits).</p>\n'
            f'<datalist id="page-revisions">{"".join(options)}</datalist>\n')


_PLAIN = re.compile(r"[A-Za-z0-9_.~-]*").fullmatch  # nothing to escape in HTML or to quote in a URL path
_BADGES = {sev: f'<span class="sev sev-{sev}">{sev}</span>' for sev in ("CRITICAL", "HIGH", "MODERATE", "LOW")}
_NO_SEVERITY = '<span class="sev sev-NONE">no severity</span>'


_HTML_SPECIAL = re.compile("[&<>\"']").search  # what html.escape replaces


def _esc(value: str) -> str:
    """``html.escape``, skipped for text with nothing to escape (most of a row's values)."""
    return _e(value) if _HTML_SPECIAL(value) else value


def _attr(value: str) -> str:
    return value if _PLAIN(value) else _e(value)


def _badge(severity: str | None) -> str:
    """``macros.sev``: the severity badge."""
    if severity is None:
        return _NO_SEVERITY
    known = _BADGES.get(severity)
    if known is not None:
        return known
    sev = _e(severity)
    return f'<span class="sev sev-{sev}">{sev}</span>'


def _history_row(base: str, advisories: str, r: PageRevision) -> tuple[str, str]:
    """The table row of ``r`` and its option in the compare form's suggestions."""
    sha, adv, when = r.sha, r.advisory_id, r.committed_at
    plain = _PLAIN(sha)
    link, short = (sha, sha[:12]) if plain else (quote(sha), _esc(sha[:12]))
    option_value = sha if plain else _e(sha)
    day = _esc(when[:10]) if when else "—"
    committed = f"{day} {_esc(when[11:16])} UTC" if when else "—"
    title = _esc(r.title)
    cell = [title]
    if not r.reachable:
        cell.append(' <span class="muted">(no longer on the branch)</span>')
    quiet: list[PageChange] = []
    flagged = []
    for c in r.changes:
        if c.severity is None:
            quiet.append(c)
        else:
            flagged.append(f"<li>{_badge(c.severity)} {_esc(sentence(c.summary))}</li>")
    if flagged:
        cell.append(f"\n    <ul>{''.join(flagged)}</ul>")
    counted = sum(1 for c in quiet if not c.plan_delta)
    if counted:
        said = " ".join(_esc(_quiet_sentence(c)) for c in quiet[:3])
        cell.append(f'\n    <div class="muted">{counted} other change{"s" if counted > 1 else ""} (no severity)'
                    f'{": " + said if said else ""}</div>')
    if adv is None:
        advisory = "—"
    elif _PLAIN(adv):
        advisory = f'<a href="{advisories}/{adv}">{adv}</a>'
    else:
        advisory = f'<a href="{advisories}/{quote(adv)}">{_esc(adv)}</a>'
    label = title if len(r.title) <= 60 and "\n" not in r.title and "  " not in r.title else _esc(cut(r.title, 60))
    return (f'<tr>\n  <td class="mono"><a href="{base}/{link}">{short}</a></td>\n'
            f'  <td class="nowrap">{committed}</td>\n  <td>{_badge(r.severity)}</td>\n'
            f'  <td>{"".join(cell)}\n  </td>\n  <td>{advisory}</td>\n</tr>\n',
            f'<option value="{option_value}">{day} · {label}</option>')
