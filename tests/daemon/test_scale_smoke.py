"""The scale benchmark's claim on 50 repos: a cycle over unchanged repos costs one request per
repo when polled and a handful in firehose mode (``benchmarks/scale.py`` runs 1,000)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from storage import Store
from tests.daemon.helpers import make_daemon
from tests.daemon.scalehub import ScaleHub, build_dirs, populate


@pytest.fixture
def scale_hub() -> Iterator[ScaleHub]:
    with ScaleHub() as hub:
        yield hub
    assert not hub.internal_errors, hub.internal_errors


@pytest.mark.parametrize("firehose", [False, True], ids=["polled", "firehose"])
def test_one_cycle_over_50_unchanged_repos(scale_hub: ScaleHub, db: Store, tmp_path: Path, firehose: bool) -> None:
    ids = populate(scale_hub, db, build_dirs(tmp_path, 5), 50)
    d = make_daemon(db, scale_hub.url, firehose=firehose, concurrency=8)
    results = d.run_once(datetime.now(UTC))
    if firehose:
        assert results == []  # every repo confirmed by the listing
        assert scale_hub.count() < 20 and scale_hub.count("model_info") == 0
        assert d.stats.snapshot()["firehose_confirmed"] == 50
    else:
        assert sorted(r.repo for r in results) == ids and {r.status for r in results} == {"unchanged"}
        assert scale_hub.count() == scale_hub.count("model_info") == 50
    assert d.stats.snapshot()["requests"] == scale_hub.count()
    assert all(r.next_check_at > datetime.now(UTC) for r in db.list_repos())  # everything is current
