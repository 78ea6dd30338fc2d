"""A wall-clock deadline per Hub call that a trickling server cannot stretch (issue 10 point 4).

The emulator sends the answer one byte at a time, each byte well inside httpx's per-read
timeout: without a total deadline the call would last minutes.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.hubemu import HubEmulator, RepoBuilder
from tracker.errors import SourceUnavailable
from tracker.hub.hf import HfSource

REPO = "org/trickled"


@pytest.mark.parametrize("route, call", [
    ("tree", lambda s, head: s.list_files(head)),
    ("commits", lambda s, head: s.list_commits("main")),
    ("resolve", lambda s, head: s.read_file(head, "config.json", max_bytes=100_000)),
])
def test_a_trickle_cannot_stretch_a_hub_call(
    add_repo: Callable[..., RepoBuilder], hub: HubEmulator, route: str, call: Callable[..., object],
) -> None:
    head = add_repo(REPO, commits=1, track=False).head()
    hub.faults.add("trickle", route=route, every=0.25)  # hundreds of bytes: a minute or more in all
    src = HfSource(REPO, endpoint=hub.url, timeout=1.0)
    try:
        started = time.monotonic()
        with pytest.raises(SourceUnavailable, match=r"timed out|within"):
            call(src, head)
        assert time.monotonic() - started < 2.5
    finally:
        src.close()
