"""A wall-clock deadline per Hub call that a trickling server cannot stretch (issue 10 point 4).

The emulator sends the answer one byte at a time, each byte well inside httpx's per-read
timeout: without a total deadline the call would last minutes. The head check included: it
is the one request every repo costs every cycle, so one trickling answer would hold a slot
of the daemon's pool for minutes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from storage import Store
from tests.hubemu import HubEmulator, RepoBuilder
from tracker.daemon import Daemon
from tracker.errors import SourceUnavailable
from tracker.hub.connections import HubConnections
from tracker.hub.hf import HfSource

REPO = "org/trickled"


@pytest.mark.parametrize("route, call", [
    ("model_info", lambda s, head: s.resolve_head("main")),
    ("tree", lambda s, head: s.list_files(head)),
    ("commits", lambda s, head: s.list_commits("main")),
    ("resolve", lambda s, head: s.read_file(head, "config.json", max_bytes=100_000)),
    ("paths_info", lambda s, head: s.file_security(head, ["config.json"])),
])
def test_a_trickle_cannot_stretch_a_hub_call(
    add_repo: Callable[..., RepoBuilder], hub: HubEmulator, route: str, call: Callable[..., object],
) -> None:
    head = add_repo(REPO, commits=1, track=False).head()
    hub.faults.add("trickle", route=route, every=0.25)  # hundreds of bytes: a minute or more in all
    pool = HubConnections()  # as a daemon's sources share it
    src = HfSource(REPO, endpoint=hub.url, timeout=1.0, connections=pool)
    try:
        started = time.monotonic()
        with pytest.raises(SourceUnavailable, match=r"timed out|within"):
            call(src, head)
        assert time.monotonic() - started < 2.5
        hub.faults.clear()
        call(src, head)  # the pool is still usable: the trickled connection was dropped
    finally:
        src.close()
        pool.close()


def test_a_trickled_head_check_holds_the_daemon_no_longer_than_its_deadline(
    add_repo: Callable[..., RepoBuilder], daemon: Callable[..., Daemon], db: Store, hub: HubEmulator,
) -> None:
    for i in range(3):
        add_repo(f"org/m{i}", commits=1)
    d = daemon(concurrency=2, timeout=1.0)
    assert {r.status for r in d.run_once(datetime.now(UTC))} == {"ok"}  # first reads, no fault
    hub.faults.add("trickle", route="model_info", repo="org/m1", every=0.25)
    now = datetime.now(UTC)
    for i in range(3):
        assert db.mark_due(f"org/m{i}", now)
    started = time.monotonic()
    results = {r.repo: r for r in d.run_once(now)}  # three head checks, one of them trickled
    assert time.monotonic() - started < 4  # the 1 s deadline and slack on a loaded machine, not ~25 s
    assert results["org/m1"].status == "error" and results["org/m1"].error_kind == "unavailable"
    assert "timed out" in (results["org/m1"].error or "")
    assert results["org/m0"].status == results["org/m2"].status == "unchanged"
    assert db.get_repo("org/m1").last_error_kind == "unavailable"  # type: ignore[union-attr]
