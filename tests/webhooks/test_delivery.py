"""Outbox delivery: signed, retried with backoff under the same id, at least once, disabled
after repeated failures; run against a real receiver on 127.0.0.1 and both databases."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from storage import subscriptions as subs
from tests.api.data import START, seed_history, settings, withdraw_one
from tests.webhooks.receiver import Receiver
from tracker.delivery import deliver_pending, retry_delay

LATER = START + timedelta(days=1)  # after every seeded event


def _subscribe(store, url: str, repos=None):  # type: ignore[no-untyped-def]
    from advisories.webhooks import new_secret

    return subs.create_subscription(store, url=url, repos=repos, secret=new_secret(), now=START)


def _drain(store, cfg, now, passes: int = 20) -> None:  # type: ignore[no-untyped-def]
    """Passes with the clock moving past each retry delay (as the daemon's ticks do)."""
    for i in range(passes):
        deliver_pending(store, cfg, now=now + timedelta(seconds=retry_delay(i + 1) * 2 * (i + 1)))


def test_receiver_failing_the_first_delivery_gets_it_again_with_the_same_id(store) -> None:  # type: ignore[no-untyped-def]
    failed: list[str] = []

    def answer(r, _seen):  # type: ignore[no-untyped-def]
        if not failed:
            failed.append(r.headers["webhook-id"])
            return 500
        return 204

    with Receiver(answer=answer) as rx:
        sub = _subscribe(store, rx.url)
        revs = seed_history(store, n=7)
        expected = {f"{r.advisory['id']}.{r.advisory['modified']}" for r in revs if r.advisory}
        cfg = settings()
        assert deliver_pending(store, cfg, now=LATER) == len(expected) - 1  # one failure holds up nothing else
        assert deliver_pending(store, cfg, now=LATER) == 1  # the next pass sends it again
        ids = rx.ids()
        assert len(ids) == len(expected) + 1 and set(ids) == expected
        again = [r for r in rx.requests if r.headers["webhook-id"] == failed[0]]
        assert len(again) == 2 and again[0].body == again[1].body
        assert again[1].headers["webhook-signature"]  # signed afresh (new timestamp), verified below
        rx.verified(sub.secret)
        assert deliver_pending(store, cfg, now=LATER + timedelta(days=1)) == 0  # nothing twice after success


def test_every_event_verifies_and_is_retried_until_delivered(store) -> None:  # type: ignore[no-untyped-def]
    with Receiver(answer=lambda _r, seen: 500 if seen == 0 else 204) as rx:
        sub = _subscribe(store, rx.url)
        revs = seed_history(store, n=7)
        expected = {f"{r.advisory['id']}.{r.advisory['modified']}" for r in revs if r.advisory}
        assert expected  # the seeded history has advisories
        _drain(store, settings(), LATER)
        assert set(rx.ids()) == expected
        for wid in expected:  # each id failed once, then succeeded: exactly two POSTs, same body
            posts = [r for r in rx.requests if r.headers["webhook-id"] == wid]
            assert len(posts) == 2
            assert posts[0].body == posts[1].body
        docs = rx.verified(sub.secret)  # the standardwebhooks library accepts every delivery
        for doc in docs:
            assert doc["type"] == "advisory.published"
            assert set(doc) == {"type", "timestamp", "data"}
            assert store.get_advisory(doc["data"]["id"]).record == doc["data"]
        state = subs.get_subscription(store, sub.id)
        assert state.delivered == len(expected) and state.pending == 0 and state.consecutive_failures == 0


def test_failed_attempt_waits_for_its_backoff(store) -> None:  # type: ignore[no-untyped-def]
    with Receiver(answer=lambda _r, _n: 503) as rx:
        _subscribe(store, rx.url)
        seed_history(store, n=2)  # one advisory
        cfg = settings(max_attempts=10, disable_after_failures=100)
        deliver_pending(store, cfg, now=LATER)
        deliver_pending(store, cfg, now=LATER)  # the first retry goes with the next pass
        assert len(rx.requests) == 2
        deliver_pending(store, cfg, now=LATER + timedelta(seconds=retry_delay(2) - 1))
        assert len(rx.requests) == 2  # the second retry waits its delay
        deliver_pending(store, cfg, now=LATER + timedelta(seconds=retry_delay(2)))
        assert len(rx.requests) == 3 and len(set(rx.ids())) == 1
    delays = [retry_delay(n) for n in range(2, 12)]
    assert retry_delay(1) == 0 and delays == sorted(delays) and delays[1] == delays[0] * 5
    assert max(delays) == 6 * 3600


def test_gives_up_after_max_attempts(store) -> None:  # type: ignore[no-untyped-def]
    with Receiver(answer=lambda _r, _n: 500) as rx:
        sub = _subscribe(store, rx.url)
        seed_history(store, n=2)  # one advisory
        _drain(store, settings(max_attempts=3, disable_after_failures=100), LATER)
        assert len(rx.requests) == 3 and len(set(rx.ids())) == 1
        [d] = subs.deliveries(store, sub.id)
        assert d["status"] == "failed" and d["attempts"] == 3 and d["last_status_code"] == 500
        state = subs.get_subscription(store, sub.id)
        assert state.failed == 1 and state.pending == 0 and state.active


def test_disabled_after_repeated_failures(store) -> None:  # type: ignore[no-untyped-def]
    with Receiver(answer=lambda _r, _n: 500) as rx:
        sub = _subscribe(store, rx.url)
        seed_history(store, n=7)
        cfg = settings(max_attempts=3, disable_after_failures=5)
        _drain(store, cfg, LATER, passes=30)
        state = subs.get_subscription(store, sub.id)
        assert state.status == "disabled" and state.active is False
        assert "5 failed deliveries" in (state.disabled_reason or "")
        assert state.consecutive_failures == 5
        assert len(rx.requests) == 5  # nothing is sent to a disabled subscription
        # a new advisory is not even queued for it
        before = state.pending
        seed_history(store, n=2, first_index=7)
        assert subs.get_subscription(store, sub.id).pending == before


def test_one_success_resets_the_failure_count(store) -> None:  # type: ignore[no-untyped-def]
    with Receiver(answer=lambda _r, seen: 500 if seen < 2 else 204) as rx:
        sub = _subscribe(store, rx.url)
        seed_history(store, n=2)  # one advisory
        cfg = settings(max_attempts=10, disable_after_failures=3)
        _drain(store, cfg, LATER)
        state = subs.get_subscription(store, sub.id)
        assert len(rx.requests) == 3 and state.active and state.consecutive_failures == 0 and state.delivered == 1


def test_private_destination_refused_at_delivery(store) -> None:  # type: ignore[no-untyped-def]
    with Receiver() as rx:
        sub = _subscribe(store, rx.url)  # stored while allowed, then the config turned it off
        seed_history(store, n=2)
        deliver_pending(store, settings(allow_private=False), now=LATER)
        assert rx.requests == []
        [d] = subs.deliveries(store, sub.id)
        assert d["attempts"] == 1 and "destination refused" in d["last_error"] and "loopback" in d["last_error"]


def test_redirects_are_not_followed(store) -> None:  # type: ignore[no-untyped-def]
    with Receiver(answer=lambda r, _n: 307 if r.path == "/hook" else 204) as rx:
        sub = _subscribe(store, rx.url)
        seed_history(store, n=2)
        deliver_pending(store, settings(), now=LATER)
        assert [r.path for r in rx.requests] == ["/hook"]
        [d] = subs.deliveries(store, sub.id)
        assert d["status"] == "pending" and d["last_status_code"] == 307


def test_repo_filter_and_updates_are_new_events(store) -> None:  # type: ignore[no-untyped-def]
    with Receiver() as rx:
        only_a = _subscribe(store, rx.url + "?sub=a", repos=["org/a"])
        revs_a = seed_history(store, "org/a", n=2)
        seed_history(store, "org/b", n=2)
        deliver_pending(store, settings(), now=LATER)
        assert [r.path for r in rx.requests] == ["/hook?sub=a"]
        docs = rx.verified(only_a.secret)
        assert [d["data"]["id"] for d in docs] == [revs_a[1].advisory["id"]]
        edited = withdraw_one(store, revs_a[1].advisory, LATER)
        deliver_pending(store, settings(), now=LATER + timedelta(minutes=1))
        last = rx.verified(only_a.secret)[-1]
        assert last["type"] == "advisory.updated" and last["data"]["withdrawn"] == edited["withdrawn"]
        assert rx.ids()[-1] == f"{edited['id']}.{edited['modified']}" != rx.ids()[0]


def test_concurrent_passes_send_each_event_once(store) -> None:  # type: ignore[no-untyped-def]
    with Receiver() as rx:
        _subscribe(store, rx.url)
        _subscribe(store, rx.url + "?second")
        seed_history(store, n=12)
        cfg = settings()
        barrier = threading.Barrier(3)
        errors: list[BaseException] = []

        def run() -> None:
            try:
                barrier.wait()
                deliver_pending(store, cfg, now=LATER)
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)

        threads = [threading.Thread(target=run) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors
        keys = [(r.path, r.headers["webhook-id"]) for r in rx.requests]
        assert len(keys) == len(set(keys)) == 2 * 8  # 8 advisories in 12 revisions, to two subscriptions


def test_unreachable_receiver_is_a_recorded_failure(store) -> None:  # type: ignore[no-untyped-def]
    from tests.api.data import free_port

    sub = _subscribe(store, f"http://127.0.0.1:{free_port()}/hook")
    seed_history(store, n=2)
    assert deliver_pending(store, settings(), now=LATER) == 0
    [d] = subs.deliveries(store, sub.id)
    assert d["status"] == "pending" and d["attempts"] == 1 and "ConnectError" in d["last_error"]
    assert subs.get_subscription(store, sub.id).consecutive_failures == 1


@pytest.mark.parametrize("n", [0])
def test_nothing_due_is_cheap(store, n: int) -> None:  # type: ignore[no-untyped-def]
    assert deliver_pending(store, settings(), now=LATER) == n
