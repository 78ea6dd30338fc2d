"""Stage 7 (emit): passes over the webhook outbox, run by ``hubwatch poll`` and by the daemon's
own delivery worker (never inside a polling cycle: a slow receiver must not delay polling).

Due deliveries are leased (so several daemons share the outbox), grouped by subscription and
sent by a few worker threads, one subscription per worker, in order. The destination is
checked again before every POST and the POST goes to the addresses checked. A failed
attempt is retried under the same ``webhook-id`` on the Standard Webhooks schedule
(:func:`retry_delay`, ~27 h over 8 attempts, with jitter); a 429/503 holds the whole
subscription for its ``Retry-After``. A pass ends after ``PASS_SECONDS`` (each POST after at
most ``[webhooks] timeout_seconds``), so a lease of :func:`lease_seconds` covers all it
claimed: a crashed deliverer's rows are retried a minute later, not ten.
"""

from __future__ import annotations

import logging
import os
import random
import secrets
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from advisories.webhooks import DestinationRefused, Outcome, check_destination, encode_body, post
from storage.deliveries import (
    DueDelivery,
    Failure,
    claim_due,
    mark_delivered,
    mark_failed,
    prune_delivered,
    release,
)
from storage.store import Store
from tracker.config import Settings

log = logging.getLogger("hubwatch.webhooks")

#: Seconds before the 2nd, 3rd, ... attempt: the Standard Webhooks (Svix) schedule. Past its
#: end an event that is still pending (its receiver never came back) is retried every 10 h.
SCHEDULE = (5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0, 36000.0)
JITTER = 0.1  # +-10 %: several deliverers must not retry in step; 8 attempts still span > 24 h
STOP_AFTER = 3  # failures in a row that end one subscription's batch in this pass
BATCH = 500  # deliveries leased per pass
PER_SUBSCRIPTION = 50  # sent to one subscription per pass
PASS_SECONDS = 30.0  # no POST starts later than this into a pass
WORKERS = 4
PRUNE_EVERY_SECONDS = 600.0

OutcomeHook = Callable[[str], None]


def retry_delay(attempts: int, rng: random.Random | None = None) -> float:
    """Seconds to wait after the ``attempts``-th failed attempt (no jitter without ``rng``)."""
    base = SCHEDULE[min(max(attempts, 1), len(SCHEDULE)) - 1]
    return base * (1 + rng.uniform(-JITTER, JITTER)) if rng is not None else base


def lease_seconds(settings: Settings) -> float:
    """Long enough for a whole pass: the last POST starts by ``PASS_SECONDS`` and ends by its deadline."""
    return PASS_SECONDS + settings.webhooks.timeout_seconds + 15.0


def deliver_pending(
    store: Store, settings: Settings, *, now: datetime | None = None, on_outcome: OutcomeHook | None = None,
    rng: random.Random | None = None, stop: threading.Event | None = None,
) -> int:
    """Send every due delivery once; returns how many were delivered (2xx).

    ``now`` decides what is due and when retries fall due (the signature's timestamp is
    always the real clock, which receivers check). ``on_outcome`` hears "delivered",
    "failed" or "refused" per attempt (metrics). ``stop`` ends the pass early (shutdown).
    """
    now = now or datetime.now(UTC)
    owner = f"{socket.gethostname()}:{os.getpid()}:deliver:{secrets.token_hex(4)}"
    due = claim_due(store, owner, now=now, limit=BATCH, lease_seconds=lease_seconds(settings))
    if not due:
        return 0
    groups: dict[str, list[DueDelivery]] = {}
    for d in due:
        groups.setdefault(d.subscription_id, []).append(d)
    pass_ends = time.monotonic() + PASS_SECONDS
    batch = _Batch(store, settings, owner, now, rng or random.Random(), pass_ends, stop, on_outcome)
    if len(groups) == 1:
        return batch.send(next(iter(groups.values())))
    with ThreadPoolExecutor(max_workers=min(WORKERS, len(groups)), thread_name_prefix="hubwatch-deliver") as pool:
        return sum(pool.map(batch.send, groups.values()))


def prune(store: Store, settings: Settings, *, now: datetime | None = None) -> int:
    """Delete delivered outbox rows older than ``[webhooks] retention_days``."""
    now = now or datetime.now(UTC)
    return prune_delivered(store, before=now - timedelta(days=settings.webhooks.retention_days))


class DeliveryWorker:
    """What the daemon's delivery job runs each tick: a pass, and now and then a prune."""

    def __init__(self, store: Store, settings: Settings, *, on_outcome: OutcomeHook | None = None,
                 stop: threading.Event | None = None) -> None:
        self.store, self.settings, self.on_outcome, self.stop = store, settings, on_outcome, stop
        self._next_prune = 0.0

    def __call__(self) -> None:
        deliver_pending(self.store, self.settings, on_outcome=self.on_outcome, stop=self.stop)
        if time.monotonic() >= self._next_prune:
            self._next_prune = time.monotonic() + PRUNE_EVERY_SECONDS
            pruned = prune(self.store, self.settings)
            if pruned:
                log.info("pruned %d delivered webhook rows", pruned)


class _Batch:
    """One pass's shared state; :meth:`send` sends one subscription's deliveries in order."""

    def __init__(self, store: Store, settings: Settings, owner: str, now: datetime, rng: random.Random,
                 pass_ends: float, stop: threading.Event | None, on_outcome: OutcomeHook | None) -> None:
        self.store, self.settings, self.owner, self.now, self.rng = store, settings, owner, now, rng
        self.pass_ends, self.stop, self.on_outcome = pass_ends, stop, on_outcome

    def send(self, batch: list[DueDelivery]) -> int:
        hooks = self.settings.webhooks
        delivered = failures = 0
        for i, d in enumerate(batch):
            if (i >= PER_SUBSCRIPTION or failures >= STOP_AFTER or time.monotonic() >= self.pass_ends
                    or (self.stop is not None and self.stop.is_set())):
                self._release(batch[i:])
                break
            name, outcome = _attempt(d, allow_private=hooks.allow_private_destinations,
                                     deadline=hooks.timeout_seconds)
            if self.on_outcome is not None:
                self.on_outcome(name)
            if outcome.ok:
                mark_delivered(self.store, d, self.owner, now=self.now, status_code=outcome.status_code)
                delivered += 1
                failures = 0
                continue
            failures += 1
            failure = self._failure(d, outcome)
            disabled = mark_failed(self.store, d, self.owner, now=self.now, failure=failure,
                                   max_attempts=hooks.max_attempts,
                                   disable_after=timedelta(days=hooks.disable_after_days))
            log.warning("webhook subscription=%s id=%s attempt=%d failed: %s; next in %.0fs%s", d.subscription_id,
                        d.webhook_id, d.attempts + 1, failure.error, failure.retry_in,
                        " (subscription disabled; its queue is kept)" if disabled else "")
            if disabled or outcome.busy:  # a busy receiver gets nothing more this pass
                self._release(batch[i + 1:])
                break
        return delivered

    def _failure(self, d: DueDelivery, outcome: Outcome) -> Failure:
        delay = retry_delay(d.attempts + 1, self.rng)
        if outcome.retry_after is not None:
            delay = max(delay, outcome.retry_after)
        return Failure(outcome.error or "failed", outcome.status_code, delay,
                       hold_subscription=delay if outcome.busy else None)

    def _release(self, rest: list[DueDelivery]) -> None:
        for d in rest:
            release(self.store, d, self.owner)


def _attempt(d: DueDelivery, *, allow_private: bool, deadline: float) -> tuple[str, Outcome]:
    try:
        addresses = check_destination(d.url, allow_private=allow_private)
    except DestinationRefused as e:
        return "refused", Outcome(False, None, f"destination refused: {e}")
    outcome = post(d.url, secrets=d.secrets, msg_id=d.webhook_id, timestamp=int(time.time()),
                   body=encode_body(d.payload), addresses=addresses, deadline_seconds=deadline)
    return ("delivered" if outcome.ok else "failed"), outcome
