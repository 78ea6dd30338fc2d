"""The daemon delivers too, in a worker of its own: a slow receiver never delays a polling cycle."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from advisories.webhooks import new_secret
from storage import open_store
from storage import subscriptions as subs
from tests.api.data import seed_history
from tests.webhooks.receiver import Receiver
from tracker.cli import build_parser
from tracker.cli.context import Context
from tracker.cli.serve_cmds import build_daemon


def _setup(tmp_path: Path) -> tuple[str, Path]:
    url = f"sqlite:///{tmp_path / 'hw.db'}"
    config = tmp_path / "config.toml"
    config.write_text(f'[storage]\nurl = "{url}"\n[advisories]\nosv_api = ""\n[schedule]\ninterval_seconds = 4\n'
                      "[webhooks]\nallow_private_destinations = true\ntimeout_seconds = 5\n", encoding="utf-8")
    return url, config


def test_the_delivery_worker_delivers_and_polling_does_not_wait_for_it(tmp_path: Path) -> None:
    url, config = _setup(tmp_path)
    store = open_store(url)
    release = threading.Event()

    def slow(_r, _n):  # type: ignore[no-untyped-def]
        release.wait(10)  # a receiver that takes its time
        return 204

    with Receiver(answer=slow) as rx:
        sub = subs.create_subscription(store, url=rx.url, repos=None, secret=new_secret(), now=datetime.now(UTC))
        revs = seed_history(store, n=4)
        now = datetime.now(UTC)
        store.record_poll("org/model", now=now, next_check_at=now + timedelta(days=1))  # nothing to poll
        ctx = Context(build_parser().parse_args(["--config", str(config), "run"]))
        daemon = build_daemon(ctx)
        try:
            worker = threading.Thread(target=daemon.deliver_once)
            worker.start()
            deadline = time.monotonic() + 10
            while not rx.requests and time.monotonic() < deadline:
                time.sleep(0.02)
            assert rx.requests  # the worker is stuck in the slow receiver ...
            started = time.monotonic()
            daemon.run_once()
            assert time.monotonic() - started < 1.0  # ... and a polling cycle does not wait for it
            release.set()
            worker.join(30)
            daemon.deliver_once()
        finally:
            daemon.stop(grace_seconds=0)
            ctx.store.close()
        docs = rx.verified(sub.secret)
        assert sorted({d["data"]["id"] for d in docs}) == sorted(r.advisory["id"] for r in revs if r.advisory)
    store.close()
