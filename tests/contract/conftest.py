"""Fixtures for the HubSource contract suite: every test runs once per implementation.

``open_source(repo_id, git_dir)`` gives a GitSource over the repo, or an HfSource reading the
same repo through the Hub emulator (session-wide, corpus histories preloaded).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.hubemu import hf_test_env

hf_test_env()  # before huggingface_hub's constants are imported

import pytest  # noqa: E402

from tests.hubemu import HubEmulator, bundle_names, bundle_path, clone_bundle  # noqa: E402
from tracker.hub.hf import HfSource  # noqa: E402
from tracker.hub.interface import HubSource  # noqa: E402
from tracker.hub.localgit import GitSource  # noqa: E402

IMPLS = ("git", "hf")
OpenSource = Callable[..., HubSource]


def history(name: str) -> dict[str, Any]:
    """The corpus's own record of a bundle's commits (oldest first)."""
    data: dict[str, Any] = json.loads(bundle_path(name).with_suffix(".json").read_text())
    return data


def git_out(git_dir: Path, *args: str) -> str:
    """Independent reads of the git repo, to check the sources against."""
    return git_bytes(git_dir, *args).decode()


def git_bytes(git_dir: Path, *args: str) -> bytes:
    return subprocess.run(
        ["git", "-C", str(git_dir), *args], capture_output=True, check=True
    ).stdout


@pytest.fixture(scope="session")
def corpus_repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("corpus")
    return {name: clone_bundle(name, base) for name in bundle_names()}


@pytest.fixture(scope="session")
def hub(corpus_repos: dict[str, Path]) -> Iterator[HubEmulator]:
    # small commit pages so that every longer history is read over several Link pages
    with HubEmulator(commits_page=7, tree_page=10) as emu:
        for name, path in corpus_repos.items():
            emu.add_repo(history(name)["hf_repo_id"], path)
        yield emu
    assert not emu.internal_errors, emu.internal_errors


@pytest.fixture(params=IMPLS)
def impl(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def open_source(impl: str, hub: HubEmulator) -> Iterator[OpenSource]:
    made: list[HubSource] = []

    def make(repo_id: str, git_dir: Path, *, register: bool = True) -> HubSource:
        src: HubSource
        if impl == "git":
            src = GitSource(str(git_dir), repo_id, timeout=20)
        else:
            if register:
                hub.add_repo(repo_id, git_dir)
            src = HfSource(repo_id, endpoint=hub.url, timeout=20)
        made.append(src)
        return src

    yield make
    for src in made:
        src.close()
