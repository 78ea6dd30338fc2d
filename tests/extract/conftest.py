"""The pure core does no I/O: every test here runs with files, sockets and subprocesses guarded."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.extract.noio import no_io


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with no_io():
        yield
