"""Audit report as a CycloneDX 1.6 JSON document: the audited models and their advisories.

Components: one ``machine-learning-model`` per (repo, revision) referenced, ``bom-ref`` its
purl. ``vulnerabilities``: one per advisory, with ``source``, a ``ratings`` entry of its
severity, ``affects`` by ``bom-ref`` (with the affected revision) and ``analysis``: hubwatch
matched the revision into the advisory's range, nobody triaged it yet, so ``in_triage``.
Valid for cyclonedx-python-lib's strict 1.6 validator (tested).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from tracker.audit.formats.report import Report, model_purl
from tracker.audit.verdicts import Found, Verdict

_RATING = {"CRITICAL": "critical", "HIGH": "high", "MODERATE": "medium", "LOW": "low"}
_NAMESPACE = uuid.UUID("6f1c4a52-3c55-4f6e-9d1e-2b8b8f5a7c11")


def render_cyclonedx(verdicts: Sequence[Verdict], report: Report) -> str:
    components: dict[str, dict[str, Any]] = {}
    vulns: dict[str, tuple[Found, dict[str, set[str]]]] = {}
    for v in verdicts:
        ref = model_purl(v.pin.repo, v.revision)
        if ref not in components:
            components[ref] = _component(v, ref)
        for f in v.advisories:
            _, affects = vulns.setdefault(f.id, (f, {}))
            affects.setdefault(ref, set()).add(v.revision or "")
    doc: dict[str, Any] = {
        "bomFormat": "CycloneDX",
        "specVersion": "1.6",
        "serialNumber": f"urn:uuid:{uuid.uuid5(_NAMESPACE, json.dumps(sorted(components)) + json.dumps(sorted(vulns)))}",
        "version": 1,
        "metadata": {
            "timestamp": report.now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "tools": {"components": [{"type": "application", "name": "hubwatch", "version": report.version}]},
        },
        "components": [components[k] for k in sorted(components)],
    }
    if vulns:
        doc["vulnerabilities"] = [_vulnerability(*vulns[k]) for k in sorted(vulns)]
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _component(v: Verdict, ref: str) -> dict[str, Any]:
    org, _, name = v.pin.repo.rpartition("/")
    out: dict[str, Any] = {"type": "machine-learning-model", "bom-ref": ref, "group": org, "name": name}
    if v.revision:
        out["version"] = v.revision
    out["purl"] = ref
    props = [{"name": "hubwatch:source", "value": v.pin.source}]
    if v.known is not None:
        props.append({"name": "hubwatch:known", "value": str(v.known).lower()})
    if v.behind is not None:
        props.append({"name": "hubwatch:behind", "value": str(v.behind)})
    if v.upstream_head:
        props.append({"name": "hubwatch:upstream_head", "value": v.upstream_head})
    out["properties"] = props
    return out


def _vulnerability(f: Found, affects: dict[str, set[str]]) -> dict[str, Any]:
    source: dict[str, Any] = {"name": "hubwatch"}
    if f.url:
        source["url"] = f.url
    out: dict[str, Any] = {
        "bom-ref": f"vuln:{f.id}",
        "id": f.id,
        "source": source,
        "ratings": [{"source": {"name": "hubwatch"}, "severity": _RATING.get(f.severity or "", "unknown"),
                     "method": "other"}],
        "description": f.summary or f.id,
    }
    if f.published:
        out["published"] = f.published
    if f.modified:
        out["updated"] = f.modified
    out["affects"] = [
        {"ref": ref, "versions": [{"version": rev, "status": "affected"} for rev in sorted(revs) if rev]}
        for ref, revs in sorted(affects.items())
    ]
    for entry in out["affects"]:
        if not entry["versions"]:
            del entry["versions"]
    out["analysis"] = {"state": "in_triage",
                       "detail": "hubwatch found the revision inside the advisory's GIT range; not triaged yet"}
    return out
