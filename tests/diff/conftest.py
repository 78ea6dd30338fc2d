"""The pure core does no I/O: every test here runs with files, sockets and subprocesses guarded."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.extract.noio import no_io


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with no_io():
        yield


@pytest.fixture(scope="session")
def corpus_pairs() -> dict[str, tuple[dict[str, bytes], dict[str, bytes]]]:
    """Every before/after pair of hf-corpus/changes, read once (before the I/O guard)."""
    from tests.extract.snapshots import load_pair, pair_names

    return {name: load_pair(name) for name in pair_names()}
