"""Screenshots of every HTML page, on real corpus histories, in headless Chromium.

    .venv/bin/python docs/screenshots/take.py [OUT_DIR]     (default: docs/screenshots)

Tracks two real histories from ../shared/hf-corpus (gemma-2b-it: chat template changes;
Mixtral-8x7B-v0.1: 19 weight shards in one revision) into a fresh SQLite file through the
CLI, serves the app on 127.0.0.1, and writes one PNG per page. Rerunnable: it starts from
nothing each time and overwrites the PNGs. Needs Debian's ``chromium`` (``.ci/run`` installs it).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

GEMMA, MIXTRAL = "google/gemma-2b-it", "mistralai/Mixtral-8x7B-v0.1"
WIDTH = 1280


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise SystemExit("chromium is not installed (apt-get install chromium)")
    return found


def shoot(url: str, out: Path, profile: Path, height: int = 1800) -> None:
    """One PNG of ``url`` at WIDTH x height (headless, no network but loopback)."""
    subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", "--hide-scrollbars", f"--user-data-dir={profile}",
                    f"--window-size={WIDTH},{height}", f"--screenshot={out}", url],
                   capture_output=True, timeout=120, check=True)


def pages(history: dict[str, list[dict]]) -> dict[str, tuple[str, int]]:  # type: ignore[type-arg]
    """name -> (path, height) of every page worth a picture."""
    gemma = history[GEMMA]
    template = next(e for e in gemma if e["advisory_id"] and any(c["kind"] == "chat_template" for c in e["changes"]))
    shards = next(e for e in history[MIXTRAL] if sum(c["kind"] == "weights" for c in e["changes"]) > 10)
    return {
        "index": ("/", 1100),
        "repo": (f"/repos/{GEMMA}", 1600),
        "revision": (f"/repos/{GEMMA}/{template['sha']}", 1800),
        "revision-weights": (f"/repos/{MIXTRAL}/{shards['sha']}", 2200),
        "advisory": (f"/advisories/{template['advisory_id']}", 1800),
        "compare": (f"/repos/{GEMMA}/compare/{gemma[-1]['sha']}...{gemma[0]['sha']}", 2000),
        "model": (f"/repos/{GEMMA}/plan", 2400),
        "plan-form": ("/plan", 900),
        "docs": ("/docs", 900),
    }


def main(out_dir: Path) -> list[Path]:
    from storage import open_store
    from tests.api.data import serve_app
    from tests.e2e.cli_helpers import Cli
    from tests.hubemu import clone_bundle
    from tracker.api.app import create_app
    from tracker.config import Settings

    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        url = f"sqlite:///{work / 'hw.db'}"
        cli = Cli(work, url)
        history = {}
        for repo in (GEMMA, MIXTRAL):
            cli.ok("track", str(clone_bundle(repo, work / "mirror")), "--as", repo)
            history[repo] = cli.ok("history", repo, "--json").json()
        store = open_store(url)
        try:
            with serve_app(create_app(store, Settings())) as base:
                for name, (path, height) in pages(history).items():
                    target = out_dir / f"{name}.png"
                    shoot(base + path, target, work / "profile", height)
                    written.append(target)
        finally:
            store.close()
    return written


if __name__ == "__main__":
    for p in main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent):
        print(p)
