"""``hubwatch audit`` over the local store: /v1/query's answer, drift from git, exit codes."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

from fastapi.testclient import TestClient

from storage import open_store
from tests.audit.conftest import Tracked, write_lock
from tests.audit.sboms import cyclonedx_bom
from tracker.api.app import create_app
from tracker.config import load_settings

UNKNOWN = "c" * 40


def _audit(t: Tracked, *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    r = t.cli("audit", "--format", "json", "--offline", *args)
    assert r.err == "", r.err
    return r.code, json.loads(r.out)


def test_same_answer_as_v1_query_and_drift_as_git_counts(tracked: Tracked, tmp_path: Path) -> None:
    t = tracked
    bom = cyclonedx_bom(tmp_path / "bom.json", [("org/model", s) for s in t.shas])
    code, doc = _audit(t, "--fail-on", "none", str(bom))
    assert code == 0
    by_rev = {m["revision"]: m for m in doc["models"]}
    store = open_store(t.db_url)
    try:
        client = TestClient(create_app(store, load_settings(t.cli.config, env={})))
        head = t.repo.git("rev-parse", "HEAD")
        for sha in t.shas:
            m = by_rev[sha]
            served = client.post("/v1/query", json={"commit": sha}).json().get("vulns", [])
            assert [a["id"] for a in m["advisories"]] == sorted(v["id"] for v in served)
            assert m["known"] is True and m["upstream_head"] == head and m["source"] == str(bom)
            assert m["behind"] == int(t.repo.git("rev-list", "--count", f"{sha}..{head}"))
    finally:
        store.close()
    assert [a["id"] for a in by_rev[t.shas[1]]["advisories"]] == [t.adv]
    assert by_rev[t.shas[1]]["advisories"][0]["severity"] == "HIGH"
    assert by_rev[t.shas[0]]["advisories"] == [] and by_rev[t.shas[3]]["behind"] == 0
    assert by_rev[t.shas[0]]["severities_since"] == {"HIGH": 2}  # the template change and its revert


def test_exit_codes_follow_fail_on(tracked: Tracked, tmp_path: Path) -> None:
    t = tracked
    clean = write_lock(tmp_path / "clean.lock", [("org/model", t.shas[0])])
    affected = write_lock(tmp_path / "affected.lock", [("org/model", t.shas[2])])
    unknown = write_lock(tmp_path / "unknown.lock", [("org/model", UNKNOWN), ("org/never-tracked", t.shas[0])])
    assert _audit(t, str(clean))[0] == 0
    assert _audit(t, str(affected))[0] == 3          # HIGH at the default --fail-on HIGH
    assert _audit(t, "--fail-on", "critical", str(affected))[0] == 0
    assert _audit(t, "--fail-on", "LOW", str(affected))[0] == 3
    code, doc = _audit(t, str(unknown))
    assert code == 0 and [m["known"] for m in doc["models"]] == [False, False]
    assert doc["models"][0]["note"] and doc["models"][1]["note"] == "not tracked"
    assert _audit(t, "--fail-on", "unknown", str(unknown))[0] == 3
    assert t.cli("audit", "--fail-on", "bogus", str(clean)).code == 2
    r = t.cli("audit", str(tmp_path / "missing.lock"))
    assert r.code == 1 and r.err.count("\n") == 1 and r.err.startswith("hubwatch: error:")


def test_prefixes_resolve_and_unpinned_are_findings(tracked: Tracked, tmp_path: Path) -> None:
    t = tracked
    src = tmp_path / "app.py"
    src.write_text(f'M.from_pretrained("org/model", revision="{t.shas[1][:10]}")\nM.from_pretrained("org/model")\n',
                   encoding="utf-8")
    code, doc = _audit(t, str(src))
    assert code == 3
    pinned, moving = doc["models"]
    assert pinned["revision"] == t.shas[1] and [a["id"] for a in pinned["advisories"]] == [t.adv]
    assert moving["pinned"] is False and moving["revision"] is None and moving["line"] == 2
    src.write_text('M.from_pretrained("org/model")\n', encoding="utf-8")
    assert _audit(t, str(src))[0] == 0
    assert _audit(t, "--fail-on", "unknown", str(src))[0] == 3


def test_lock_writes_tracked_heads_and_audits_back(tracked: Tracked, tmp_path: Path) -> None:
    t = tracked
    r = t.cli.ok("lock")
    (tmp_path / "models.lock").write_text(r.out, encoding="utf-8")
    head = t.repo.git("rev-parse", "HEAD")
    assert f'revision = "{head}"' in r.out and 'repo = "org/model"' in r.out
    assert t.cli.ok("lock", "org/model").out == r.out
    assert t.cli("lock", "org/nope").code == 1
    code, doc = _audit(t, str(tmp_path / "models.lock"))
    assert code == 3  # the head is the revert, itself a HIGH change
    assert doc["models"][0]["line"] == 3 and doc["models"][0]["behind"] == 0


def test_text_report_and_output_file(tracked: Tracked, tmp_path: Path) -> None:
    t = tracked
    lock = write_lock(tmp_path / "models.lock", [("org/model", t.shas[1]), ("org/model", UNKNOWN)])
    out = tmp_path / "report.txt"
    r = t.cli("audit", "--offline", "--output", str(out), str(lock))
    assert r.code == 3 and r.out == ""
    text = out.read_text()
    assert t.adv in text and "HIGH" in text and "unknown" in text and f"{lock}:1" in text
    assert "--fail-on HIGH: FAIL" in text


def test_no_input_reads_the_default_cache(tracked: Tracked, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    t = tracked
    snap = tmp_path / "cache" / "models--org--model" / "snapshots" / t.shas[2]
    snap.mkdir(parents=True)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    code, doc = _audit(t)
    assert code == 3 and [(m["repo"], m["revision"], m["kind"]) for m in doc["models"]] == [
        ("org/model", t.shas[2], "hf-cache")]
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "nowhere"))
    r = t.cli("audit")
    assert r.code == 1 and "no Hugging Face cache" in r.err


def test_git_ancestry_checked_apart(tracked: Tracked, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Containment as the store answers it agrees with git's own ancestry test (lock on stdin)."""
    t = tracked

    def is_ancestor(a: str, b: str) -> bool:
        return subprocess.run(["git", "merge-base", "--is-ancestor", a, b], cwd=t.repo.path).returncode == 0

    for sha in t.shas:
        expected = is_ancestor(t.shas[1], sha) and not is_ancestor(t.shas[3], sha)
        monkeypatch.setattr("sys.stdin", io.StringIO(f'[[model]]\nrepo = "org/model"\nrevision = "{sha}"\n'))
        code, doc = _audit(t, "--fail-on", "none", "-")
        assert code == 0 and doc["models"][0]["source"] == "-"
        assert (t.adv in [a["id"] for a in doc["models"][0]["advisories"]]) == expected


def test_spdx_input_end_to_end(tracked: Tracked, tmp_path: Path) -> None:
    from tests.audit.sboms import spdx_bom

    t = tracked
    path = spdx_bom(tmp_path / "sbom.spdx.json", [("org/model", t.shas[0]), ("org/model", t.shas[2])])
    code, doc = _audit(t, str(path))
    assert code == 3
    assert [[a["id"] for a in m["advisories"]] for m in doc["models"]] == [[], [t.adv]]
    assert all(m["kind"] == "spdx" and m["line"] for m in doc["models"])
