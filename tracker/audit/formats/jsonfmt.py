"""Audit report as JSON: ``{"models": [...]}``, one entry per model reference found.

Each entry: ``repo``, ``revision`` (null when unpinned), ``source``, ``advisories`` (``id``,
``severity``, ``summary``), ``behind``, ``upstream_head``, and also ``kind``, ``line``,
``known``, ``pinned``, ``ref``, ``severities_since``, ``reachable``, ``note``. Top level:
``fail_on``, ``failed`` and ``answered_by``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tracker.audit.formats.report import Report
from tracker.audit.verdicts import Verdict, fails


def render_json(verdicts: Sequence[Verdict], report: Report) -> str:
    doc = {
        "models": [model_json(v) for v in verdicts],
        "fail_on": report.fail_on,
        "failed": fails(verdicts, report.fail_on),
        "answered_by": report.answered_by,
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def model_json(v: Verdict) -> dict[str, Any]:
    return {
        "repo": v.pin.repo,
        "revision": v.revision,
        "source": v.pin.source,
        "kind": v.pin.kind,
        "line": v.pin.line,
        "pinned": v.pin.pinned,
        "ref": v.pin.ref,
        "known": v.known,
        "advisories": [{"id": f.id, "severity": f.severity, "summary": f.summary} for f in v.advisories],
        "behind": v.behind,
        "upstream_head": v.upstream_head,
        "severities_since": dict(v.severities_since),
        "reachable": v.reachable,
        "note": v.note,
    }
