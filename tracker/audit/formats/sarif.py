"""Audit report as SARIF 2.1.0, for code-scanning dashboards (GitHub's upload among them).

One rule per advisory (plus ``hubwatch/unknown-revision`` and ``hubwatch/unpinned``), one
result per (model reference, finding), located at the input file and, for lock files, SBOMs
and Python sources, the line. Rules carry ``security-severity`` (GitHub ranks by it:
CRITICAL 9.5, HIGH 8.0, MODERATE 5.5, LOW 2.0) and results a ``level``. Valid against the
official schema (tests check it against ``shared/sarif/sarif-schema-2.1.0.json``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from tracker.audit.formats.report import Report
from tracker.audit.pins import Pin
from tracker.audit.verdicts import Found, Verdict

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SECURITY_SEVERITY = {"CRITICAL": "9.5", "HIGH": "8.0", "MODERATE": "5.5", "LOW": "2.0", "unknown": "0.0"}
LEVEL = {"CRITICAL": "error", "HIGH": "error", "MODERATE": "warning", "LOW": "note", "unknown": "note"}
UNKNOWN, UNPINNED = "hubwatch/unknown-revision", "hubwatch/unpinned"

def _own_rule(rule_id: str, name: str, short: str, full: str, help_text: str, level: str,
              severity: str) -> dict[str, Any]:
    return {
        "id": rule_id, "name": name, "shortDescription": {"text": short}, "fullDescription": {"text": full},
        "help": {"text": help_text}, "defaultConfiguration": {"level": level},
        "properties": {"tags": ["security", "huggingface"], "precision": "high", "security-severity": severity},
    }


_OWN_RULES = {
    UNKNOWN: _own_rule(
        UNKNOWN, "UnknownModelRevision", "Model revision unknown to the advisory source",
        "The pinned commit is not in the advisory source's history of the repo, so no advisory can be "
        "ruled in or out.",
        "Track the repo (hubwatch track ORG/NAME) or check that the revision exists upstream.", "note", "0.0"),
    UNPINNED: _own_rule(
        UNPINNED, "UnpinnedModelRevision", "Model downloaded without a pinned commit",
        "No revision, or a branch or tag name: what loads changes whenever upstream pushes (bandit B615).",
        'Pass revision="<40-hex commit>" (hubwatch lock writes the current heads).', "warning", "5.0"),
}


def render_sarif(verdicts: Sequence[Verdict], report: Report) -> str:
    rules: dict[str, dict[str, Any]] = {}
    results: list[dict[str, Any]] = []
    for v in verdicts:
        for f in v.advisories:
            rules.setdefault(f.id, _rule(f))
            results.append(_result(report, v.pin, f.id, LEVEL[f.level], _message(v, f)))
        if not v.pin.pinned:
            rules.setdefault(UNPINNED, _OWN_RULES[UNPINNED])
            ref = f" ({v.pin.ref})" if v.pin.ref else ""
            results.append(_result(report, v.pin, UNPINNED, "warning",
                                   f"{v.pin.repo} is loaded without a pinned commit{ref}"))
        elif v.known is False:
            rules.setdefault(UNKNOWN, _OWN_RULES[UNKNOWN])
            results.append(_result(report, v.pin, UNKNOWN, "note",
                                   f"{v.pin.repo}@{v.revision}: {v.note or 'revision unknown'}"))
    ordered = sorted(rules)
    for r in results:
        r["ruleIndex"] = ordered.index(r["ruleId"])
    doc = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "hubwatch", "version": report.version, "semanticVersion": report.version,
                                "rules": [rules[k] for k in ordered]}},
            "results": results,
            "columnKind": "utf16CodeUnits",
            "properties": {"answeredBy": report.answered_by, "failOn": report.fail_on},
        }],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _rule(f: Found) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "id": f.id,
        "shortDescription": {"text": f.summary or f.id},
        "fullDescription": {"text": f.summary or f.id},
        "help": {"text": f"{f.id} ({f.severity or 'unrated'}): {f.summary}",
                 "markdown": f"**{f.id}** ({f.severity or 'unrated'}): {f.summary}"},
        "defaultConfiguration": {"level": LEVEL[f.level]},
        "properties": {"tags": ["security", "huggingface"], "precision": "very-high",
                       "security-severity": SECURITY_SEVERITY[f.level]},
    }
    if f.url:
        rule["helpUri"] = f.url
    return rule


def _message(v: Verdict, f: Found) -> str:
    text = f"{v.pin.repo}@{v.revision} is affected by {f.id} ({f.severity or 'unrated'}): {f.summary}"
    if v.behind:
        text += f"; upstream is {v.behind} revision(s) ahead"
    return text


def _result(report: Report, pin: Pin, rule_id: str, level: str, message: str) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": report.location(pin)}}
    if pin.line:
        physical["region"] = {"startLine": pin.line}
    key = "\0".join([rule_id, pin.repo, pin.revision or "", pin.source])
    return {
        "ruleId": rule_id,
        "level": level,
        "message": {"text": message},
        "locations": [{"physicalLocation": physical}],
        "partialFingerprints": {"hubwatchFinding/v1": hashlib.sha256(key.encode()).hexdigest()[:32]},
    }
