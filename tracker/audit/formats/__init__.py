"""Audit report formats: ``text`` for people, ``json``, ``sarif`` (code scanning) and
``cyclonedx`` (SBOM platforms). Each is a pure function of the verdicts and a :class:`Report`.

Imports: stdlib, tracker.audit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tracker.audit.formats.cyclonedx import render_cyclonedx
from tracker.audit.formats.jsonfmt import render_json
from tracker.audit.formats.report import Report
from tracker.audit.formats.sarif import render_sarif
from tracker.audit.formats.text import render_text
from tracker.audit.verdicts import Verdict

FORMATS: dict[str, Callable[[Sequence[Verdict], Report], str]] = {
    "text": render_text,
    "json": render_json,
    "sarif": render_sarif,
    "cyclonedx": render_cyclonedx,
}

__all__ = ["FORMATS", "Report"]
