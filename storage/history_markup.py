"""The repo page's history row of one revision, made once when the revision is written and
kept beside it (:mod:`storage.history_entries`): marking up 50 rows on every request was
half of a computed repo page (issue 17).

A row depends on more than the revision: the repo's URL (a rename moves it, a ``root_path``
prefixes it), the advisories' root, and whether a rewrite dropped the revision from the
branch. Those are spliced in when a page is read (:func:`row`); the stored parts are the
rest. Every value from the store is escaped (``_esc``: ``html.escape`` where it has anything
to escape) or checked to hold no character HTML or a URL path treats specially (``_PLAIN``);
links are built from ``quote`` (no character HTML treats specially) after a prefix escaped
once.

Imports: stdlib only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape as _e
from typing import Protocol
from urllib.parse import quote

CELL_MAX = 300
ROW_START = '<tr>\n  <td class="mono"><a href="'
UNREACHABLE = ' <span class="muted">(no longer on the branch)</span>'


class Change(Protocol):
    path: str
    summary: str
    severity: str | None
    plan_delta: bool


class Revision(Protocol):
    sha: str
    committed_at: str | None
    title: str
    severity: str | None
    advisory_id: str | None

    @property
    def changes(self) -> Sequence[Change]: ...


@dataclass(frozen=True, slots=True)
class RowParts:
    """A row without the repo's URL, the advisories' root and the reachability note:
    ``ROW_START + repo_url + head + [UNREACHABLE] + tail + [advisory_root + advisory]``;
    ``option`` is its suggestion in the compare form."""

    head: str
    tail: str
    advisory: str | None
    option: str


def sentence(text: str) -> str:
    """A summary as a sentence: capital first letter, a full stop."""
    text = " ".join(str(text).split())
    if not text:
        return ""
    first = text.split(" ", 1)[0]
    if first.isalpha():  # "chat template ..." -> "Chat template ...", but never "Config.json" or "Eos_token_id"
        text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?", "…")) else text + "."


def cut(text: str, limit: int = CELL_MAX) -> str:
    """One line of at most ``limit`` characters, an ellipsis where it was cut."""
    text = " ".join(str(text).split()) if "\n" not in str(text) else str(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


_PLAIN = re.compile(r"[A-Za-z0-9_.~-]*").fullmatch  # nothing to escape in HTML or to quote in a URL path
_BADGES = {sev: f'<span class="sev sev-{sev}">{sev}</span>' for sev in ("CRITICAL", "HIGH", "MODERATE", "LOW")}
_NO_SEVERITY = '<span class="sev sev-NONE">no severity</span>'
_HTML_SPECIAL = re.compile("[&<>\"']").search  # what html.escape replaces


def _esc(value: str) -> str:
    """``html.escape``, skipped for text with nothing to escape (most of a row's values)."""
    return _e(value) if _HTML_SPECIAL(value) else value


def attr(value: str) -> str:
    """A value for an attribute: as it is when plain, else escaped."""
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


def _quiet_sentence(c: Change) -> str:
    return f"{c.path}: {sentence(c.summary)}" if c.path and c.path not in c.summary else sentence(c.summary)


def row_parts(r: Revision) -> RowParts:
    """What is kept of ``r``'s row (see :class:`RowParts`)."""
    sha, adv, when = r.sha, r.advisory_id, r.committed_at
    plain = _PLAIN(sha)
    link, short = (sha, sha[:12]) if plain else (quote(sha), _esc(sha[:12]))
    option_value = sha if plain else _e(sha)
    day = _esc(when[:10]) if when else "—"
    committed = f"{day} {_esc(when[11:16])} UTC" if when else "—"
    title = _esc(r.title)
    quiet: list[Change] = []
    flagged = []
    for c in r.changes:
        if c.severity is None:
            quiet.append(c)
        else:
            flagged.append(f"<li>{_badge(c.severity)} {_esc(sentence(c.summary))}</li>")
    cell = [f"\n    <ul>{''.join(flagged)}</ul>"] if flagged else []
    counted = sum(1 for c in quiet if not c.plan_delta)
    if counted:
        said = " ".join(_esc(_quiet_sentence(c)) for c in quiet[:3])
        cell.append(f'\n    <div class="muted">{counted} other change{"s" if counted > 1 else ""} (no severity)'
                    f'{": " + said if said else ""}</div>')
    cell.append("\n  </td>\n  <td>")
    if adv is None:
        cell.append("—</td>\n</tr>\n")
        advisory = None
    else:
        cell.append('<a href="')
        advisory = (f"/{adv}\">{adv}</a></td>\n</tr>\n" if _PLAIN(adv)
                    else f'/{quote(adv)}">{_esc(adv)}</a></td>\n</tr>\n')
    label = title if len(r.title) <= 60 and "\n" not in r.title and "  " not in r.title else _esc(cut(r.title, 60))
    return RowParts(f'/{link}">{short}</a></td>\n  <td class="nowrap">{committed}</td>\n  <td>{_badge(r.severity)}'
                    f"</td>\n  <td>{title}", "".join(cell), advisory,
                    f'<option value="{option_value}">{day} · {label}</option>')


def row(repo_url: str, advisory_root: str, head: str, tail: str, advisory: str | None, reachable: bool) -> str:
    """A row from its kept parts; ``repo_url`` and ``advisory_root`` escaped already."""
    if advisory is None:
        return f"{ROW_START}{repo_url}{head}{tail}" if reachable else f"{ROW_START}{repo_url}{head}{UNREACHABLE}{tail}"
    if reachable:
        return f"{ROW_START}{repo_url}{head}{tail}{advisory_root}{advisory}"
    return f"{ROW_START}{repo_url}{head}{UNREACHABLE}{tail}{advisory_root}{advisory}"
