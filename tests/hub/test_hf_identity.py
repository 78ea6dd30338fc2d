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


def test_a_renamed_repo_is_followed_and_says_where_it_went(hub: HubEmulator, tiny: Tiny) -> None:
    src = HfSource(REPO, endpoint=hub.url)
    assert src.resolve_head("main") == tiny.head and src.renamed_to() is None
    hub.rename_repo(REPO, "acme/renamed-model")

    assert src.resolve_head("main") == tiny.head  # the 307 is followed, as the Hub client does
    assert src.renamed_to() == "acme/renamed-model"
    assert src.web_url == f"{hub.url}/acme/renamed-model"
    assert [r.status for r in hub.requests if r.route == "model_info"][-2:] == [307, 200]
    new = tiny.builder.commit({"x.txt": b"1"})
    listing = src.list_commits("main", stop_at={tiny.head})  # API and git both follow it
    assert [(c.sha, c.parents) for c in listing.commits] == [(new, (tiny.head,))]
    assert {r.status for r in hub.requests if r.route == "git_refs"} == {307, 200}


def test_the_old_name_taken_again_is_served_as_itself(hub: HubEmulator, tiny: Tiny, tmp_path: Path) -> None:
    hub.rename_repo(REPO, "acme/renamed-model")
    squatter = RepoBuilder.init(tmp_path / "squat.git")
    squatter.commit({"config.json": b"{}"})
    hub.add_repo(REPO, squatter.path)
    src = HfSource(REPO, endpoint=hub.url)
    assert src.resolve_head("main") == squatter.head() and src.renamed_to() is None


def test_other_letter_case_is_not_a_rename(hub: HubEmulator, tiny: Tiny) -> None:
    """The Hub's ids are case-insensitive: an id tracked in other letters is answered (after a
    redirect) under its canonical spelling, which is the same repo."""
    hub.rename_repo(REPO, REPO.upper())
    src = HfSource(REPO, endpoint=hub.url)
    assert src.resolve_head("main") == tiny.head
    assert hub.requests[0].status == 307 and src.renamed_to() is None
