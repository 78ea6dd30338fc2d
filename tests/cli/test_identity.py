"""Repo identity (issue 15 point 4): a tracked id is never silently re-pointed at another
source, and config.toml's [[repos]] are checked at start and seen by repos/poll/untrack
before any daemon ran."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from storage import open_store
from tests.e2e.cli_helpers import Cli
from tests.e2e.gitrepo import ModelRepo
from tracker.api.app import create_app
from tracker.config import load_settings


def _two_repos(tmp_path: Path) -> tuple[ModelRepo, ModelRepo]:
    a, b = ModelRepo(tmp_path / "a"), ModelRepo(tmp_path / "b")
    a.commit("a1", {"config.json": {"hidden_size": 8}})
    a.commit("a2", {"config.json": {"hidden_size": 16}})
    b.commit("b1", {"config.json": {"hidden_size": 32}})
    b.commit("b2", {"config.json": {"hidden_size": 64}})
    return a, b


def _state(cli: Cli) -> tuple[object, ...]:
    (repo,) = cli.ok("repos", "--json").json()
    return (repo["source"], repo["head"], cli.ok("history", "org/m", "--json").out,
            cli.ok("advisories", "--json").out)


def test_tracking_another_source_under_a_tracked_id_is_refused(tmp_path: Path) -> None:
    a, b = _two_repos(tmp_path)
    cli = Cli(tmp_path / "hw", f"sqlite:///{tmp_path / 'hw.db'}")
    cli.ok("track", str(a.path), "--as", "org/m")
    before = _state(cli)
    refused = cli("track", str(b.path), "--as", "org/m")
    assert refused.code == 1 and refused.out == ""
    (line,) = refused.err.splitlines()
    assert line.startswith("hubwatch: error: org/m is already tracked from ") and str(a.path) in line
    assert _state(cli) == before  # nothing read, nothing marked, no advisory
    cli.ok("untrack", "org/m")
    assert cli("track", str(b.path), "--as", "org/m").code == 1  # an untracked id keeps its source too
    cli.ok("track", str(a.path), "--as", "org/m")  # the same source again is fine

    replaced = cli.ok("track", str(b.path), "--as", "org/m", "--replace")
    assert "replacing the source of org/m" in replaced.err and str(b.path) in replaced.err
    assert cli.ok("repos", "--json").json()[0]["source"] == str(b.path)


def test_the_api_answers_409_for_another_source(tmp_path: Path) -> None:
    a, _ = _two_repos(tmp_path)
    url = f"sqlite:///{tmp_path / 'hw.db'}"
    Cli(tmp_path / "hw", url).ok("track", str(a.path), "--as", "org/m", "--no-read")
    store = open_store(url)
    settings = load_settings(None, {"HUBWATCH_API_TOKEN": "t" * 32})
    client = TestClient(create_app(store, settings))
    r = client.post("/api/v1/repos", json={"source": "org/m"},  # the Hub's org/m: another source
                    headers={"Authorization": "Bearer " + "t" * 32})
    assert r.status_code == 409 and str(a.path) in r.json()["message"]
    assert store.get_repo("org/m").source == str(a.path)  # type: ignore[union-attr]
    store.close()


def test_config_repos_are_checked_at_start(tmp_path: Path) -> None:
    for entry, wanted in (
        ('id = "not-an-id"', "not an org/name repo id"),
        ('id = "org/../x"', "not an org/name repo id"),
        ('id = "org/x"\nbranch = "-x"', "invalid branch"),
        ('id = "org/x"\n[[repos]]\nid = "org/x"', "listed twice"),
    ):
        cli = Cli(tmp_path / "bad", f"sqlite:///{tmp_path / 'bad.db'}", f"[[repos]]\n{entry}\n")
        r = cli("repos")
        assert r.code == 1 and r.err.startswith("hubwatch: error: [[repos]]") and wanted in r.err, r.err


def test_config_repos_are_seen_without_a_daemon(tmp_path: Path) -> None:
    a, _ = _two_repos(tmp_path)
    extra = f'[[repos]]\nid = "org/m"\nsource = "{a.path}"\n[[repos]]\nid = "org/other"\nsource = "{a.path}"\n'
    cli = Cli(tmp_path / "hw", f"sqlite:///{tmp_path / 'hw.db'}", extra)
    assert [r["id"] for r in cli.ok("repos", "--json").json()] == ["org/m", "org/other"]
    cli.ok("untrack", "org/other")
    polled = cli.ok("poll", "--json").json()
    assert [(p["repo"], p["status"]) for p in polled] == [("org/m", "ok")]
    assert len(cli.ok("history", "org/m", "--json").json()) == 2
    assert [r["id"] for r in cli.ok("repos", "--json").json()] == ["org/m"]  # untracked stays untracked
