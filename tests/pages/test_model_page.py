"""The model page of the seeds: its sections in order, its numbers equal ``hubwatch plan``'s,
its Markdown twin, the paste-a-config form, and ``plan ORG/NAME`` of an untracked Hub repo."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

from fastapi.testclient import TestClient

from storage import open_store
from tests.api.data import settings
from tests.e2e.cli_helpers import Cli
from tests.e2e.test_weights_over_http import CONFIG, llama_tensors
from tests.hubemu import HubEmulator, RepoBuilder, hf_test_env, safetensors_bytes
from tracker.api.app import create_app
from tracker.planner.cards import CARDS

SEED_SECTIONS = ("Our count against the checkpoint", "What it costs to run", "Memory: what fits on which card",
                 "Structure", "What the verifier says", "What changed upstream", "Do this to your own model")


def _repo(tmp_path: Path) -> tuple[Path, str]:
    b = RepoBuilder.init(tmp_path / "acme.git")
    b.commit({"config.json": json.dumps(CONFIG).encode(), "README.md": b"hi"}, title="initial")
    sha = b.commit({"model.safetensors": safetensors_bytes(llama_tensors("BF16"))}, title="weights")
    return tmp_path / "acme.git", sha


def _cli(tmp_path: Path, hub: HubEmulator) -> Cli:
    return Cli(tmp_path / "w", f"sqlite:///{tmp_path / 'hw.db'}",
               extra_config=f'[hub]\nendpoint = "{hub.url}"\ntimeout_seconds = 10\n')


def test_model_page_has_the_seed_sections_and_the_cli_numbers(tmp_path: Path) -> None:
    hf_test_env()
    git, sha = _repo(tmp_path)
    with HubEmulator() as hub:
        hub.add_repo("acme/tiny", git)
        cli = _cli(tmp_path, hub)
        cli.ok("track", "acme/tiny")
    plan = cli.ok("plan", "acme/tiny", "--json").json()
    store = open_store(f"sqlite:///{tmp_path / 'hw.db'}")
    try:
        client = TestClient(create_app(store, settings()))
        html = client.get("/repos/acme/tiny/plan").text
        md = client.get("/repos/acme/tiny/plan.md")
        at = client.get(f"/repos/acme/tiny/{sha}/plan")
    finally:
        store.close()
    assert at.status_code == 200
    positions = [html.index(s) for s in SEED_SECTIONS]
    assert positions == sorted(positions)  # every section, in the seed's order
    m = plan["memory_bytes"]
    assert f"takes about {m['full_finetune'] / 1e9:.2f} GB" in html or f"takes about {m['full_finetune'] / 1e6:.0f} MB" in html
    assert f"{plan['params']['total']:,} parameters" in html
    assert plan["params"]["checkpoint"] is not None  # the CLI read the headers' count, as the pipeline did
    assert f"{plan['params']['checkpoint']:,} scalars" in html
    for card in CARDS:
        fit = plan["cards"][card.key]
        row = re.search(rf"<tr><td>{re.escape(card.name)}</td>(.*?)</tr>", html)
        assert row, card.name
        cells = re.findall(r'<td class="num">([^<]*)</td>', row.group(1))
        assert cells == [f"batch {fit[k]}" if fit[k] else "does not fit" for k in ("full_finetune", "lora", "serve")]
    assert "t4/" not in html and "a100-80" not in html  # card names as people write them
    # the estimates-not-measurements line quotes the planner accuracy benchmark's own figure
    summary = plan["accuracy"]["summary"]
    assert "benchmarks/planner_accuracy.py" in summary
    accuracy_line = re.search(r'<p id="accuracy">(.*?)</p>', html)
    assert accuracy_line and summary in unescape(accuracy_line.group(1))
    assert 'href="/repos/acme/tiny/plan.md"' in html
    assert md.status_code == 200 and md.headers["content-type"] == "text/markdown; charset=utf-8"
    text = md.text
    assert "| Card | Full fine-tune | LoRA r=16 |" in text and "| T4 16 GB |" in text
    assert [text.index(f"## {s}") for s in SEED_SECTIONS] == sorted(text.index(f"## {s}") for s in SEED_SECTIONS)


def test_paste_a_config(sqlite_store) -> None:  # type: ignore[no-untyped-def]
    client = TestClient(create_app(sqlite_store, settings()))
    form = client.get("/plan")
    assert form.status_code == 200 and '<textarea id="config" name="config"' in form.text
    ok = client.post("/plan", data={"config": json.dumps(CONFIG)})
    assert ok.status_code == 200 and "GPU memory to fine-tune" in ok.text and "T4 16 GB" in ok.text
    api = client.post("/api/v1/plan", content=json.dumps(CONFIG)).json()
    assert f"{api['params']['total']:,} parameters" in ok.text  # the JSON route's numbers
    bad = client.post("/plan", data={"config": "{not json"})
    assert bad.status_code == 400 and "not valid JSON" in bad.text and "{not json" in bad.text
    unknown = client.post("/plan", data={"config": json.dumps({"model_type": "no-such-family"})})
    assert unknown.status_code == 422 and "cannot be sized" in unknown.text
    assert client.post("/plan", data={"config": "[1, 2]"}).status_code == 400
    assert client.post("/plan", data={"config": ""}).status_code == 400


def test_plan_of_an_untracked_hub_repo_reads_a_few_files(tmp_path: Path) -> None:
    hf_test_env()
    git, sha = _repo(tmp_path)
    with HubEmulator() as hub:
        hub.add_repo("acme/tiny", git)
        cli = _cli(tmp_path, hub)
        before = len(hub.requests)
        head = cli.ok("plan", "acme/tiny", "--json").json()
        used = len(hub.requests) - before
        pinned = cli.ok("plan", f"acme/tiny@{sha}", "--json").json()
    assert head["params"]["checkpoint"] == head["params"]["total"] > 0
    assert pinned["params"] == head["params"]
    assert used <= 6  # head, tree, config.json, two ranges of one header
    assert cli.ok("repos", "--json").json() == []  # nothing was tracked
    missing = cli("plan", str(tmp_path / "missing.json"))
    assert missing.code == 1 and missing.err.strip() == f"hubwatch: error: no such file: {tmp_path / 'missing.json'}"
