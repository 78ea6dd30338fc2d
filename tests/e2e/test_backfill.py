"""`track --backfill`: all (default), none (the head only), or the last N commits."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.cli_helpers import Cli
from tests.e2e.gitrepo import ModelRepo


@pytest.mark.parametrize(("backfill", "expected"), [("all", 4), ("none", 1), ("2", 2)])
def test_backfill(tmp_path: Path, backfill: str, expected: int) -> None:
    repo = ModelRepo(tmp_path / "up")
    shas = [repo.commit(f"c{i}", {"config.json": {"model_type": "llama", "eos_token_id": i}}) for i in range(4)]
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'hw.db'}")
    cli.ok("track", str(repo.path), "--as", "org/m", "--backfill", backfill)
    history = cli.ok("history", "org/m", "--json").json()
    assert [e["sha"] for e in history] == list(reversed(shas))[:expected]
    assert history[-1]["advisory_id"] is None  # the oldest read revision is the baseline
    new = repo.commit("c4", {"config.json": {"model_type": "llama", "eos_token_id": 9}})
    assert cli.ok("poll", "--json").json()[0]["new_revisions"] == 1
    top = cli.ok("history", "org/m", "--limit", "1", "--json").json()
    assert top[0]["sha"] == new and top[0]["advisory_id"] is not None
