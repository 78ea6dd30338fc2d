"""HfSource: commit parents come from the git protocol the Hub serves (its commit listing has
none), exact around merges; a mirror without git falls back to the listing order; a git read
that fails leaves the listing unread rather than guessed."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.hub.conftest import REPO, Tiny
from tests.hubemu import HubEmulator, RepoBuilder
from tracker.errors import SourceUnavailable
from tracker.hub._hfgit import commit_parents
from tracker.hub.hf import HfSource


def _merge_repo(b: RepoBuilder, first: str) -> tuple[str, str, str]:
    """main: first -> a; a side branch from first, newer than a; then the merge of both."""
    main = b.commit({"config.json": b'{"model_type": "tiny", "n": 1}'}, title="main edit")
    side = b.commit({"README.md": b"side\n"}, title="side edit", parents=[first], branch="side")
    merge = b.commit({}, title="merge side", parents=[main, side])
    return main, side, merge


def test_merge_parents_are_git_parents(hub: HubEmulator, tiny: Tiny) -> None:
    b = tiny.builder
    main, side, merge = _merge_repo(b, tiny.head)
    src = HfSource(REPO, endpoint=hub.url)

    listing = src.list_commits("main", stop_at={tiny.head})

    by_sha = {c.sha: c for c in listing.commits}
    # the listing's order (by date) puts the side commit right after the merge
    assert [c.sha for c in listing.commits][:2] == [merge, side]
    assert by_sha[merge].parents == (main, side)
    assert by_sha[side].parents == (tiny.head,) and by_sha[main].parents == (tiny.head,)
    assert listing.reached_known


def test_branch_moving_on_while_read_still_gives_parents(hub: HubEmulator, tiny: Tiny) -> None:
    """Git sees a newer head than the listing did: the read deepens until it holds them all."""
    listed = [tiny.builder.commit({"x.txt": str(i).encode()}) for i in range(3)]
    for i in range(5):  # pushed after the listing was read, before git is asked
        tiny.builder.commit({"y.txt": str(i).encode()})

    parents = commit_parents(f"{hub.url}/{REPO}", "main", listed[::-1], token=None, timeout=10,
                             what="t", repo_id=REPO)

    assert parents == {listed[2]: (listed[1],), listed[1]: (listed[0],), listed[0]: (tiny.head,)}
    assert hub.count("git_upload_pack") >= 3  # ls-refs, the first fetch, a deeper one


def test_no_git_protocol_falls_back_to_the_listing_order(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with HubEmulator(git_protocol=False) as hub:
        b = RepoBuilder.init(tmp_path / "r.git")
        first = b.commit({"config.json": b"{}"}, title="init")
        second = b.commit({"README.md": b"x"}, title="card")
        hub.add_repo(REPO, b.path)
        with caplog.at_level(logging.WARNING, "hubwatch.hub"):
            listing = HfSource(REPO, endpoint=hub.url).list_commits("main")
        assert hub.count("git_refs") == 1 and not hub.internal_errors
    assert [(c.sha, c.parents) for c in listing.commits] == [(second, (first,)), (first, ())]
    assert "parents taken from the listing order" in caplog.text


def test_a_failing_git_read_is_unavailable_not_guessed(hub: HubEmulator, tiny: Tiny) -> None:
    hub.faults.add("status", route="git_upload_pack", status=503, times=None)
    src = HfSource(REPO, endpoint=hub.url)
    tiny.builder.commit({"x.txt": b"1"})
    with pytest.raises(SourceUnavailable):
        src.list_commits("main", stop_at={tiny.head})


def test_the_token_reaches_git_in_a_header_never_on_the_command_line(hub: HubEmulator, tiny: Tiny) -> None:
    src = HfSource(REPO, endpoint=hub.url, token="hf_secret_token_value")
    tiny.builder.commit({"x.txt": b"1"})
    src.list_commits("main", stop_at={tiny.head})
    git_requests = [r for r in hub.requests if r.route.startswith("git_")]
    assert git_requests
    assert all(r.headers.get("authorization") == "Bearer hf_secret_token_value" for r in git_requests)
    assert all("hf_secret_token_value" not in r.path for r in git_requests)
