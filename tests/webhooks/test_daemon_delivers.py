"""The daemon delivers too: each cycle of the daemon ``hubwatch run`` builds ends with a delivery pass."""

from __future__ import annotations

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


def test_a_daemon_cycle_delivers(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'hw.db'}"
    config = tmp_path / "config.toml"
    config.write_text(f'[storage]\nurl = "{url}"\n[advisories]\nosv_api = ""\n'
                      "[webhooks]\nallow_private_destinations = true\n", encoding="utf-8")
    store = open_store(url)
    with Receiver() as rx:
        sub = subs.create_subscription(store, url=rx.url, repos=None, secret=new_secret(), now=datetime.now(UTC))
        revs = seed_history(store, n=4)
        now = datetime.now(UTC)
        store.record_poll("org/model", now=now, next_check_at=now + timedelta(days=1))  # nothing to poll
        ctx = Context(build_parser().parse_args(["--config", str(config), "run"]))
        try:
            build_daemon(ctx).run_once()
        finally:
            ctx.store.close()
        docs = rx.verified(sub.secret)
        assert sorted(d["data"]["id"] for d in docs) == sorted(r.advisory["id"] for r in revs if r.advisory)
    store.close()
