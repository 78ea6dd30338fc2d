"""SARIF checked against the official 2.1.0 schema; CycloneDX through the library's strict validator."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator

from tests.audit.conftest import Tracked, write_lock
from tests.corpus import SHARED

SARIF_SCHEMA = json.loads((SHARED / "sarif" / "sarif-schema-2.1.0.json").read_text())
UNKNOWN = "d" * 40


def _report(t: Tracked, tmp_path: Path, fmt: str, monkeypatch) -> tuple[dict, Path]:  # type: ignore[no-untyped-def, type-arg]
    monkeypatch.chdir(tmp_path)
    lock = write_lock(tmp_path / "models.lock", [("org/model", t.shas[0]), ("org/model", t.shas[2]),
                                                 ("org/model", UNKNOWN)])
    src = tmp_path / "train.py"
    src.write_text('from transformers import AutoModel\nAutoModel.from_pretrained("org/model")\n', encoding="utf-8")
    out = tmp_path / f"report.{fmt}"
    r = t.cli("audit", "--offline", "--format", fmt, "--output", str(out), "models.lock", "train.py")
    assert r.code == 3, r.err
    return json.loads(out.read_text()), lock


def test_sarif_is_valid_and_ranked(tracked: Tracked, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    doc, _ = _report(tracked, tmp_path, "sarif", monkeypatch)
    jsonschema.Draft7Validator(SARIF_SCHEMA, format_checker=jsonschema.FormatChecker()).validate(doc)
    run = doc["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert set(rules) == {tracked.adv, "hubwatch/unknown-revision", "hubwatch/unpinned"}
    assert rules[tracked.adv]["properties"]["security-severity"] == "8.0"
    assert all(float(r["properties"]["security-severity"]) >= 0 for r in rules.values())
    by_rule = {r["ruleId"]: r for r in run["results"]}
    adv = by_rule[tracked.adv]
    assert adv["level"] == "error"
    loc = adv["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "models.lock" and loc["region"]["startLine"] == 5  # the second [[model]]
    unpinned = by_rule["hubwatch/unpinned"]["locations"][0]["physicalLocation"]
    assert unpinned["artifactLocation"]["uri"] == "train.py" and unpinned["region"]["startLine"] == 2
    for r in run["results"]:
        assert run["tool"]["driver"]["rules"][r["ruleIndex"]]["id"] == r["ruleId"]


def test_cyclonedx_passes_the_strict_validator(tracked: Tracked, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    doc, _ = _report(tracked, tmp_path, "cyclonedx", monkeypatch)
    error = JsonStrictValidator(SchemaVersion.V1_6).validate_str(json.dumps(doc))
    assert error is None, error
    refs = {c["bom-ref"] for c in doc["components"]}
    assert f"pkg:huggingface/org/model@{tracked.shas[2]}" in refs and "pkg:huggingface/org/model" in refs
    (vuln,) = doc["vulnerabilities"]
    assert vuln["id"] == tracked.adv and vuln["ratings"][0]["severity"] == "high"
    assert vuln["affects"] == [{"ref": f"pkg:huggingface/org/model@{tracked.shas[2]}",
                                "versions": [{"version": tracked.shas[2], "status": "affected"}]}]
    assert vuln["analysis"]["state"] == "in_triage"


def test_empty_reports_stay_valid(tracked: Tracked, tmp_path: Path) -> None:
    src = tmp_path / "empty.py"
    src.write_text("print('no models here')\n", encoding="utf-8")
    for fmt in ("sarif", "cyclonedx"):
        r = tracked.cli("audit", "--offline", "--format", fmt, str(src))
        assert r.code == 0
        doc = json.loads(r.out)
        if fmt == "sarif":
            jsonschema.Draft7Validator(SARIF_SCHEMA).validate(doc)
        else:
            assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(r.out) is None
