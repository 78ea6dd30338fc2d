"""``/healthz``, ``/readyz`` and ``/metrics``: liveness, readiness (database reachable, scheduler
alive) and the Prometheus text of a daemon that really ran a cycle against the Hub emulator."""

from __future__ import annotations

from tests.hubemu import hf_test_env

hf_test_env()

import os  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from datetime import UTC, datetime  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from storage import Store, make_engine, open_store  # noqa: E402
from tests.daemon.helpers import make_daemon, tiny_repo  # noqa: E402
from tests.hubemu import HubEmulator  # noqa: E402
from tracker.api.app import create_app  # noqa: E402
from tracker.api.metrics import Metrics  # noqa: E402
from tracker.config import Settings  # noqa: E402


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    st = open_store(f"sqlite:///{tmp_path / 'hw.db'}")
    yield st
    st.close()


def samples(text: str) -> dict[str, float]:
    """``name{label="v"}`` -> value, parsed with Prometheus's own parser."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
            out[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
    return out


def test_healthz_is_up_whatever_the_database_says() -> None:
    dead = Store(make_engine("postgresql+psycopg://nobody@127.0.0.1:1/none", connect_args={"connect_timeout": 1}))
    client = TestClient(create_app(dead, Settings()))
    assert client.get("/healthz").json() == {"status": "ok"}


def test_readyz_needs_the_database_and_a_live_scheduler(store: Store) -> None:
    alive = [True]
    client = TestClient(create_app(store, Settings(), scheduler_alive=lambda: alive[0]))
    ok = client.get("/readyz")
    assert ok.status_code == 200 and ok.json() == {
        "status": "ok", "checks": {"database": "ok", "scheduler": "ok"},
        "warm_up": {"commit_answers": {"state": "cold", "process": os.getpid()}},  # no lifespan: not started
    }
    alive[0] = False
    stopped = client.get("/readyz")
    assert stopped.status_code == 503 and stopped.json()["checks"]["scheduler"] == "stopped"

    dead = Store(make_engine("postgresql+psycopg://nobody@127.0.0.1:1/none", connect_args={"connect_timeout": 1}))
    unreachable = TestClient(create_app(dead, Settings(), scheduler_alive=lambda: True)).get("/readyz")
    assert unreachable.status_code == 503
    assert unreachable.json()["checks"]["database"].startswith("error")
    metrics = TestClient(create_app(dead, Settings())).get("/metrics")
    assert metrics.status_code == 200 and samples(metrics.text)["hubwatch_database_up"] == 0


def test_the_commit_answers_warm_up_starts_with_the_app_and_readyz_says_when_it_is_done(store: Store) -> None:
    """Issue 17: the serving process's lifespan starts the warm-up (not the first commit
    query, whose neighbours then paid for it); /readyz shows it without ever failing on it."""
    import time

    with TestClient(create_app(store, Settings())) as client:  # the lifespan runs
        deadline = time.monotonic() + 30
        while (ready := client.get("/readyz")).json()["warm_up"]["commit_answers"]["state"] != "warm":
            assert ready.status_code == 200 and ready.json()["warm_up"]["commit_answers"]["state"] == "warming"
            assert time.monotonic() < deadline, ready.json()
            time.sleep(0.05)
        warm = ready.json()["warm_up"]["commit_answers"]
        assert ready.status_code == 200 and warm["process"] == os.getpid()
        assert warm["chains"] == 0 and warm["records"] == 0 and warm["seconds"] >= 0  # an empty store


def test_readyz_fails_when_the_database_cannot_be_written(sqlite_store: Store) -> None:
    import sqlite3

    client = TestClient(create_app(sqlite_store, Settings(), scheduler_alive=lambda: True))
    assert client.get("/readyz").status_code == 200
    path = sqlite_store.engine.url.database
    assert path
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock: reads work, writes do not
        assert sqlite_store.ping()
        stuck = client.get("/readyz")
        assert stuck.status_code == 503 and "OperationalError" in stuck.json()["checks"]["database"]
    finally:
        holder.rollback()
        holder.close()
    assert client.get("/readyz").status_code == 200


def test_metrics_report_a_real_cycle(store: Store, tmp_path: Path) -> None:
    with HubEmulator() as hub:
        for i in range(3):
            hub.add_repo(f"org/m{i}", tiny_repo(tmp_path / f"m{i}.git", commits=2).path)
            store.add_repo(f"org/m{i}", source=f"org/m{i}", source_kind="hub")
        store.add_repo("org/gone", source="org/gone", source_kind="hub")
        d = make_daemon(store, hub.url)
        d.run_once(datetime.now(UTC))
        sent = hub.count()
    app = create_app(store, Settings(), scheduler_alive=lambda: True, metrics=Metrics(store, stats=d.stats.snapshot))
    r = TestClient(app).get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    got = samples(r.text)
    assert got['hubwatch_polls_total{status="ok"}'] == 3
    assert got['hubwatch_polls_total{status="error"}'] == 1
    assert got['hubwatch_poll_errors_total{kind="not_found"}'] == 1
    assert got["hubwatch_revisions_recorded_total"] == 6
    assert got["hubwatch_hub_requests_total"] == sent  # every request the emulator saw was counted
    assert got["hubwatch_hub_bytes_total"] > 0
    assert got["hubwatch_repos_tracked"] == 4
    assert got["hubwatch_advisories"] == store.count_advisories() == 3
    assert got["hubwatch_repos_due"] == 0
    assert got["hubwatch_over_request_budget"] == 0 and got["hubwatch_request_budget"] == 1000
    assert got["hubwatch_queue_lag_seconds"] >= 0 and got["hubwatch_scheduler_cycles_total"] == 1
