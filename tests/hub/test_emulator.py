"""The Hub emulator speaks enough of the Hub's API for the real huggingface_hub client: the calls
hubwatch relies on (hub-api.md §18), its error mapping, paging, Range reads and its traps."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.errors import (
    GatedRepoError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from tests.hub.conftest import REPO, WEIGHTS, Tiny
from tests.hubemu import HubEmulator, RepoBuilder, clone_bundle, safetensors_bytes


@pytest.fixture
def api(hub: HubEmulator) -> HfApi:
    return HfApi(endpoint=hub.url)


def test_starts_and_stops_fast_even_with_a_hung_request(tiny: Tiny) -> None:
    start = time.monotonic()
    emu = HubEmulator().start()
    assert time.monotonic() - start < 0.5
    emu.add_repo(REPO, tiny.builder.path)
    emu.faults.add("hang", route="model_info", seconds=60)
    outcome: list[str] = []

    def client() -> None:
        try:
            httpx.get(f"{emu.url}/api/models/{REPO}", timeout=30)
        except httpx.HTTPError as e:
            outcome.append(type(e).__name__)

    t = threading.Thread(target=client, daemon=True)
    t.start()
    arrived = time.monotonic() + 30  # under load the client may take a while to connect
    while emu.count(route="model_info") == 0 and time.monotonic() < arrived:
        time.sleep(0.01)
    assert emu.count(route="model_info") == 1  # the request is in, and hangs there
    start = time.monotonic()
    emu.stop()
    t.join(5)
    assert time.monotonic() - start < 2 and not t.is_alive()
    assert outcome == ["RemoteProtocolError"]  # the hung request was closed, not answered


def test_model_info_refs_and_revisions(api: HfApi, hub: HubEmulator, tiny: Tiny) -> None:
    tiny.builder.tag("v1.0", tiny.first)
    info = api.model_info(REPO, files_metadata=True, timeout=5)
    assert info.id == REPO and info.sha == tiny.head
    sizes = {s.rfilename: (s.size, s.lfs.sha256 if s.lfs else None) for s in info.siblings or []}
    assert sizes["model.safetensors"][0] == len(WEIGHTS) and sizes["model.safetensors"][1]
    assert api.model_info(REPO, revision="v1.0", timeout=5).sha == tiny.first
    assert api.model_info(REPO, revision=tiny.first, expand=["sha"], timeout=5).sha == tiny.first
    assert hub.requests[-1].path.endswith("?expand=sha")
    refs = api.list_repo_refs(REPO)
    assert [(b.name, b.target_commit) for b in refs.branches] == [("main", tiny.head)]
    assert [(t.name, t.target_commit) for t in refs.tags] == [("v1.0", tiny.first)]


def test_commits_paged_like_the_hub(api: HfApi, hub: HubEmulator, tmp_path: Path) -> None:
    repo = clone_bundle("bigscience__bloom-560m", tmp_path)
    hub.add_repo("bigscience/bloom-560m", repo)  # added while running
    commits = api.list_repo_commits("bigscience/bloom-560m")
    log = subprocess.run(
        ["git", "-C", str(repo), "log", "--topo-order", "--format=%H"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert [c.commit_id for c in commits] == log
    assert hub.count("commits") == (len(log) + 1) // 2  # commits_page=2
    assert all(c.created_at.tzinfo is not None and c.title for c in commits)


def test_tree_paths_info_and_downloads(api: HfApi, hub: HubEmulator, tiny: Tiny) -> None:
    b = tiny.builder
    sha = b.commit({"sub/dir/a.json": b'{"a": 1}', "sub/b.txt": b"b"})
    files = {f.path: f for f in api.list_repo_tree(REPO, recursive=True) if hasattr(f, "size")}
    assert set(files) == {
        "config.json",
        "model.safetensors",
        "README.md",
        "sub/dir/a.json",
        "sub/b.txt",
    }
    assert files["model.safetensors"].lfs is not None and files["model.safetensors"].size == len(
        WEIGHTS
    )
    sub = list(api.list_repo_tree(REPO, path_in_repo="sub/dir", expand=True))
    assert [f.path for f in sub] == ["sub/dir/a.json"] and sub[0].last_commit is not None
    assert sub[0].last_commit.oid == sha
    with pytest.raises(RemoteEntryNotFoundError):
        list(api.list_repo_tree(REPO, path_in_repo="nope"))
    info = api.get_paths_info(REPO, ["config.json", "sub", "missing.txt"])
    assert [p.path for p in info] == ["config.json", "sub"]
    path = hf_hub_download(REPO, "sub/dir/a.json", endpoint=hub.url)
    assert json.loads(Path(path).read_text()) == {"a": 1}
    assert hf_hub_download(REPO, "model.safetensors", endpoint=hub.url, revision=tiny.first) != ""


def test_safetensors_metadata_single_and_sharded(
    api: HfApi, hub: HubEmulator, tmp_path: Path
) -> None:
    b = RepoBuilder.init(tmp_path / "st.git")
    shard1 = safetensors_bytes(
        {f"l.{i}.w": ("BF16", [8, 8]) for i in range(3000)}
    )  # header > 100 kB
    shard2 = safetensors_bytes({"head.w": ("F32", [8, 2])})
    index = {
        "metadata": {"total_size": 1},
        "weight_map": {
            **{f"l.{i}.w": "m-1.safetensors" for i in range(3000)},
            "head.w": "m-2.safetensors",
        },
    }
    b.commit(
        {
            "m-1.safetensors": shard1,
            "m-2.safetensors": shard2,
            "model.safetensors.index.json": json.dumps(index).encode(),
        }
    )
    hub.add_repo("acme/sharded", b.path)
    meta = api.get_safetensors_metadata("acme/sharded")
    assert meta.sharded and meta.parameter_count == {"BF16": 3000 * 64, "F32": 16}
    ranges = [
        r.headers.get("range") for r in hub.requests if r.route == "resolve" and r.method == "GET"
    ]
    assert "bytes=0-100000" in ranges and any(r and r.startswith("bytes=8-") for r in ranges)


def test_error_codes_map_to_the_clients_exceptions(
    api: HfApi, hub: HubEmulator, tiny: Tiny
) -> None:
    with pytest.raises(RepositoryNotFoundError):
        api.model_info("acme/missing", timeout=5)
    with pytest.raises(RevisionNotFoundError):
        api.model_info(REPO, revision="nope", timeout=5)
    with pytest.raises(RemoteEntryNotFoundError):
        hf_hub_download(REPO, "missing.json", endpoint=hub.url)
    assert api.file_exists(REPO, "config.json") and not api.file_exists(REPO, "missing.json")
    hub.set_gated(REPO)
    with pytest.raises(GatedRepoError):
        hf_hub_download(REPO, "README.md", endpoint=hub.url)
    assert all(r.headers is not None for r in hub.requests)
    errors = [r for r in hub.requests if r.status >= 400]
    assert errors and all(r.status in (401, 403, 404) for r in errors)


def test_the_download_cache_trap_is_reproduced(api: HfApi, hub: HubEmulator, tiny: Tiny) -> None:
    """hub-api.md §11: hf_hub_download serves its cache for a deleted repo; model_info does not."""
    first = hf_hub_download(REPO, "config.json", endpoint=hub.url)
    hub.remove_repo(REPO)
    assert hf_hub_download(REPO, "config.json", endpoint=hub.url) == first  # silently cached
    with pytest.raises(RepositoryNotFoundError):
        api.model_info(REPO, timeout=5)


def test_list_models_firehose(api: HfApi, hub: HubEmulator, tmp_path: Path) -> None:
    hub.models_page = 1
    made = {}
    for i, name in enumerate(["acme/old", "acme/new", "other/mid"]):
        b = RepoBuilder.init(tmp_path / f"{i}.git")
        made[name] = b.commit(
            {"config.json": b"{}"}, date=datetime(2024, 1, [1, 3, 2][i], tzinfo=UTC)
        )
        hub.add_repo(name, b.path)
    got = list(api.list_models(sort="last_modified", expand=["sha", "lastModified"]))
    assert [m.id for m in got] == ["acme/new", "other/mid", "acme/old"]
    assert all(m.sha == made[m.id] for m in got) and hub.count("list_models") == 3
    hub.reset_stats()
    assert [m.id for m in api.list_models(author="acme", sort="last_modified", limit=1)] == [
        "acme/new"
    ]
    assert hub.count("list_models") == 1


def test_counts_requests_and_bytes_per_route(api: HfApi, hub: HubEmulator, tiny: Tiny) -> None:
    api.model_info(REPO, expand=["sha"], timeout=5)
    api.model_info(REPO, timeout=5)
    s = hub.summary()
    assert s["model_info"]["requests"] == 2
    assert hub.wait_idle()
    small, full = (r.bytes_sent for r in hub.requests)
    assert 0 < small < full
    assert hub.bytes_sent("model_info") == small + full
    assert hub.count(repo="someone/else") == 0
