"""Firehose mode: the Hub's model listing, newest first, read down to a watermark, stands in for a
``model_info`` per tracked repo. Commits are dated at the wall clock: the emulator's
``lastModified`` is the head commit's date, as the Hub's is the time of the last push."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from storage import Store, open_store
from tests.daemon.helpers import config_bytes, make_daemon
from tests.hubemu import HubEmulator, RepoBuilder
from tracker.daemon import Daemon
from tracker.errors import RateLimited, SourceUnavailable
from tracker.hub.firehose import Firehose

S = timedelta(seconds=1)


@pytest.fixture
def paged_hub() -> Iterator[HubEmulator]:
    with HubEmulator(models_page=4) as emu:
        yield emu
    assert not emu.internal_errors, emu.internal_errors


def _serve(hub: HubEmulator, tmp_path: Path, n: int, prefix: str = "org/f") -> dict[str, RepoBuilder]:
    """``n`` repos whose heads were pushed a minute apart, the last one a minute ago."""
    built = {}
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=n)
    for i in range(n):
        b = RepoBuilder.init(tmp_path / f"r{i}.git")
        b.commit({"config.json": config_bytes(), "README.md": b"# tiny\n"}, title="initial",
                 date=start + timedelta(minutes=i))
        hub.add_repo(f"{prefix}{i}", b.path)
        built[f"{prefix}{i}"] = b
    return built


def test_reader_stops_at_the_watermark(paged_hub: HubEmulator, tmp_path: Path) -> None:
    built = _serve(paged_hub, tmp_path, 10)
    with Firehose(paged_hub.url, timeout=5, page_size=4, overlap=timedelta(0)) as fh:
        first = fh.read(None)  # no watermark yet: one page, not complete
        assert first.requests == 1 and not first.complete and len(first.items) == 4
        assert first.watermark is not None
        assert all(i.sha == built[i.id].head() for i in first.items)

        later = datetime.now(UTC) + 5 * S
        new = built["org/f3"].commit({"config.json": config_bytes(eos_token_id=5)}, title="moved", date=later)
        paged_hub.reset_stats()
        read = fh.read(first.watermark)
        assert read.complete and read.requests == 1 and paged_hub.count("list_models") == 1
        assert (read.items[0].id, read.items[0].sha) == ("org/f3", new)
        assert read.watermark == later.replace(microsecond=0)

        many = [built[f"org/f{i}"].commit({"README.md": b"x"}, date=later + (i + 1) * S) for i in range(6)]
        again = fh.read(read.watermark)  # six moved: two pages of four
        assert again.complete and again.requests == 2
        assert {i.sha for i in again.items} >= set(many)


def test_reader_maps_hub_errors(hub: HubEmulator) -> None:
    with Firehose(hub.url, timeout=5) as fh:
        hub.faults.add("rate_limit", route="list_models", retry_after=42, reset=42, times=1)
        with pytest.raises(RateLimited) as e:
            fh.read(None)
        assert e.value.retry_after == 42
        hub.faults.add("status", route="list_models", status=502, times=1)
        with pytest.raises(SourceUnavailable):
            fh.read(None)
        assert fh.read(None).requests == 1


def test_firehose_mode_confirms_unmoved_repos_without_polling_them(
    hub: HubEmulator, db: Store, tmp_path: Path, daemon: Callable[..., Daemon]
) -> None:
    built = _serve(hub, tmp_path, 12)
    for repo_id in built:
        db.add_repo(repo_id, source=repo_id, source_kind="hub")
    dev = _serve(hub, tmp_path / "dev", 1, prefix="org/dev")["org/dev0"]
    dev.commit({"README.md": b"dev"}, branch="dev", parents=[dev.head()])
    db.add_repo("org/dev0", source="org/dev0", source_kind="hub", branch="dev")  # not main: polled
    d = daemon(firehose=True, interval_seconds=600)
    now = datetime.now(UTC)
    first = d.run_once(now)  # nothing read yet: every repo is read once
    assert len(first) == 13 and {r.status for r in first} == {"ok"}

    hub.reset_stats()
    polled = d.run_once(now + 700 * S)  # the firehose confirms all twelve main repos
    assert [(r.repo, r.status) for r in polled] == [("org/dev0", "unchanged")]
    assert hub.count("list_models") == 1
    assert hub.count("model_info") == 1  # only the dev-branch repo was polled
    snap = d.stats.snapshot()
    assert snap["firehose_confirmed"] == 12 and snap["firehose_moved"] == 0
    for repo in db.list_repos():
        if repo.branch == "main":
            assert repo.next_check_at >= now + 1900 * S and repo.last_poll_at >= now + 700 * S

    moved = built["org/f7"].commit({"config.json": config_bytes(eos_token_id=3)}, title="eos",
                                   date=datetime.now(UTC) + 5 * S)
    hub.reset_stats()
    results = d.run_once(now + 1400 * S)
    assert [(r.repo, r.status, r.new_revisions) for r in results if r.repo != "org/dev0"] == [("org/f7", "ok", 1)]
    assert hub.count("list_models") == 1 and hub.count("model_info", repo="org/f7") == 1
    assert db.get_repo("org/f7").head_sha == moved  # type: ignore[union-attr]


def test_a_restarted_daemon_needs_no_full_poll(hub: HubEmulator, tmp_path: Path) -> None:
    built = _serve(hub, tmp_path, 8)
    url = f"sqlite:///{tmp_path / 'hw.db'}"
    db = open_store(url)
    for repo_id in built:
        db.add_repo(repo_id, source=repo_id, source_kind="hub")
    now = datetime.now(UTC)
    assert len(make_daemon(db, hub.url).run_once(now)) == 8  # polled once, by a polling daemon
    hub.reset_stats()
    fresh = make_daemon(db, hub.url, firehose=True)  # a new process: no watermark in memory
    assert fresh.run_once(now + 1000 * S) == []
    assert hub.count() == 1 and fresh.stats.snapshot()["firehose_confirmed"] == 8
    assert fresh.firehose is not None
    fresh.firehose.close()
    db.close()
