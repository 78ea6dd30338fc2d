"""HfSource: what the Hub says about the repo itself (issue 10 point 8): its creation date
(namespace reuse is told from a squash by it) and the id it serves the repo under."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from tests.hub.conftest import REPO, Tiny
from tests.hubemu import HubEmulator, RepoBuilder
from tracker.hub.hf import HfSource
from tracker.hub.localgit import GitSource


def test_created_at_is_the_hubs_and_moves_when_the_repo_is_made_again(
    hub: HubEmulator, tiny: Tiny, tmp_path: Path
) -> None:
    src = HfSource(REPO, endpoint=hub.url)
    first = src.created_at()
    assert first == datetime(2024, 1, 1, 0, 1, tzinfo=UTC)  # the root commit's time (RepoBuilder)
    other = RepoBuilder.init(tmp_path / "other.git")
    other.commit({"config.json": b"{}"})
    before = time.time()
    hub.recreate_repo(REPO, other.path)
    again = src.created_at()
    assert again is not None and again.timestamp() >= before - 0.001
    assert hub.count("model_info") == 2 and all("expand=createdAt" in r.path for r in hub.requests)


def test_git_has_no_creation_date(tiny: Tiny) -> None:
    assert GitSource(str(tiny.builder.path), repo_id=REPO).created_at() is None
