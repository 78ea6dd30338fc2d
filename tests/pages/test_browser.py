"""The HTML pages in headless Chromium (Debian's package): they render, their links work,
and a screenshot is taken. The data is a real corpus history tracked through the CLI."""

from __future__ import annotations

import html
import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import httpx
import pytest

from storage import open_store
from tests.api.data import serve_app, settings
from tests.e2e.cli_helpers import Cli
from tests.hubemu import clone_bundle
from tracker.api.app import create_app

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="LOUD: chromium is not installed (apt-get install chromium); "
                                                         "the browser checks did not run")
REPO = "google/gemma-2b-it"


def chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", f"--user-data-dir={tmp}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=90, check=True)


class Dom(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.classes: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag in ("a", "link") and a.get("href"):
            self.hrefs.append(str(a["href"]))
        if a.get("class"):
            self.classes += str(a["class"]).split()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    work = tmp_path_factory.mktemp("site")
    url = f"sqlite:///{work / 'hw.db'}"
    cli = Cli(work, url)
    cli.ok("track", str(clone_bundle(REPO, work / "mirror")), "--as", REPO)
    history = cli.ok("history", REPO, "--json").json()
    store = open_store(url)
    with serve_app(create_app(store, settings())) as base:
        yield base, history, work
    store.close()


def _load(base: str, path: str, tmp: Path) -> Dom:
    dom = Dom()
    dom.feed(chromium(tmp, "--dump-dom", base + path).stdout)
    assert "".join(dom.text).strip(), f"{path} rendered empty"
    return dom


def test_pages_render_and_links_work(site) -> None:  # type: ignore[no-untyped-def]
    base, history, work = site
    template_rev = next(e for e in history if any(c["kind"] == "chat_template" for c in e["changes"])
                        and e["advisory_id"])
    paths = ["/", f"/repos/{REPO}", f"/repos/{REPO}/{template_rev['sha']}", f"/advisories/{template_rev['advisory_id']}",
             f"/repos/{REPO}/plan", f"/repos/{REPO}/{template_rev['sha']}/plan",
             f"/repos/{REPO}/compare/{history[-1]['sha']}...{history[0]['sha']}", "/plan", "/docs"]
    checked: set[str] = set()
    with httpx.Client(timeout=30) as http:
        for path in paths:
            dom = _load(base, path, work / "profile")
            text = " ".join(dom.text)
            for internal in ("rendered_changed", "old_error", "is_empty", "truncated", "fields_total"):
                assert internal not in text, f"{path} shows {internal}"
            if path == f"/repos/{REPO}":
                assert all(e["sha"][:12] in text for e in history)  # every revision, with its severity
                assert "sev-HIGH" in dom.classes
            if path == f"/repos/{REPO}/{template_rev['sha']}":
                assert "add" in dom.classes and "del" in dom.classes  # the diffs are drawn
                assert "<bos><start_of_turn>user" in text  # the rendered chat-template diff
                assert "Why this severity:" in " ".join(dom.text) or "why" in dom.classes
            if path.startswith("/advisories/"):
                assert "**" not in text and "Affected" in text and "Introduced" in text
            if path.endswith("/plan") and path != "/plan":
                assert "Largest batch per card" in text and "T4 16 GB" in text and "A100 / H100 80 GB" in text
            for href in dom.hrefs:
                target = urljoin(base + path, href)
                if urlsplit(target).netloc != urlsplit(base).netloc or target in checked:
                    continue  # external references (the Hub) are not fetched
                checked.add(target)
                assert http.get(target).status_code == 200, f"{path} links to {href}"
    assert len(checked) > 10


def test_the_paste_a_config_form_in_the_browser(site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A page on loopback posts the form, as a person pressing the button does."""
    base, _history, work = site
    config = json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
                         "intermediate_size": 128, "num_attention_heads": 4, "num_hidden_layers": 2,
                         "vocab_size": 1000, "max_position_embeddings": 256})
    page = tmp_path / "post.html"
    page.write_text(f'<form method="post" action="{base}/plan"><textarea name="config">{html.escape(config)}</textarea>'
                    "</form><script>document.forms[0].submit()</script>", encoding="utf-8")
    dom = Dom()
    dom.feed(chromium(work / "profile", "--virtual-time-budget=10000", "--dump-dom", page.as_uri()).stdout)
    text = " ".join(dom.text)
    assert "GPU memory to fine-tune" in text and "T4 16 GB" in text


def test_screenshots_script(tmp_path: Path) -> None:
    """docs/screenshots/take.py, as anyone reruns it: one PNG per page."""
    out = Path(os.environ.get("HUBWATCH_SCREENSHOT_DIR", tmp_path))
    script = Path(__file__).resolve().parents[2] / "docs" / "screenshots" / "take.py"
    done = subprocess.run([sys.executable, str(script), str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    shots = sorted(out.glob("*.png"))
    assert {p.stem for p in shots} >= {"index", "repo", "revision", "revision-weights", "advisory", "compare",
                                        "model", "plan-form", "docs"}
    for p in shots:
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
        assert int.from_bytes(data[16:20], "big") == 1280
