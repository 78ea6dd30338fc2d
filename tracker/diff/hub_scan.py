"""The Hub's own scanners' verdicts per weight file, compared between revisions.

Layer 1 (stage 4, diff), pure. The snapshot records ``securityFileStatus`` (av scan,
pickle-import scan, Protect AI, JFrog ...) for each weight content when it first appears;
a file whose verdict differs from the same path's in the base, or a new file the Hub
already flags, is reported: "now flagged unsafe by pickleImportScan".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracker.diff import topics as t
from tracker.diff.sides import Sides
from tracker.model import Change, ChangeKind

FLAGS = frozenset({"unsafe", "suspicious", "dangerous", "infected", "malicious"})


def flagged_by(status: Mapping[str, Any] | None) -> list[str]:
    """The scanners (``avScan``, ``pickleImportScan``, ...) that flag the file, sorted."""
    if not status:
        return []
    out = [
        k for k, v in status.items()
        if isinstance(v, Mapping) and str(v.get("status", "")).lower() in FLAGS
    ]
    if not out and str(status.get("status", "")).lower() in FLAGS:
        out.append("status")
    return sorted(out)


def _overall(status: Mapping[str, Any] | None) -> str | None:
    return str(status.get("status")) if status and status.get("status") is not None else None


def diff_hub_scans(sides: Sides) -> list[Change]:
    """One change per weight file whose Hub verdict moved (or arrives already flagged)."""
    old = {f.path: f.hub_scan for f in sides.base.weights.files}
    out: list[Change] = []
    for f in sides.head.weights.files:
        if f.hub_scan is None and f.path not in old:
            continue
        before, now = old.get(f.path), f.hub_scan
        was, nowf = flagged_by(before), flagged_by(now)
        if was == nowf and _overall(before) == _overall(now):
            continue
        if now is None:
            continue  # not reported this time: nothing to compare
        if nowf and nowf != was:
            summary = f"{f.path} now flagged {_overall(now) or 'unsafe'} by the Hub's {', '.join(nowf)}"
            topic = t.HUB_SCAN_FLAGGED
        elif was and not nowf:
            summary = f"{f.path} no longer flagged by the Hub's {', '.join(was)}"
            topic = t.HUB_SCAN_CLEARED
        elif before is None:
            continue  # a first report that flags nothing is no news
        else:
            summary = f"{f.path}: the Hub's scan status {_overall(before)} -> {_overall(now)}"
            topic = t.HUB_SCAN_OTHER
        out.append(Change(
            ChangeKind.WEIGHTS, f.path, summary, (topic,),
            detail={"op": "changed", "hub_scan": {"old": before, "new": now}, "flagged_by": nowf},
        ))
    return out
