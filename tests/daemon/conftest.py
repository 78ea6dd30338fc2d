"""Fixtures for the daemon tests: a running Hub emulator, tiny synthetic repos, a Daemon factory.

Repos are small on purpose (a config, a README, a safetensors file of a few bytes): the
tests are about scheduling, leases, budgets and faults, and the machine has two cores.
"""

from __future__ import annotations

from tests.hubemu import hf_test_env

hf_test_env()  # before huggingface_hub's constants are imported

from collections.abc import Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402

from storage import Store, open_store  # noqa: E402
from tests.daemon.helpers import make_daemon, tiny_repo  # noqa: E402
from tests.hubemu import HubEmulator, RepoBuilder  # noqa: E402
from tracker.daemon import Daemon  # noqa: E402


@pytest.fixture
def hub() -> Iterator[HubEmulator]:
    with HubEmulator() as emu:
        yield emu
    assert not emu.internal_errors, emu.internal_errors


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Store]:
    st = open_store(f"sqlite:///{tmp_path / 'hubwatch.db'}")
    yield st
    st.close()


@pytest.fixture
def add_repo(hub: HubEmulator, db: Store, tmp_path: Path) -> Callable[..., RepoBuilder]:
    """``add_repo("org/x", commits=3)``: build it, serve it, track it; returns the builder."""

    def add(repo_id: str, *, commits: int = 2, track: bool = True, **kw: Any) -> RepoBuilder:
        b = tiny_repo(tmp_path / "repos" / f"{repo_id.replace('/', '__')}.git", commits=commits, **kw)
        hub.add_repo(repo_id, b.path)
        if track:
            db.add_repo(repo_id, source=repo_id, source_kind="hub")
        return b

    return add


@pytest.fixture
def daemon(db: Store, hub: HubEmulator) -> Callable[..., Daemon]:
    """``daemon(concurrency=2, ...)``: a Daemon over ``db`` and the emulator (DaemonConfig kwargs)."""
    made: list[Daemon] = []

    def build(**kw: Any) -> Daemon:
        d = make_daemon(db, hub.url, **kw)
        made.append(d)
        return d

    yield build  # type: ignore[misc]
    for d in made:
        d.cancel.set()
        if d.firehose is not None:
            d.firehose.close()
