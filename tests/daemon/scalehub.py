"""Many emulated repos, cheaply: a Hub emulator whose repo ids share a few git dirs, with git
answers cached, and a store whose repos were read before (for the scale smoke test and
``benchmarks/scale.py``).

The stock emulator runs git for every answer; its model listing runs it three times per
repo, so one ``list_models`` page over 1,000 repos would cost seconds of git. Here each git
dir is read once: the repos do not change while a cycle is measured, which is the point.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta
from pathlib import Path

from storage import Store
from storage.tables import RepoRow
from tests.daemon.helpers import config_bytes
from tests.hubemu import HubEmulator, RepoBuilder
from tests.hubemu.gitstore import EmuRepo
from tests.hubemu.server import RepoState


class _FrozenRepo(EmuRepo):
    """An EmuRepo whose ref and date lookups are answered from a cache."""

    @functools.cache  # noqa: B019  (one instance per git dir, alive as long as the hub)
    def resolve(self, rev: str) -> str | None:
        return super().resolve(rev)

    @functools.cache  # noqa: B019
    def commit_time(self, sha: str) -> int:
        return super().commit_time(sha)


class ScaleHub(HubEmulator):
    """A HubEmulator serving many repo ids from a few git dirs."""

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self._dirs: dict[Path, _FrozenRepo] = {}

    def add_repo(self, repo_id: str, git_dir: Path | str, *, gated: bool = False, private: bool = False) -> None:
        path = Path(git_dir)
        if path not in self._dirs:
            self._dirs[path] = _FrozenRepo(path)
        with self._lock:
            self._repos[repo_id] = RepoState(self._dirs[path], gated, private, 0)


def build_dirs(base: Path, n: int = 8) -> list[tuple[Path, str]]:
    """``n`` tiny repos whose heads were pushed minutes ago: (git dir, head sha)."""
    out = []
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=10 + n)
    for i in range(n):
        b = RepoBuilder.init(base / f"shared-{i}.git")
        head = b.commit({"config.json": config_bytes(hidden_size=64 + i), "README.md": b"# scale\n"},
                        title="initial", date=start + timedelta(minutes=i))
        out.append((b.path, head))
    return out


def populate(hub: ScaleHub, store: Store, dirs: list[tuple[Path, str]], count: int, *,
             prefix: str = "scale/model") -> list[str]:
    """Serve and track ``count`` repos that were read before: head known, last check a while ago, due now.

    One transaction for all of them (10,000 repos in seconds, not minutes of one commit each);
    the rows are the ones ``Store.add_repo``, ``set_head`` and ``record_poll`` would leave.
    """
    ids = []
    earlier = datetime.now(UTC) - timedelta(minutes=5)
    rows = []
    for i in range(count):
        repo_id = f"{prefix}-{i:04d}"
        path, head = dirs[i % len(dirs)]
        hub.add_repo(repo_id, path)
        rows.append(RepoRow(id=repo_id, source=repo_id, source_kind="hub", added_at=earlier, head_sha=head,
                            last_poll_at=earlier, last_success_at=earlier, next_check_at=earlier))
        ids.append(repo_id)
    with store.session() as s:
        s.add_all(rows)
        s.commit()
    return ids
