"""``hubwatch run`` SIGKILLed while a webhook POST is in flight, then started again (issue 10).

The receiver sits behind the fault proxy, which holds the first POST unanswered: the daemon
dies there, its delivery lease still on the outbox. The restarted daemon must deliver every
event once that lease has run out (a minute, not ten), each signature valid under the
``standardwebhooks`` library, and leave the outbox empty and the subscription active.
"""

from __future__ import annotations

import signal
from datetime import UTC, datetime
from pathlib import Path

import pytest

from advisories.webhooks import new_secret
from storage import open_store
from storage import subscriptions as subs
from tests.daemon.helpers import free_port, start_run, tiny_repo, wait_for, write_config
from tests.faults.proxy import HttpFaultProxy
from tests.hubemu import HubEmulator
from tests.webhooks.receiver import Receiver
from tracker.config import Settings, WebhookSettings
from tracker.delivery import lease_seconds

pytestmark = pytest.mark.slow  # a delivery lease (46 s here) has to run out in real time

TIMEOUT = 1.0


def test_a_daemon_killed_mid_delivery_and_restarted_delivers_every_event(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'hw.db'}"
    store = open_store(url)
    with HubEmulator() as hub, Receiver() as rx, HttpFaultProxy(rx.url.rsplit("/", 1)[0]) as proxy:
        for i in range(2):
            hub.add_repo(f"org/m{i}", tiny_repo(tmp_path / f"m{i}.git", commits=3).path)
        sub = subs.create_subscription(store, url=f"{proxy.url}/hook", repos=None, secret=new_secret(),
                                       now=datetime.now(UTC))
        held = proxy.add("hang", method="POST", times=1, seconds=300)
        config = write_config(tmp_path / "config.toml", db_url=url, hub_url=hub.url, port=free_port(),
                              repos=["org/m0", "org/m1"], schedule={"interval_seconds": 3600})
        with config.open("a") as f:
            f.write(f"[webhooks]\nallow_private_destinations = true\ntimeout_seconds = {TIMEOUT}\n")
        first = start_run(config, tmp_path / "first.log")
        try:
            wait_for(lambda: held.hits == 1, 120, "the first POST to be in flight", every=0.05)
            # the POST hangs for minutes: let both repos' checks finish first, so the kill
            # lands mid-delivery with every advisory stored (under load the second repo's
            # check could still be writing when the first POST went out)
            wait_for(lambda: len(store.list_advisories()) == 4, 120, "both repos' advisories", every=0.05)
            first.send_signal(signal.SIGKILL)
            assert first.wait(10) == -signal.SIGKILL
        finally:
            if first.poll() is None:
                first.kill()
        expected = {f"{a.id}.{a.record['modified']}" for a in store.list_advisories()}  # the webhook-id
        assert len(expected) == 4 and rx.requests == []  # two context changes per repo; none arrived

        second = start_run(config, tmp_path / "second.log")  # the same config: as systemd would restart it
        try:
            lease = lease_seconds(Settings(webhooks=WebhookSettings(timeout_seconds=TIMEOUT)))
            wait_for(lambda: set(rx.ids()) == expected, lease + 90, "every event after the dead daemon's lease")
            second.send_signal(signal.SIGTERM)
            assert second.wait(30) == 0
        finally:
            if second.poll() is None:
                second.kill()
        assert sorted(rx.ids()) == sorted(expected)  # each once: the held POST never reached the receiver
        assert len(rx.verified(sub.secret)) == len(expected)
    state = subs.get_subscription(store, sub.id)
    assert state is not None and state.pending == 0 and state.delivered == len(expected) and state.active
    log = (tmp_path / "second.log").read_text()
    assert "Traceback" not in log
    store.close()
