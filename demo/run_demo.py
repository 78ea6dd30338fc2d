"""`make demo`: track three real model histories from git bundles, offline, and show what changed.

The bundles are real Hugging Face repo histories (weights as LFS pointers), copied from the
shared corpus. Everything runs against a throwaway SQLite database under demo/out/.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
BUNDLES = sorted((HERE / "histories").glob("*.bundle"))


def hubwatch(*args: str) -> str:
    cmd = [sys.executable, "-m", "tracker.cli", "--config", str(OUT / "config.toml"), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=OUT)
    if done.returncode != 0:
        sys.exit(f"hubwatch {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def main() -> int:
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    (OUT / "config.toml").write_text(
        '[storage]\nurl = "sqlite:///demo.db"\n[advisories]\nosv_api = ""\n', encoding="utf-8"
    )
    for bundle in BUNDLES:
        print(hubwatch("track", str(bundle)).strip())
    for bundle in BUNDLES:
        repo = bundle.stem.replace("__", "/", 1)
        history = json.loads(hubwatch("history", repo, "--json"))
        print(f"\n== {repo}: {len(history)} revisions")
        print(hubwatch("history", repo, "--limit", "8"))
        rank = {"CRITICAL": 0, "HIGH": 1}
        worst = sorted(
            ((c["severity"], r["sha"][:10], c["summary"]) for r in history for c in r["changes"]
             if c["severity"] in rank),
            key=lambda w: rank[w[0]],
        )
        print(f"most severe changes ({len(worst)}):")
        for sev, sha, summary in worst[:10]:
            print(f"  {sev:8} {sha}  {summary[:110]}")
    advisories = json.loads(hubwatch("advisories", "--json"))
    print(f"\n{len(advisories)} OSV advisories recorded; first one:")
    if advisories:
        print(json.dumps(advisories[-1], indent=2)[:1500])
    return 0


if __name__ == "__main__":
    sys.exit(main())
