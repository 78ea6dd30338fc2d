"""Outbox delivery: signed, retried on the Standard Webhooks schedule under the same id, at
least once, nothing lost while a receiver is down, disabled only after days (queue kept);
run against a real receiver on 127.0.0.1 and both databases."""

from __future__ import annotations

import random
import threading
from datetime import timedelta

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from storage import subscriptions as subs
from storage.deliveries import claim_due
from tests.api.data import START, seed_history, settings, withdraw_one
from tests.webhooks.receiver import Receiver
from tracker.delivery import SCHEDULE, deliver_pending, lease_seconds, prune, retry_delay

LATER = START + timedelta(days=1)  # after every seeded event


def _subscribe(store, url: str, repos=None):  # type: ignore[no-untyped-def]
    from advisories.webhooks import new_secret

    return subs.create_subscription(store, url=url, repos=repos, secret=new_secret(), now=START)


def _drain(store, cfg, now, passes: int = 20, step=timedelta(hours=11)) -> None:  # type: ignore[no-untyped-def]
    """Passes with the clock moving past the longest retry delay each time (10 h + jitter)."""
    for i in range(passes):
        deliver_pending(store, cfg, now=now + step * (i + 1))


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
        # the receiver took the others after failing this one: it is back, so the next pass
        # sends it again without waiting out its backoff
        assert deliver_pending(store, cfg, now=LATER) == 1
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
    with Receiver(answer=lambda _r, _n: 500) as rx:
        _subscribe(store, rx.url)
        seed_history(store, n=2)  # one advisory
        cfg = settings()
        at = LATER
        deliver_pending(store, cfg, now=at)
        for attempt, base in enumerate(SCHEDULE[:4], start=1):  # 5 s, 5 min, 30 min, 2 h (+-10 %)
            deliver_pending(store, cfg, now=at + timedelta(seconds=base * 0.89))
            assert len(rx.requests) == attempt  # not before its delay
            at += timedelta(seconds=base * 1.11)
            deliver_pending(store, cfg, now=at)
            assert len(rx.requests) == attempt + 1 and len(set(rx.ids())) == 1


def test_the_schedule_spans_a_day_even_with_jitter() -> None:
    rng = random.Random(7)
    for _ in range(200):
        total = sum(retry_delay(n, rng) for n in range(1, 8))  # the 7 waits between 8 attempts
        assert total >= 24 * 3600
    assert [retry_delay(n) for n in range(1, 9)] == [*SCHEDULE, SCHEDULE[-1]]


def test_a_receiver_that_stays_down_keeps_its_events(store) -> None:  # type: ignore[no-untyped-def]
    with Receiver(answer=lambda _r, _n: 500) as rx:
        sub = _subscribe(store, rx.url)
        seed_history(store, n=2)  # one advisory
        _drain(store, settings(max_attempts=3), LATER, passes=8)  # 88 h: past max_attempts, under 5 days
        assert len(rx.requests) == 8 and len(set(rx.ids())) == 1  # one attempt per 10 h, never given up
        [d] = subs.deliveries(store, sub.id)
        assert d["status"] == "pending" and d["attempts"] == 8 and d["last_status_code"] == 500
        assert subs.get_subscription(store, sub.id).active


def test_an_event_the_receiver_alone_refuses_is_given_up(store) -> None:  # type: ignore[no-untyped-def]
    refused: list[str] = []

    def answer(r, _seen):  # type: ignore[no-untyped-def]
        if not refused:
            refused.append(r.headers["webhook-id"])
        return 400 if r.headers["webhook-id"] == refused[0] else 204

    with Receiver(answer=answer) as rx:
        sub = _subscribe(store, rx.url)
        seed_history(store, n=7)
        _drain(store, settings(max_attempts=3), LATER, passes=5)
        assert [r.headers["webhook-id"] for r in rx.requests].count(refused[0]) == 3
        state = subs.get_subscription(store, sub.id)
        assert state.failed == 1 and state.pending == 0 and state.active and state.delivered == len(set(rx.ids())) - 1


def test_disabled_only_after_days_and_the_queue_is_kept(store) -> None:  # type: ignore[no-untyped-def]
    up = threading.Event()
    with Receiver(answer=lambda _r, _n: 204 if up.is_set() else 500) as rx:
        sub = _subscribe(store, rx.url)
        revs = seed_history(store, n=7)
        cfg = settings(disable_after_days=2)
        _drain(store, cfg, LATER, passes=4)  # failing from +11 h to +44 h: still active
        assert subs.get_subscription(store, sub.id).active
        _drain(store, cfg, LATER + timedelta(hours=44), passes=2)  # to +66 h: over 2 days
        state = subs.get_subscription(store, sub.id)
        assert state.status == "disabled" and "without a success" in (state.disabled_reason or "")
        first = len(_events(revs))
        assert state.pending == first  # nothing dropped
        sent = len(rx.requests)
        _drain(store, cfg, LATER + timedelta(hours=66), passes=3)
        assert len(rx.requests) == sent  # nothing is sent to a disabled subscription
        more = seed_history(store, n=3, first_index=7)  # events keep being queued for it
        total = first + len(_events(more))
        assert total > first and subs.get_subscription(store, sub.id).pending == total
        up.set()
        back = LATER + timedelta(days=5)
        subs.set_active(store, sub.id, True, now=back)
        assert deliver_pending(store, cfg, now=back) == total  # the whole queue resumes at once
    assert set(rx.ids()) == _events(revs) | _events(more)
    rx.verified(sub.secret)
    state = subs.get_subscription(store, sub.id)
    assert state.active and state.pending == 0 and state.consecutive_failures == 0 and state.failing_since is None


def _events(revs) -> set[str]:  # type: ignore[no-untyped-def]
    return {f"{r.advisory['id']}.{r.advisory['modified']}" for r in revs if r.advisory}


@pytest.mark.parametrize("down", [500, 410, 429, "reset"])
def test_a_receiver_down_for_minutes_gets_every_event_once_back(store, down) -> None:  # type: ignore[no-untyped-def]
    up = threading.Event()

    def answer(r, _seen):  # type: ignore[no-untyped-def]
        if up.is_set():
            return 204
        if down == "reset":
            raise ConnectionResetError  # the handler dies: the connection is dropped
        return down

    with Receiver(answer=answer) as rx:
        sub = _subscribe(store, rx.url)
        revs = seed_history(store, n=12)
        cfg = settings()
        for minute in range(10):  # ten minutes of failure, a pass every 20 s
            for tick in range(3):
                deliver_pending(store, cfg, now=LATER + timedelta(minutes=minute, seconds=20 * tick))
        assert subs.get_subscription(store, sub.id).delivered == 0
        up.set()
        _drain(store, cfg, LATER + timedelta(minutes=10), passes=2, step=timedelta(hours=2))
    expected = {f"{r.advisory['id']}.{r.advisory['modified']}" for r in revs if r.advisory}
    delivered = [r for r in rx.requests if r.headers["webhook-id"] in expected]
    assert set(rx.ids()) == expected
    rx.verified(sub.secret)
    state = subs.get_subscription(store, sub.id)
    assert state.delivered == len(expected) and state.pending == 0 and delivered


def test_retry_after_holds_the_whole_subscription(store) -> None:  # type: ignore[no-untyped-def]
    busy = threading.Event()
    busy.set()
    with Receiver(answer=lambda _r, _n: (429, {"Retry-After": "120"}) if busy.is_set() else 204) as rx:
        sub = _subscribe(store, rx.url)
        seed_history(store, n=7)
        cfg = settings()
        deliver_pending(store, cfg, now=LATER)
        assert len(rx.requests) == 1  # a 429 ends the batch: the others wait too
        deliver_pending(store, cfg, now=LATER + timedelta(seconds=60))
        assert len(rx.requests) == 1  # and nothing goes before Retry-After, though 5 s passed
        busy.clear()
        events = subs.get_subscription(store, sub.id).pending
        assert deliver_pending(store, cfg, now=LATER + timedelta(seconds=121)) == events
        assert len(set(rx.ids())) == events


def test_secret_rotation_signs_with_both_for_the_window(store) -> None:  # type: ignore[no-untyped-def]
    from advisories.webhooks import new_secret

    with Receiver() as rx:
        sub = _subscribe(store, rx.url)
        seed_history(store, n=2)
        fresh = new_secret()
        subs.rotate_secret(store, sub.id, fresh, now=LATER, window=timedelta(hours=24))
        deliver_pending(store, settings(), now=LATER + timedelta(hours=1))
        rx.verified(sub.secret)  # receivers still on the old secret accept it
        rx.verified(fresh)  # and those already on the new one
        assert len(rx.requests[0].headers["webhook-signature"].split(" ")) == 2
        withdraw_one(store, store.list_advisories()[0].record, LATER + timedelta(hours=30))
        deliver_pending(store, settings(), now=LATER + timedelta(hours=30))
        last = rx.requests[-1]
        assert len(last.headers["webhook-signature"].split(" ")) == 1  # the window closed
        Webhook(fresh).verify(last.body, last.headers)
        with pytest.raises(WebhookVerificationError):
            Webhook(sub.secret).verify(last.body, last.headers)


def test_deleting_never_drops_queued_events_silently(store) -> None:  # type: ignore[no-untyped-def]
    sub = _subscribe(store, "http://127.0.0.1:9/hook")
    seed_history(store, n=2)
    with pytest.raises(subs.PendingDeliveries) as e:
        subs.delete_subscription(store, sub.id)
    assert e.value.pending == 1 and subs.get_subscription(store, sub.id) is not None
    assert subs.delete_subscription(store, sub.id, discard_pending=True) == 1
    assert subs.get_subscription(store, sub.id) is None


def test_a_crashed_deliverers_leases_resume_after_the_lease(store) -> None:  # type: ignore[no-untyped-def]
    with Receiver() as rx:
        _subscribe(store, rx.url)
        seed_history(store, n=2)
        cfg = settings()
        [leased] = claim_due(store, "crashed:1", now=LATER, limit=10, lease_seconds=lease_seconds(cfg))
        assert deliver_pending(store, cfg, now=LATER + timedelta(seconds=30)) == 0  # still leased
        assert lease_seconds(cfg) <= 60
        assert deliver_pending(store, cfg, now=LATER + timedelta(seconds=lease_seconds(cfg) + 1)) == 1
        assert rx.ids() == [leased.webhook_id]


def test_delivered_rows_are_pruned_after_the_retention(store) -> None:  # type: ignore[no-untyped-def]
    with Receiver(answer=lambda r, _n: 204 if "keep" not in r.path else 500) as rx:
        ok = _subscribe(store, rx.url)
        failing = _subscribe(store, rx.url + "?keep")
        seed_history(store, n=2)
        cfg = settings(retention_days=7)
        deliver_pending(store, cfg, now=LATER)
        assert prune(store, cfg, now=LATER + timedelta(days=6)) == 0
        assert prune(store, cfg, now=LATER + timedelta(days=8)) == 1
        assert subs.deliveries(store, ok.id) == []
        assert [d["status"] for d in subs.deliveries(store, failing.id)] == ["pending"]


def test_one_success_resets_the_failure_count(store) -> None:  # type: ignore[no-untyped-def]
    with Receiver(answer=lambda _r, seen: 500 if seen < 2 else 204) as rx:
        sub = _subscribe(store, rx.url)
        seed_history(store, n=2)  # one advisory
        cfg = settings(max_attempts=10)
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
