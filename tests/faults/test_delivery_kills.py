"""A deliverer killed in the middle of a pass loses nothing (issue 10: kill points during delivery).

A child process leases the outbox and is SIGKILLed while its first POST is in flight; after
its lease (a minute, not ten) the next deliverer sends every event, with valid signatures.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from advisories.webhooks import new_secret
from storage import open_store
from storage import subscriptions as subs
from tests.api.data import seed_history, settings
from tests.corpus import REPO_ROOT
from tests.webhooks.receiver import Receiver
from tracker.delivery import deliver_pending, lease_seconds

CHILD = textwrap.dedent("""
    import sys
    from storage import open_store
    from tracker.config import Settings, WebhookSettings
    from tracker.delivery import deliver_pending

    cfg = Settings(webhooks=WebhookSettings(allow_private_destinations=True))
    deliver_pending(open_store(sys.argv[1]), cfg)
""")


def test_a_deliverer_killed_mid_post_leaves_every_event_to_the_next(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'hw.db'}"
    store = open_store(url)
    hold = threading.Event()

    def answer(_r, _n):  # type: ignore[no-untyped-def]
        if not hold.is_set():
            hold.wait(30)  # the first POST hangs until the child is dead
        return 204

    with Receiver(answer=answer) as rx:
        sub = subs.create_subscription(store, url=rx.url, repos=None, secret=new_secret(), now=datetime.now(UTC))
        revs = seed_history(store, n=7, start=datetime.now(UTC) - timedelta(days=1))
        expected = {f"{r.advisory['id']}.{r.advisory['modified']}" for r in revs if r.advisory}
        child = subprocess.Popen([sys.executable, "-c", CHILD, url], cwd=REPO_ROOT, stderr=subprocess.PIPE,
                                 env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
        deadline = time.monotonic() + 60
        while not rx.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert rx.requests, f"the child never posted (exit {child.poll()}): {child.stderr.read() if child.poll() is not None else b''}"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        hold.set()
        cfg = settings()
        assert deliver_pending(store, cfg) == 0  # still leased by the dead process
        later = datetime.now(UTC) + timedelta(seconds=lease_seconds(cfg) + 1)
        assert deliver_pending(store, cfg, now=later) == len(expected)
        assert set(rx.ids()) == expected
        rx.verified(sub.secret)
    assert subs.get_subscription(store, sub.id).pending == 0
    store.close()
