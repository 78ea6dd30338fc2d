"""``GET /metrics`` (Prometheus): the scheduler's counters plus gauges read from the store.

The daemon keeps its own counters (``tracker.daemon.DaemonStats``); this module renders a
snapshot of them at scrape time, so there is one source of truth and no global registry
(tests build many apps). The API layer does not import the daemon: it gets a callable
that returns the snapshot as a plain dict.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from storage import repairs, scheduling
from storage.store import Store

log = logging.getLogger("hubwatch.metrics")

StatsSource = Callable[[], Mapping[str, Any]]

#: What an inbound Hub webhook can come to (tracker.api.hooks): the counters that
#: :meth:`Metrics.share_across_processes` keeps in shared memory.
HOOK_OUTCOMES = ("disabled", "unauthorized", "forbidden", "ignored", "queued")

#: (snapshot key, metric name, help): plain counters of the daemon.
_COUNTERS = (
    ("requests", "hubwatch_hub_requests", "Requests sent to the Hub"),
    ("bytes", "hubwatch_hub_bytes", "Bytes of file content and headers read from the Hub"),
    ("new_revisions", "hubwatch_revisions_recorded", "Revisions recorded"),
    ("repaired", "hubwatch_revisions_repaired",
     "Revisions recorded with files unreadable for now, read again and amended"),
    ("cycles", "hubwatch_scheduler_cycles", "Scheduler cycles run"),
    ("firehose_reads", "hubwatch_firehose_reads", "Reads of the Hub's model listing (firehose mode)"),
    ("firehose_moved", "hubwatch_firehose_moved", "Tracked repos the firehose saw move"),
    ("firehose_confirmed", "hubwatch_firehose_confirmed", "Repo checks the firehose answered without a request"),
)
_GAUGES = (
    ("queue_lag_seconds", "hubwatch_queue_lag_seconds", "How late the latest due repo was picked up, last cycle"),
    ("last_cycle_seconds", "hubwatch_cycle_seconds", "Duration of the last scheduler cycle"),
    ("in_flight", "hubwatch_checks_in_flight", "Repos claimed by this daemon: checks running or queued"),
    ("budget_share", "hubwatch_request_budget", "Hub requests per 5 minutes this daemon may send"),
    ("budget_needed", "hubwatch_request_budget_needed",
     "Hub requests per 5 minutes the tracked repos need at the configured interval"),
    ("over_budget", "hubwatch_over_request_budget",
     "1 when the tracked repos do not fit the request budget at the configured interval"),
    ("effective_interval", "hubwatch_effective_interval_seconds",
     "The interval repos are checked at (stretched when over budget)"),
)


class Metrics(Collector):
    """Everything ``/metrics`` shows; ``stats`` is the daemon's snapshot (absent under ``serve``)."""

    def __init__(self, store: Store, stats: StatsSource | None = None):
        self.store = store
        self.stats = stats
        self.hooks: dict[str, int] = {}  # inbound Hub webhooks by outcome
        self._lock = threading.Lock()
        self._shared: Any = None  # HOOK_OUTCOMES' counts in memory every worker shares
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    def share_across_processes(self) -> None:
        """Called before ``serve --workers N`` forks: the webhook counters move to shared
        memory, so a scrape answered by any worker counts every worker's webhooks (each
        worker's own would make the counter jump between scrapes)."""
        import multiprocessing

        counts = multiprocessing.get_context("fork").Array("q", len(HOOK_OUTCOMES))
        with self._lock:
            for i, outcome in enumerate(HOOK_OUTCOMES):
                counts[i] = self.hooks.pop(outcome, 0)
            self._shared = counts

    def hook(self, outcome: str) -> None:
        shared = self._shared
        if shared is not None and outcome in HOOK_OUTCOMES:
            with shared.get_lock():
                shared[HOOK_OUTCOMES.index(outcome)] += 1
            return
        with self._lock:
            self.hooks[outcome] = self.hooks.get(outcome, 0) + 1

    def hook_counts(self) -> dict[str, int]:
        """Inbound webhooks by outcome, this process's and (when shared) every worker's."""
        with self._lock:
            counts = dict(self.hooks)
        shared = self._shared
        if shared is not None:
            with shared.get_lock():
                counts |= {o: n for o, n in zip(HOOK_OUTCOMES, shared[:], strict=True) if n}
        return counts

    def collect(self) -> Iterator[Metric]:
        snap = dict(self.stats()) if self.stats is not None else {}
        if snap:
            yield from _daemon_metrics(snap)
        hooks = CounterMetricFamily("hubwatch_hub_webhooks", "Hub webhooks received, by outcome", labels=["outcome"])
        for outcome, n in sorted(self.hook_counts().items()):
            hooks.add_metric([outcome], n)
        yield hooks
        yield from self._store_metrics()

    def _store_metrics(self) -> Iterator[Metric]:
        """Gauges read from the database; a scrape never fails because the database hiccups."""
        try:
            repos = len(self.store.list_repos())
            advisories = self.store.count_advisories()
            due = scheduling.count_due(self.store, datetime.now(UTC))
            repairs_by_status = repairs.count_by_status(self.store)
        except Exception as e:
            log.warning("metrics: database not readable: %s", type(e).__name__)
            yield GaugeMetricFamily("hubwatch_database_up", "1 when the database answered the scrape", value=0)
            return
        yield GaugeMetricFamily("hubwatch_database_up", "1 when the database answered the scrape", value=1)
        yield GaugeMetricFamily("hubwatch_repos_tracked", "Tracked repos", value=repos)
        yield GaugeMetricFamily("hubwatch_advisories", "Stored advisories", value=advisories)
        yield GaugeMetricFamily("hubwatch_repos_due", "Repos due for a check and not claimed yet", value=due)
        held = GaugeMetricFamily("hubwatch_revision_repairs", "Revisions recorded with files unreadable for now, "
                                 "by repair status (pending, repaired, given_up)", labels=["status"])
        for status in ("pending", "repaired", "given_up"):
            held.add_metric([status], repairs_by_status.get(status, 0))
        yield held

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


def _daemon_metrics(snap: Mapping[str, Any]) -> Iterator[Metric]:
    polls = CounterMetricFamily("hubwatch_polls", "Repo checks by outcome", labels=["status"])
    for status, n in sorted(snap.get("polls", {}).items()):
        polls.add_metric([status], n)
    yield polls
    errors = CounterMetricFamily("hubwatch_poll_errors", "Failed repo checks by error kind", labels=["kind"])
    for kind, n in sorted(snap.get("errors", {}).items()):
        errors.add_metric([kind], n)
    yield errors
    deliveries = CounterMetricFamily("hubwatch_webhook_deliveries", "Outbound webhook attempts by outcome",
                                     labels=["outcome"])
    for outcome, n in sorted(snap.get("deliveries", {}).items()):
        deliveries.add_metric([outcome], n)
    yield deliveries
    for key, name, doc in _COUNTERS:
        yield CounterMetricFamily(name, doc, value=float(snap.get(key) or 0))
    for key, name, doc in _GAUGES:
        yield GaugeMetricFamily(name, doc, value=float(snap.get(key) or 0))
    paused = snap.get("paused_until")
    yield GaugeMetricFamily("hubwatch_rate_limited_until_seconds",
                            "Unix time until which the Hub asked us to pause (0: never)",
                            value=paused.timestamp() if isinstance(paused, datetime) else 0)
    last = snap.get("last_cycle_at")
    yield GaugeMetricFamily("hubwatch_last_cycle_timestamp_seconds", "Unix time of the last scheduler cycle",
                            value=last.timestamp() if isinstance(last, datetime) else 0)
