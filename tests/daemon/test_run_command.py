"""``hubwatch run`` as a user runs it (config.toml, SQLite): the API and the scheduler in one
process, a Hub webhook marking a repo due, the operations routes, a clean stop on SIGINT."""

from __future__ import annotations

import signal
import socket
from datetime import UTC, datetime
from pathlib import Path

import httpx
from sqlalchemy import text

from storage import open_store
from tests.daemon.helpers import (
    config_bytes,
    free_port,
    hubwatch_env,
    start_run,
    tiny_repo,
    wait_for,
    write_config,
)
from tests.hubemu import HubEmulator

SECRET = "hook-secret-for-tests"


def test_run_serves_the_api_reacts_to_webhooks_and_stops_cleanly(hub: HubEmulator, tmp_path: Path) -> None:
    repos = {f"org/r{i}": tiny_repo(tmp_path / f"r{i}.git", commits=2) for i in range(3)}
    for repo_id, b in repos.items():
        hub.add_repo(repo_id, b.path)
    port = free_port()
    db_url = f"sqlite:///{tmp_path / 'hubwatch.db'}"
    config = write_config(tmp_path / "config.toml", db_url=db_url, hub_url=hub.url, port=port,
                          repos=sorted(repos), schedule={"interval_seconds": 3600}, hooks_secret=SECRET)
    proc = start_run(config, tmp_path / "run.log")
    base = f"http://127.0.0.1:{port}"
    store = open_store(db_url)
    try:
        wait_for(lambda: _get(f"{base}/readyz") == 200, 120, "/readyz")  # a bound, not a delay: imports are slow on a loaded machine
        assert _get(f"{base}/healthz") == 200
        wait_for(lambda: all(r.revisions == 2 for r in store.list_repos()) and len(store.list_repos()) == 3, 120,
                 "the first read of the config's repos")

        new = repos["org/r1"].commit({"config.json": config_bytes(eos_token_id=11)}, title="eos")
        payload = {"event": {"action": "update", "scope": "repo.content"},
                   "repo": {"type": "model", "name": "org/r1", "headSha": new},
                   "updatedRefs": [{"ref": "refs/heads/main", "oldSha": repos["org/r1"].head(), "newSha": new}],
                   "webhook": {"id": "w1", "version": 3}}
        r = httpx.post(f"{base}/hooks/huggingface", json=payload, headers={"X-Webhook-Secret": SECRET}, timeout=5)
        assert r.status_code == 200 and r.json() == {"status": "queued", "repo": "org/r1"}
        wait_for(lambda: store.get_repo("org/r1").head_sha == new, 20, "the webhook's repo to be read")  # type: ignore[union-attr]
        assert store.get_repo("org/r0").next_check_at > datetime.now(UTC)  # type: ignore[union-attr]

        metrics = httpx.get(f"{base}/metrics", timeout=5).text
        assert 'hubwatch_polls_total{status="ok"} 4.0' in metrics
        assert "hubwatch_revisions_recorded_total 7.0" in metrics
        assert 'hubwatch_hub_webhooks_total{outcome="queued"} 1.0' in metrics
        assert "hubwatch_repos_tracked 3.0" in metrics

        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
        with store.engine.connect() as c:
            assert c.execute(text("SELECT count(*) FROM repos WHERE lease_owner IS NOT NULL")).scalar_one() == 0
        log = (tmp_path / "run.log").read_text()
        assert "hubwatch stopped" in log and "Traceback" not in log and SECRET not in log
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        store.close()


def test_run_exits_1_when_its_port_is_taken(hub: HubEmulator, tmp_path: Path) -> None:
    import subprocess
    import sys

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        config = write_config(tmp_path / "config.toml", db_url=f"sqlite:///{tmp_path / 'hw.db'}", hub_url=hub.url,
                              port=port)
        done = subprocess.run([sys.executable, "-m", "tracker.cli", "--config", str(config), "run"],
                              env=hubwatch_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert f"could not listen on 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr


def _get(url: str) -> int:
    try:
        return httpx.get(url, timeout=2).status_code
    except httpx.HTTPError:
        return 0
