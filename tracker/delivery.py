"""Stage 7 (emit): one pass over the webhook outbox, called by ``hubwatch poll`` and each daemon cycle.

Due deliveries are leased (so several daemons share the outbox), grouped by subscription and
sent by a few worker threads, one subscription per worker, in order. The destination is
checked again before every POST. A failed attempt is retried under the same ``webhook-id``:
first with the next pass, then with exponential backoff (:func:`retry_delay`). After
``STOP_AFTER`` failures in a row the rest of that subscription's batch waits for the next
pass, so a dead receiver costs a few timeouts per pass, not one per event.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import httpx

from advisories.webhooks import TIMEOUT, DestinationRefused, check_destination, encode_body, post
from storage.store import Store
from storage.subscriptions import DueDelivery, claim_due, mark_delivered, mark_failed, release
from tracker.config import Settings

log = logging.getLogger("hubwatch.webhooks")

RETRY_BASE_SECONDS = 5.0
RETRY_FACTOR = 5.0
RETRY_MAX_SECONDS = 6 * 3600.0
STOP_AFTER = 3  # failures in a row that end one subscription's batch in this pass
BATCH = 500  # deliveries leased per pass
PER_SUBSCRIPTION = 50  # sent to one subscription per pass
LEASE_SECONDS = 600
WORKERS = 4

Outcome = Callable[[str], None]


def retry_delay(attempts: int) -> float:
    """Seconds to wait after the ``attempts``-th failed attempt.

    The first retry goes out with the next pass (a daemon tick or the next ``poll``), then
    the wait grows exponentially: 5 s, 25 s, 125 s, ... up to 6 h.
    """
    if attempts <= 1:
        return 0.0
    return float(min(RETRY_MAX_SECONDS, RETRY_BASE_SECONDS * RETRY_FACTOR ** (attempts - 2)))


def deliver_pending(
    store: Store, settings: Settings, *, now: datetime | None = None, client: httpx.Client | None = None,
    on_outcome: Outcome | None = None,
) -> int:
    """Send every due delivery once; returns how many were delivered (2xx).

    ``now`` decides what is due and when retries fall due (the signature's timestamp is
    always the real clock, which receivers check). ``on_outcome`` hears "delivered",
    "failed" or "refused" per attempt (metrics).
    """
    now = now or datetime.now(UTC)
    owner = f"{socket.gethostname()}:{os.getpid()}:deliver:{secrets.token_hex(4)}"
    due = claim_due(store, owner, now=now, limit=BATCH, lease_seconds=LEASE_SECONDS)
    if not due:
        return 0
    groups: dict[str, list[DueDelivery]] = {}
    for d in due:
        groups.setdefault(d.subscription_id, []).append(d)
    own_client = client is None
    http = client or httpx.Client(timeout=TIMEOUT, follow_redirects=False)
    try:
        def work(batch: list[DueDelivery]) -> int:
            return _send_batch(store, settings, http, owner, now, batch, on_outcome)

        if len(groups) == 1:
            return work(next(iter(groups.values())))
        with ThreadPoolExecutor(max_workers=min(WORKERS, len(groups)), thread_name_prefix="hubwatch-deliver") as pool:
            return sum(pool.map(work, groups.values()))
    finally:
        if own_client:
            http.close()


def _send_batch(
    store: Store, settings: Settings, http: httpx.Client, owner: str, now: datetime, batch: list[DueDelivery],
    on_outcome: Outcome | None,
) -> int:
    """One subscription's deliveries in order; ``STOP_AFTER`` failures in a row end the batch."""
    hooks = settings.webhooks
    delivered = failures = 0
    for i, d in enumerate(batch):
        if i >= PER_SUBSCRIPTION or failures >= STOP_AFTER:
            _release_rest(store, owner, batch[i:])
            break
        outcome_name, error, code = _attempt(http, d, allow_private=hooks.allow_private_destinations)
        if on_outcome is not None:
            on_outcome(outcome_name)
        if error is None:
            mark_delivered(store, d, owner, now=now, status_code=code)
            delivered += 1
            failures = 0
            continue
        failures += 1
        disabled = mark_failed(
            store, d, owner, now=now, error=error, status_code=code, retry_in=retry_delay(d.attempts + 1),
            max_attempts=hooks.max_attempts, disable_after=hooks.disable_after_failures,
        )
        log.warning("webhook subscription=%s id=%s attempt=%d failed: %s%s", d.subscription_id, d.webhook_id,
                    d.attempts + 1, error, " (subscription disabled)" if disabled else "")
        if disabled:
            _release_rest(store, owner, batch[i + 1:])
            break
    return delivered


def _attempt(http: httpx.Client, d: DueDelivery, *, allow_private: bool) -> tuple[str, str | None, int | None]:
    try:
        check_destination(d.url, allow_private=allow_private)
    except DestinationRefused as e:
        return "refused", f"destination refused: {e}", None
    result = post(http, d.url, secret=d.secret, msg_id=d.webhook_id, timestamp=int(time.time()),
                  body=encode_body(d.payload))
    if result.ok:
        return "delivered", None, result.status_code
    return "failed", result.error or "failed", result.status_code


def _release_rest(store: Store, owner: str, rest: list[DueDelivery]) -> None:
    for d in rest:
        release(store, d, owner)
