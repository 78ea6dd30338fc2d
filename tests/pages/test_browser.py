"""The HTML pages in headless Chromium (Debian's package): they render, their links work,
and a screenshot is taken. The data is a real corpus history tracked through the CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
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
    paths = ["/", f"/repos/{REPO}", f"/repos/{REPO}/{template_rev['sha']}", f"/advisories/{template_rev['advisory_id']}"]
    checked: set[str] = set()
    with httpx.Client(timeout=30) as http:
        for path in paths:
            dom = _load(base, path, work / "profile")
            text = " ".join(dom.text)
            if path == f"/repos/{REPO}":
                assert all(e["sha"][:12] in text for e in history)  # every revision, with its severity
                assert "sev-HIGH" in dom.classes
            if "advisories" not in path and template_rev["sha"] in path:
                assert "add" in dom.classes and "del" in dom.classes  # the diffs are drawn
                assert "<bos><start_of_turn>user" in text  # the rendered chat-template diff
            for href in dom.hrefs:
                target = urljoin(base + path, href)
                if urlsplit(target).netloc != urlsplit(base).netloc or target in checked:
                    continue  # external references (the Hub) are not fetched
                checked.add(target)
                assert http.get(target).status_code == 200, f"{path} links to {href}"
    assert len(checked) > 10


def test_screenshot(site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    base, history, work = site
    out = Path(os.environ.get("HUBWATCH_SCREENSHOT_DIR", tmp_path)) / "revision.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    rev = next(e for e in history if e["advisory_id"])
    chromium(work / "profile", "--window-size=1280,1600", f"--screenshot={out}", f"{base}/repos/{REPO}/{rev['sha']}")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 1600)
