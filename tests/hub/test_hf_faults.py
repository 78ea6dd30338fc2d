"""HfSource under failure: every injected fault ends in the right tracker error, quickly.

The emulator sleeps past the client's deadline for "hang"; huggingface_hub alone would wait
forever there (model_info without timeout, paginated calls) or retry 429s for 20+ s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.hub.conftest import REPO, WEIGHTS, Tiny
from tests.hubemu import HubEmulator
from tracker.errors import (
    GatedRepo,
    RateLimited,
    RepoNotFound,
    SourceError,
    SourceUnavailable,
)
from tracker.hub.hf import HfSource

TIMEOUT = 1.0
QUICK = 4.0  # seconds: the deadline plus slack on a loaded 2-core machine


@contextmanager
def quickly(limit: float = QUICK) -> Iterator[None]:
    start = time.monotonic()
    yield
    assert time.monotonic() - start < limit


def _calls(tiny: Tiny) -> dict[str, tuple[str, Callable[[HfSource], Any]]]:
    """Each protocol call, keyed by name, with the emulator route it hits first."""
    return {
        "resolve_head": ("model_info", lambda s: s.resolve_head("main")),
        "list_commits": ("commits", lambda s: s.list_commits("main")),
        "list_files": ("tree", lambda s: s.list_files(tiny.head)),
        "read_file": ("resolve", lambda s: s.read_file(tiny.head, "config.json", max_bytes=1000)),
        "read_range": ("resolve", lambda s: s.read_range(tiny.head, "model.safetensors", 0, 8)),
    }


@pytest.fixture
def src(hub: HubEmulator) -> Iterator[HfSource]:
    s = HfSource(REPO, endpoint=hub.url, timeout=TIMEOUT, token="hf_SECRETtoken123")
    yield s
    s.close()


CALLS = ("resolve_head", "list_commits", "list_files", "read_file", "read_range")


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_server_errors_are_unavailable(
    call: str, status: int, hub: HubEmulator, tiny: Tiny, src: HfSource
) -> None:
    route, fn = _calls(tiny)[call]
    hub.faults.add("status", route=route, status=status, times=1)
    with quickly(), pytest.raises(SourceUnavailable, match=str(status)):
        fn(src)
    assert hub.count(route) == 1  # no retries
    fn(src)  # the fault was one-shot: the next call works


@pytest.mark.parametrize("call", CALLS)
def test_rate_limit_surfaces_at_once_with_retry_after(
    call: str, hub: HubEmulator, tiny: Tiny, src: HfSource
) -> None:
    route, fn = _calls(tiny)[call]
    hub.faults.add("rate_limit", route=route, retry_after=30, reset=42)
    with quickly(), pytest.raises(RateLimited) as err:
        fn(src)
    assert err.value.retry_after == 42  # RateLimit's t= wins, as in huggingface_hub
    assert hub.count(route) == 1


def test_retry_after_alone_and_as_a_date(hub: HubEmulator, tiny: Tiny, src: HfSource) -> None:
    hub.faults.add("rate_limit", route="commits", retry_after=7, reset=None, times=1)
    with pytest.raises(RateLimited) as err:
        src.list_commits("main")
    assert err.value.retry_after == 7
    hub.faults.add("rate_limit", route="commits", retry_after=None, reset=None, times=1)
    with pytest.raises(RateLimited) as err:
        src.list_commits("main")
    assert err.value.retry_after is None
    when = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 120))
    hub.faults.add("status", route="tree", status=429, headers={"Retry-After": when}, times=1)
    with pytest.raises(RateLimited) as err:
        src.list_files(tiny.head)
    assert err.value.retry_after is not None and 100 < err.value.retry_after <= 121


@pytest.mark.parametrize("call", CALLS)
def test_hung_server_times_out(call: str, hub: HubEmulator, tiny: Tiny, src: HfSource) -> None:
    route, fn = _calls(tiny)[call]
    hub.faults.add("hang", route=route, seconds=30)
    with quickly(), pytest.raises(SourceUnavailable, match="timed out"):
        fn(src)


def test_hang_on_a_later_page(hub: HubEmulator, tiny: Tiny, src: HfSource) -> None:
    for i in range(5):
        tiny.builder.commit({"n.txt": str(i).encode()})
    first_page = hub.faults.add("slow", route="commits", seconds=0, times=1)  # page 1 passes
    hub.faults.add("hang", route="commits", seconds=30)
    with quickly(), pytest.raises(SourceUnavailable):
        src.list_commits("main")
    assert first_page.hits == 1 and hub.count("commits") == 2


@pytest.mark.parametrize("call", ["list_commits", "list_files", "read_file", "read_range"])
def test_truncated_body_is_unavailable(
    call: str, hub: HubEmulator, tiny: Tiny, src: HfSource
) -> None:
    route, fn = _calls(tiny)[call]
    hub.faults.add("truncate", route=route, keep=3)
    with quickly(), pytest.raises(SourceUnavailable):
        fn(src)


@pytest.mark.parametrize("call", CALLS)
def test_connection_reset_is_unavailable(
    call: str, hub: HubEmulator, tiny: Tiny, src: HfSource
) -> None:
    route, fn = _calls(tiny)[call]
    hub.faults.add("reset", route=route)
    with quickly(), pytest.raises(SourceUnavailable):
        fn(src)


def test_not_json_is_unavailable(hub: HubEmulator, tiny: Tiny, src: HfSource) -> None:
    hub.faults.add("status", route="commits", status=200, body=b"<html>proxy</html>", times=1)
    with pytest.raises(SourceUnavailable, match="not JSON"):
        src.list_commits("main")
    hub.faults.add(
        "status", route="model_info", status=200, body=b'{"id": "acme/tiny-model"}', times=1
    )
    with pytest.raises(SourceUnavailable, match="sha"):
        src.resolve_head("main")


def test_gated_repo(hub: HubEmulator, tiny: Tiny, src: HfSource) -> None:
    hub.set_gated(REPO)
    assert src.resolve_head("main") == tiny.head  # metadata stays public, as on the Hub
    with pytest.raises(GatedRepo):
        src.read_file(tiny.head, "config.json", max_bytes=100)
    with pytest.raises(GatedRepo):
        src.read_range(tiny.head, "model.safetensors", 0, 8)
    hub.faults.add("gated", route="model_info")
    with pytest.raises(GatedRepo):
        src.resolve_head("main")


@pytest.mark.parametrize("call", CALLS)
def test_deleted_repo(call: str, hub: HubEmulator, tiny: Tiny, src: HfSource) -> None:
    _, fn = _calls(tiny)[call]
    hub.remove_repo(REPO)
    with quickly(), pytest.raises(RepoNotFound):
        fn(src)


def test_unreachable_endpoint(tiny: Tiny) -> None:
    s = HfSource(REPO, endpoint="http://127.0.0.1:9", timeout=TIMEOUT)  # discard port: refused
    for _, fn in _calls(tiny).values():
        with quickly(), pytest.raises(SourceUnavailable):
            fn(s)


def test_token_is_sent_but_never_in_messages(hub: HubEmulator, tiny: Tiny, src: HfSource) -> None:
    src.resolve_head("main")
    src.read_file(tiny.head, "config.json", max_bytes=100)
    assert all(r.headers.get("authorization") == "Bearer hf_SECRETtoken123" for r in hub.requests)
    hub.faults.add("status", route="*", status=500, message="echo: Bearer hf_SECRETtoken123")
    for _, fn in _calls(tiny).values():
        with pytest.raises(SourceError) as err:
            fn(src)
        assert "hf_SECRETtoken123" not in str(err.value) and "hf_SECRETtoken123" not in repr(
            err.value
        )
    assert "hf_SECRET" not in repr(src)


def test_unchanged_repo_costs_one_request_per_check(
    hub: HubEmulator, tiny: Tiny, src: HfSource
) -> None:
    src.resolve_head("main")
    hub.reset_stats()
    for _ in range(3):
        assert src.resolve_head("main") == tiny.head
    assert hub.count() == 3 and hub.count("model_info") == 3
    assert all("expand=sha" in r.path for r in hub.requests)


def test_one_new_commit_costs_a_head_check_a_page_and_one_git_fetch(
    hub: HubEmulator, tiny: Tiny, src: HfSource
) -> None:
    for i in range(6):  # several pages of history below the known head
        tiny.builder.commit({"x.txt": str(i).encode()})
    known = src.resolve_head("main")
    new = tiny.builder.commit({"config.json": b'{"model_type": "tiny2"}'}, title="bump")
    hub.reset_stats()

    assert src.resolve_head("main") == new
    listing = src.list_commits("main", stop_at={known})

    assert [c.sha for c in listing.commits] == [new] and listing.commits[0].parents == (known,)
    assert hub.summary().keys() == {"model_info", "commits", "git_refs", "git_upload_pack"}
    # one head check + one commits page (paging stopped at the known sha) + the parents over
    # git: the ref advertisement, then ls-refs and one shallow fetch of depth 2 (protocol v2)
    assert (hub.count("model_info"), hub.count("commits")) == (1, 1)
    assert (hub.count("git_refs"), hub.count("git_upload_pack")) == (1, 2)


def test_lfs_through_a_cross_origin_redirect(hub: HubEmulator, tiny: Tiny, src: HfSource) -> None:
    hub.lfs_redirect = True
    assert src.read_range(tiny.first, "model.safetensors", 0, 8) == WEIGHTS[:8]
    assert src.read_file(tiny.first, "model.safetensors", max_bytes=len(WEIGHTS)) == WEIGHTS
    cdn = [r for r in hub.requests if r.route == "cdn"]
    assert len(cdn) == 2 and all("authorization" not in r.headers for r in cdn)  # token stays home
    assert cdn[0].headers["range"] == "bytes=0-7"


def test_server_ignoring_range(hub: HubEmulator, tiny: Tiny, src: HfSource) -> None:
    hub.honour_range = False
    assert src.read_range(tiny.first, "model.safetensors", 8, 20) == WEIGHTS[8:28]
    assert src.read_range(tiny.first, "config.json", 2, 5) == b'{"model_type": "tiny"}'[2:7]


def test_bad_repo_id_refused_before_any_request(hub: HubEmulator) -> None:
    with pytest.raises(ValueError):
        HfSource("not a/valid/id", endpoint=hub.url)
    assert hub.count() == 0


def test_the_hub_sees_hubwatch_and_its_version(hub: HubEmulator, tiny: Tiny) -> None:
    """Issue 15 point 7: the user agent is ``hubwatch/<version>``, never ``hubwatch/None``."""
    from importlib.metadata import version

    import tracker

    assert tracker.__version__ == version("hubwatch")
    src = HfSource(REPO, endpoint=hub.url, timeout=5)
    try:
        src.resolve_head("main")
        src.list_files(tiny.head)
    finally:
        src.close()
    agents = {r.headers.get("user-agent", "") for r in hub.requests}
    assert agents and all(f"hubwatch/{tracker.__version__}" in a for a in agents), agents
    assert not any("hubwatch/None" in a for a in agents)
