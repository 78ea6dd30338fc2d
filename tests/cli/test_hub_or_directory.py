"""``org/name`` is a Hub id even when a directory of that name is here (issue 17): the CLI
says so, and ``./org/name`` tracks the directory."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e.cli_helpers import Cli
from tests.hubemu import HubEmulator
from tracker.pipeline.sources import is_git_location, shadowing_directory


def test_a_hub_id_that_is_also_a_directory_is_read_from_the_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.daemon.helpers import tiny_repo

    upstream = tiny_repo(tmp_path / "upstream.git", commits=2)
    local = tmp_path / "work" / "org" / "model"
    subprocess.run(["git", "clone", "-q", str(upstream.path), str(local)], check=True)
    monkeypatch.chdir(tmp_path / "work")
    assert shadowing_directory("org/model") and not is_git_location("org/model")
    assert is_git_location("./org/model")
    with HubEmulator() as hub:
        hub.add_repo("org/model", upstream.path)
        cli = Cli(tmp_path / "cfg", f"sqlite:///{tmp_path / 'hw.db'}", f'[hub]\nendpoint = "{hub.url}"\n')
        run = cli.ok("track", "org/model")
        assert "tracked from the Hub" in run.err and "./org/model" in run.err
        assert "(hub: org/model" in run.out
        listed = {r["id"]: r for r in cli.ok("repos", "--json").json()}
        assert listed["org/model"]["source"] == "org/model"
    git = Cli(tmp_path / "cfg2", f"sqlite:///{tmp_path / 'hw2.db'}")
    run = git.ok("track", "./org/model")
    assert "(git: " in run.out and "tracked from the Hub" not in run.err
