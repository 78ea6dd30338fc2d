"""Webhook receivers that fail on the wire, then recover (issue 10): nothing lost, signatures valid.

The fault proxy stands between the deliverer and a real receiver: one that accepts the
connection and never answers, one that answers 200 after the deliverer's deadline (the event
arrived, the deliverer cannot know), one that resets the connection, one that trickles, one
that sends 503 with Retry-After, one that says 410 for a while. Passes run with the clock moved on (the retry schedule is hours); at the end the
receiver holds every event, each request verified with the ``standardwebhooks`` library, the
outbox is empty, and the subscription is active with no failure left on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from advisories.webhooks import new_secret
from storage import open_store
from storage import subscriptions as subs
from tests.api.data import seed_history, settings
from tests.faults.proxy import HttpFaultProxy
from tests.webhooks.receiver import Receiver
from tracker.delivery import deliver_pending

DEADLINE = 1.0

SCENARIOS: dict[str, Callable[[HttpFaultProxy], Any]] = {
    "accepts the connection and never answers": lambda p: p.add("hang", method="POST", times=3, seconds=30),
    "answers 200 after the deadline": lambda p: p.add("slow", method="POST", times=3, seconds=DEADLINE + 1.5),
    "resets before answering": lambda p: p.add("reset", method="POST", times=3),
    "trickles its answer": lambda p: p.add("trickle", method="POST", times=3, every=0.3),
    "a 503 storm with Retry-After": lambda p: p.add(
        "status", method="POST", times=6, status=503, headers={"Retry-After": "120"}),
    "410 for a while": lambda p: p.add("status", method="POST", times=6, status=410),
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_receiver_that_fails_on_the_wire_gets_every_event_once_it_recovers(tmp_path: Path, scenario: str) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'hw.db'}")
    cfg = settings()
    cfg = replace(cfg, webhooks=replace(cfg.webhooks, timeout_seconds=DEADLINE))
    with Receiver() as rx, HttpFaultProxy(rx.url.rsplit("/", 1)[0]) as proxy:
        rule = SCENARIOS[scenario](proxy)
        sub = subs.create_subscription(store, url=f"{proxy.url}/hook", repos=None, secret=new_secret(),
                                       now=datetime(2025, 3, 1, tzinfo=UTC))
        revs = seed_history(store, n=6)
        expected = {f"{r.advisory['id']}.{r.advisory['modified']}" for r in revs if r.advisory}
        assert len(expected) >= 3
        start = datetime(2025, 3, 3, tzinfo=UTC)
        for minutes in (0, 1, 10, 40, 130, 400, 1000, 2000):  # the retry schedule, walked through
            deliver_pending(store, cfg, now=start + timedelta(minutes=minutes))
            if subs.get_subscription(store, sub.id).pending == 0:  # type: ignore[union-attr]
                break
        assert rule.hits == rule.times, f"the fault fired {rule.hits} of {rule.times} times"
        state = subs.get_subscription(store, sub.id)
        assert state is not None
        assert set(rx.ids()) == expected  # every event, none lost (an early one maybe twice: at least once)
        assert len(rx.verified(sub.secret)) == len(rx.requests)  # every request's signature is valid
        assert state.pending == 0 and state.delivered == len(expected)
        assert state.active and state.consecutive_failures == 0 and state.failing_since is None
    store.close()
