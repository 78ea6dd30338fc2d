"""The read side over real corpus histories tracked through the CLI: paging with any page size,
feeds that parse as clean Atom 1.0, compare and plans through the API."""

from __future__ import annotations

from pathlib import Path

import feedparser
import pytest
from fastapi.testclient import TestClient

from storage import open_store
from tests.api.data import settings
from tests.e2e.cli_helpers import Cli
from tests.feeds.test_atom import adv, check_atom
from tests.hubemu import clone_bundle
from tracker.api.app import create_app

REPOS = ["google/gemma-2b-it", "openai/gpt-oss-20b", "mistralai/Mixtral-8x7B-v0.1"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    work: Path = tmp_path_factory.mktemp("corpus")
    url = f"sqlite:///{work / 'hw.db'}"
    cli = Cli(work, url)
    histories, advisories = {}, {}
    for repo in REPOS:
        cli.ok("track", str(clone_bundle(repo, work / "mirrors")), "--as", repo)
        histories[repo] = cli.ok("history", repo, "--json").json()
        advisories[repo] = cli.ok("advisories", repo, "--json").json()
    store = open_store(url)
    yield TestClient(create_app(store, settings())), histories, advisories, cli
    store.close()


def test_any_page_size_returns_every_revision_once_newest_first(corpus) -> None:  # type: ignore[no-untyped-def]
    client, histories, _, _ = corpus
    for repo, history in histories.items():
        expected = [e["sha"] for e in history]
        for size in range(1, len(expected) + 2):
            seen, cursor = [], None
            while True:
                page = client.get(f"/api/v1/repos/{repo}/revisions",
                                  params={"limit": size, **({"cursor": cursor} if cursor else {})}).json()
                seen += [e["sha"] for e in page["revisions"]]
                cursor = page["next_cursor"]
                if cursor is None:
                    break
            assert seen == expected, (repo, size)
        whole = client.get(f"/api/v1/repos/{repo}/revisions", params={"limit": 1000}).json()["revisions"]
        assert whole == history  # the same objects as `history --json`


def test_every_feed_is_clean_atom(corpus) -> None:  # type: ignore[no-untyped-def]
    client, _, advisories, _ = corpus
    every = check_atom(client.get("/feeds/all.atom").content)
    assert sorted(adv(e) for e in every.entries) == sorted(a["id"] for recs in advisories.values() for a in recs)
    for repo, records in advisories.items():
        parsed = check_atom(client.get(f"/feeds/{repo}.atom").content)
        by_id = {a["id"]: a for a in records}
        assert sorted(adv(e) for e in parsed.entries) == sorted(by_id)
        for e in parsed.entries:
            assert e.updated == by_id[adv(e)]["modified"]
            assert client.get(e.link).status_code == 200
    assert isinstance(every, feedparser.FeedParserDict)


def test_compare_and_plans_on_real_revisions(corpus) -> None:  # type: ignore[no-untyped-def]
    client, histories, _, cli = corpus
    repo = "mistralai/Mixtral-8x7B-v0.1"
    history = histories[repo]
    root, head = history[-1]["sha"], history[0]["sha"]
    diff = client.get(f"/api/v1/repos/{repo}/compare/{root[:10]}...{head[:10]}").json()
    assert diff["base"] == root and diff["head"] == head
    same = cli.ok("diff", repo, root, head, "--json").json()  # the API compares as `hubwatch diff` does
    assert diff["changes"] == same["changes"] and diff["severity"] == same["severity"]
    assert any(c["kind"] == "config" for c in diff["changes"]) and diff["severity"] is not None
    assert diff["plan_delta"]  # the architecture changed (mistral -> mixtral): the plan moved
    empty = client.get(f"/api/v1/repos/{repo}/compare/{head}...{head}").json()
    assert empty["changes"] == [] and empty["severity"] is None
    bad = client.get(f"/api/v1/repos/{repo}/compare/{head}")
    assert bad.status_code == 400
    plan = client.get(f"/api/v1/repos/{repo}/plan").json()
    assert plan["revision"] == head and plan["params"]["total"] > plan["params"]["active"] > 0  # MoE
    posted = client.post("/api/v1/plan", json={
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
        "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32, "vocab_size": 32000,
        "max_position_embeddings": 4096, "torch_dtype": "float16", "tie_word_embeddings": False,
    })
    assert posted.status_code == 200
    assert 6.5e9 < posted.json()["params"]["total"] < 7e9  # Llama-2-7B's 6.74 B
    assert set(posted.json()["cards"]) == {"t4", "l4", "a100-40", "a100-80", "h200"}
    two = client.post("/api/v1/plan", json=[{"model_type": "llama"}, {"model_type": "gpt2"}])
    assert two.status_code == 200 and len(two.json()) == 2
    for bad in (b"not json", b"[]", b"42", b'{"a":' * 5000):
        r = client.post("/api/v1/plan", content=bad)
        assert r.status_code in (400, 413, 422) and set(r.json()) == {"code", "message"}
