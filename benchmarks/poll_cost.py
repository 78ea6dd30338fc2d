"""Poll cost: requests and bytes an HfSource poll moves, measured on the Hub emulator.

For every real history of the corpus (shared/hf-corpus/histories), served by
tests.hubemu.HubEmulator and read by tracker.hub.hf.HfSource through the lead's pipeline
(tracker.pipeline.check_repo on a throwaway SQLite store, so blob reuse is real):

  first   first full-history read (every commit: tree, small files, safetensors headers)
  idle    a poll of the unchanged repo (the head check only)
  one     a poll after one new commit that edits config.json

beside what huggingface_hub's snapshot_download would move for the same revisions (computed from
the trees, nothing downloaded): one HEAD per file per revision, one GET per distinct content, all
bytes of every file (weights included). The corpus has LFS pointers but no LFS objects, so its
safetensors headers are not readable here (404 "LFS object not available", one request each);
the "built" row is a repo made with RepoBuilder whose safetensors objects exist, so its header
reads (HTTP Range) are counted too.

Run from the repository root:  .venv/bin/python benchmarks/poll_cost.py [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.hubemu import hf_test_env  # noqa: E402

hf_test_env()

from tests.hubemu import HubEmulator, RepoBuilder, bundle_names, bundle_path, clone_bundle  # noqa: E402
from tests.hubemu import safetensors_bytes as st  # noqa: E402
from tracker.hub.hf import HfSource  # noqa: E402
from tracker.hub.interface import HubSource  # noqa: E402
from tracker.hub.localgit import GitSource  # noqa: E402
from tracker.model.keys import content_key, header_key  # noqa: E402
from tracker.snapshot import take_snapshot  # noqa: E402

try:  # the lead's full pipeline, when it is importable; else the snapshot loop below
    from storage.store import open_store
    from tracker.pipeline.check import check_repo

    MODE = "pipeline"
except ImportError as e:  # pragma: no cover - depends on the state of the other packages
    MODE = f"snapshot-loop ({e})"


class SnapshotPoller:
    """What check_repo reads, without the later stages: head check, commits until the known
    head, and take_snapshot of each new commit with a content-addressed blob cache."""

    def __init__(self, source: HubSource):
        self.source = source
        self.head: str | None = None
        self.blobs: dict[str, bytes] = {}

    def poll(self) -> None:
        head = self.source.resolve_head("main")
        if head == self.head:
            return
        listing = self.source.list_commits("main", stop_at=(self.head,) if self.head else ())
        for commit in reversed(listing.commits):
            snap = take_snapshot(self.source, commit.sha, known=self.blobs.get)
            by_path = {f.path: f for f in snap.files}
            for path, data in snap.contents.items():
                self.blobs[content_key(by_path[path])] = data
            for path, data in snap.safetensors_headers.items():
                self.blobs[header_key(by_path[path])] = data
        self.head = head


def _measure(hub: HubEmulator, fn: Any) -> dict[str, Any]:
    hub.reset_stats()
    start = time.perf_counter()
    fn()
    wall = time.perf_counter() - start
    hub.wait_idle()
    routes = hub.summary()
    return {
        "requests": sum(r["requests"] for r in routes.values()),
        "bytes": sum(r["bytes"] for r in routes.values()),
        "seconds": round(wall, 2),
        "routes": routes,
    }


def _snapshot_download(git_dir: Path, repo_id: str) -> dict[str, int]:
    """What snapshot_download of the head, and of every revision in turn, would move."""
    src = GitSource(str(git_dir), repo_id)
    commits = src.list_commits("main").commits
    seen: set[str] = set()
    all_requests = all_bytes = 0
    head_requests = head_bytes = 0
    for i, c in enumerate(reversed(commits)):  # oldest first, as a cache would fill
        files = src.list_files(c.sha)
        new = [f for f in files if f.content_id not in seen]
        seen.update(f.content_id for f in files)
        all_requests += 1 + len(files) + len(new)  # listing + HEAD per file + GET per new content
        all_bytes += sum(f.size for f in new)
        if i == len(commits) - 1:
            head_requests, head_bytes = 1 + 2 * len(files), sum(f.size for f in files)
    return {
        "head_requests": head_requests,
        "head_bytes": head_bytes,
        "all_requests": all_requests,
        "all_bytes": all_bytes,
        "commits": len(commits),
    }


def _built_repo(path: Path) -> RepoBuilder:
    """A small repo whose LFS objects exist: three revisions, two safetensors shards."""
    b = RepoBuilder.init(path)
    shard = {
        f"model.layers.{i}.{w}.weight": ("BF16", [64, 64])
        for i in range(24)
        for w in ("q", "k", "v", "o")
    }
    b.commit(
        {
            "config.json": json.dumps({"model_type": "llama", "num_hidden_layers": 24}).encode(),
            "model-00001-of-00002.safetensors": st(shard),
            "model-00002-of-00002.safetensors": st({"lm_head.weight": ("BF16", [1000, 64])}),
            "README.md": b"# built\n",
        },
        title="init",
    )
    b.commit({"README.md": b"# built\nmore\n"}, title="card")
    b.commit(
        {"model-00002-of-00002.safetensors": st({"lm_head.weight": ("BF16", [1001, 64])})},
        title="resize",
    )
    return b


def run_one(hub: HubEmulator, work: Path, repo_id: str, git_dir: Path) -> dict[str, Any]:
    hub.add_repo(repo_id, git_dir)
    src = HfSource(repo_id, endpoint=hub.url, timeout=30)
    if MODE == "pipeline":
        store = open_store(f"sqlite:///{work / (repo_id.replace('/', '__') + '.db')}")
        store.add_repo(repo_id, source=repo_id, source_kind="hub", backfill="all")

        def poll() -> None:
            record = store.get_repo(repo_id)
            assert record is not None
            check_repo(store, src, record)
    else:
        poll = SnapshotPoller(src).poll
    try:
        row: dict[str, Any] = {"repo": repo_id, "mode": MODE}
        row["first"] = _measure(hub, poll)
        row["idle"] = _measure(hub, poll)
        row["snapshot_download"] = _snapshot_download(git_dir, repo_id)  # the revisions read first
        b = RepoBuilder(git_dir)
        cfg = json.loads(src.read_file(b.head() or "", "config.json", max_bytes=10_000_000))
        cfg["hubwatch_benchmark"] = True
        b.commit({"config.json": json.dumps(cfg, indent=2).encode()}, title="bump config")
        row["one"] = _measure(hub, poll)
        return row
    finally:
        src.close()
        if MODE == "pipeline":
            store.close()


def inside_rows(hub: HubEmulator, work: Path) -> list[dict[str, Any]]:
    """Bytes read inside each weight file (issue 13): a GGUF header, a torch zip's data.pkl,
    a legacy pickle's prefix; then a commit that leaves them unchanged reads none of them."""
    from tests.inside.ggufs import gguf_bytes
    from tests.inside.pickles import fixture, padded_zip

    tokens = ["<unk>", "<s>", "</s>", *[f"tok{i}" for i in range(32_000)]]
    files = {
        "model-Q4_K_M.gguf": gguf_bytes(tokens=tokens, hidden=512, layers=8),
        "pytorch_model.bin": padded_zip("state_dict.bin", 16 * 1024 * 1024),
        "legacy.pt": fixture("state_dict_legacy.pt") + b"\0" * (48 * 1024 * 1024),
    }
    b = RepoBuilder.init(work / "inside.git")
    b.commit({**files, "README.md": b"# inside\n"}, title="init")
    repo_id = "bench/inside"
    hub.add_repo(repo_id, b.path)
    src = HfSource(repo_id, endpoint=hub.url, timeout=30)
    store = open_store(f"sqlite:///{work / 'inside.db'}")
    store.add_repo(repo_id, source=repo_id, source_kind="hub", backfill="all")

    def poll() -> None:
        record = store.get_repo(repo_id)
        assert record is not None
        check_repo(store, src, record)

    rows = []
    try:
        for label, edit in (("first read", None), ("unchanged weights", {"README.md": b"# more\n"})):
            if edit:
                b.commit(edit, title="card")
            hub.reset_stats()
            poll()
            hub.wait_idle()
            for path, data in files.items():
                reads = [r for r in hub.requests if r.route == "resolve" and r.path.endswith("/" + path)]
                body = sum(len(data[int(a):int(z) + 1]) for a, z in
                           (r.headers.get("range", "bytes=0-0")[6:].split("-") for r in reads))
                rows.append({"poll": label, "file": path, "size": len(data), "requests": len(reads),
                             "bytes_read": body, "fraction": body / len(data)})
    finally:
        src.close()
        store.close()
    return rows


def inside_table(rows: list[dict[str, Any]]) -> str:
    out = ["| poll | weight file | size | range requests | bytes read | share of the file |",
           "| --- | --- | ---: | ---: | ---: | ---: |"]
    for r in rows:
        out.append(f"| {r['poll']} | {r['file']} | {_fmt(r['size'])} | {r['requests']} | "
                   f"{_fmt(r['bytes_read'])} | {r['fraction']:.3%} |")
    return "\n".join(out)


def _fmt(n: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def table(rows: list[dict[str, Any]]) -> str:
    out = [
        "| repo | commits | idle poll | one new commit | first full read | snapshot_download head | "
        "snapshot_download every revision |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        sd = r["snapshot_download"]
        cell = lambda m: f"{m['requests']} req / {_fmt(m['bytes'])}"  # noqa: E731
        out.append(
            f"| {r['repo']} | {sd['commits']} | {cell(r['idle'])} | {cell(r['one'])} | {cell(r['first'])} "
            f"| {sd['head_requests']} req / {_fmt(sd['head_bytes'])} "
            f"| {sd['all_requests']} req / {_fmt(sd['all_bytes'])} |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print the raw measurements as JSON")
    parser.add_argument("--only", nargs="*", help="corpus stems to run (default: all)")
    parser.add_argument("--inside-only", action="store_true",
                        help="only the bytes read inside GGUF / pickle weight files")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="poll-cost-") as tmp, HubEmulator() as hub:
        work = Path(tmp)
        inside = inside_rows(hub, work) if MODE == "pipeline" else []
        for name in [] if args.inside_only else args.only or bundle_names():
            meta = json.loads(bundle_path(name).with_suffix(".json").read_text())
            rows.append(run_one(hub, work, meta["hf_repo_id"], clone_bundle(name, work)))
        if not args.only and not args.inside_only:
            rows.append(run_one(hub, work, "bench/built-lfs", _built_repo(work / "built.git").path))
        assert not hub.internal_errors, hub.internal_errors
    if args.json:
        print(json.dumps({"repos": rows, "inside": inside}, indent=2))
    else:
        print(f"mode: {MODE}\n")
        if rows:
            print(table(rows) + "\n")
        print(inside_table(inside))


if __name__ == "__main__":
    main()
