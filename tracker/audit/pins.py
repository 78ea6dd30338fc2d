"""Audit: what an input says a project uses: one :class:`Pin` per model reference found.

A pin names a Hub model repo and, when the input pins it, the commit. An unpinned reference
(no revision, or a branch or tag name) is a finding of its own: what it loads moves with
upstream (bandit B615's point). Pins carry where they were found, so reports can point there.

Imports: stdlib, advisories.query (purl parsing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from advisories.query import parse_purl

COMMIT = re.compile(r"^[0-9a-f]{40}$")
_HEX = re.compile(r"^[0-9a-f]{4,40}$")
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


@dataclass(frozen=True, slots=True)
class Pin:
    """One model reference: ``repo`` at ``revision`` (a commit), or unpinned at ``ref``."""

    repo: str
    revision: str | None  # a commit (40 hex, or a shorter hex prefix the store may resolve)
    source: str  # the input it came from, as given on the command line (or the file inside it)
    kind: str  # cyclonedx | spdx | hf-cache | lockfile | python
    line: int | None = None  # 1-based, where the input has lines
    ref: str | None = None  # the moving ref of an unpinned reference ("main", "v1"), if named
    repository: str | None = None  # the Hub, when the input names one (purl ``repository_url``)

    @property
    def pinned(self) -> bool:
        return self.revision is not None


def revision_of(value: str | None) -> tuple[str | None, str | None]:
    """(commit, moving ref) from a revision string: hex is a commit, anything else a ref."""
    if value is None or not value.strip():
        return None, None
    text = value.strip()
    if _HEX.match(text.lower()):
        return text.lower(), None
    return None, text


def pin_from_purl(text: str, *, source: str, kind: str, line: int | None = None) -> Pin | None:
    """A pin from a ``pkg:huggingface/org/name@sha`` purl; None for any other purl."""
    purl = parse_purl(text)
    if purl is None or purl.type != "huggingface" or not purl.namespace:
        return None
    repo = f"{purl.namespace}/{purl.name}"
    if not REPO_ID.match(repo):
        return None
    revision, ref = revision_of(purl.version)
    explicit = "repository_url=" in text.lower()
    return Pin(repo, revision, source, kind, line, ref, purl.repository if explicit else None)


def line_of(text: str, needle: str, start: int = 0) -> tuple[int | None, int]:
    """The 1-based line of ``needle`` in ``text`` at or after offset ``start`` (and its offset)."""
    at = text.find(needle, start) if needle else -1
    if at < 0:
        return None, start
    return text.count("\n", 0, at) + 1, at + len(needle)
