"""Layer 3 (daemon): the scheduler. APScheduler drives ``Daemon.run_once(now)``; state lives in the DB.

A cycle: share the request budget among the busy daemons and stretch the interval when the
tracked set does not fit it; in firehose mode read the model listing first; then claim due
repos (leases, ``FOR UPDATE SKIP LOCKED`` on PostgreSQL) and check them, ``concurrency`` at
a time, until none is due, the budget is spent, the Hub said 429, or the daemon stops. Each
outcome is written with the lease's release in one statement (unchanged repos many to a
transaction); errors back off per repo.
"""

from __future__ import annotations

import functools
import logging
import os
import queue
import random
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.exc import DBAPIError

from storage import scheduling
from storage.records import RepoRecord
from storage.store import Store
from storage.write_retry import describe
from tracker import heap
from tracker.daemon.budget import CheckCancelled, RequestBudget, budget_fit
from tracker.daemon.coverage import FirehoseCoverage, covered_count
from tracker.daemon.metered import MeteredSource
from tracker.daemon.stats import DaemonStats
from tracker.errors import RateLimited, SourceError
from tracker.hub.firehose import Firehose
from tracker.pipeline import CheckResult, PipelineOptions, check_repo
from tracker.pipeline.sources import SourceFactory

log = logging.getLogger("hubwatch.daemon")

#: Unchanged repos written per transaction: an unchanged check costs its one request and a
#: share of one write, not a commit of its own (issue 17).
UNCHANGED_BATCH = 64

#: Repos claimed per running check: the claim is a database round trip, a batch of them costs
#: about one; their leases are renewed while they wait in the pool's queue (issue 17).
CLAIM_AHEAD = 4

#: Errors that will not go away by themselves: these back off to ``max_backoff_seconds``.
PERMANENT_KINDS = frozenset({"not_found", "gated", "revision_not_found", "invalid"})

CheckFn = Callable[..., CheckResult]

#: After a lease's expiry, how long before claiming it: the clocks of two daemons on one
#: machine agree; across machines NTP keeps them closer than this.
TAKEOVER_SLACK = 0.05


@dataclass(frozen=True)
class DaemonConfig:
    interval_seconds: int = 900
    jitter_seconds: int = 60
    concurrency: int = 8
    lease_seconds: int = 120
    requests_per_5min: int = 1000
    max_backoff_seconds: int = 21600
    firehose: bool = False
    tick_seconds: float = 5.0  # how often APScheduler looks for due repos
    shutdown_grace_seconds: float = 15.0  # running checks may finish this long after SIGTERM


class Daemon:
    """One scheduler instance; several may share a PostgreSQL database."""

    def __init__(
        self, store: Store, sources: SourceFactory, options: PipelineOptions, config: DaemonConfig,
        *, owner: str | None = None, clock: Callable[[], datetime] | None = None,
        rng: random.Random | None = None, firehose: Firehose | None = None,
        deliver: Callable[[], None] | None = None, check: CheckFn = check_repo,
    ):
        self.store, self.sources, self.options, self.config = store, sources, options, config
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{random.getrandbits(32):08x}"
        self.clock = clock or (lambda: datetime.now(UTC))
        self.rng = rng or random.Random()
        self.firehose = firehose
        self.deliver, self.check = deliver, check
        self.budget = RequestBudget(config.requests_per_5min)
        self.stats = DaemonStats(budget_share=config.requests_per_5min,
                                 effective_interval=config.interval_seconds)
        self.stopping = threading.Event()  # no new claims
        self.cancel = threading.Event()  # running checks stop at their next request
        self._inflight: set[str] = set()  # claimed by this daemon: running or queued
        self._unchanged: list[scheduling.Unchanged] = []  # checked, unchanged, not written yet
        self._lost: set[str] = set()
        self._state = threading.Lock()
        self._cycle_lock = threading.Lock()
        self._scheduler: Any = None
        self._paused_until: datetime | None = None
        self.coverage = FirehoseCoverage(firehose) if firehose is not None else None
        self._firehose_next: datetime | None = None
        self._cycle_clock: Callable[[], datetime] = self.clock  # the running cycle's clock

    # ------------------------------------------------------------------ one cycle
    def run_once(self, now: datetime | None = None) -> list[CheckResult]:
        """Firehose (when on), then claim and check due repos, ``concurrency`` at a time, until
        none is due, the budget is spent or the daemon stops. ``now`` fixes the clock."""
        if not self._cycle_lock.acquire(blocking=False):
            return []  # the previous cycle is still running
        started = time.monotonic()
        base = now or self.clock()
        at: Callable[[], datetime] = (lambda: base + timedelta(seconds=time.monotonic() - started)) if now else self.clock
        self._cycle_clock = at
        try:
            self._plan_budget(base)
            if self.firehose is not None and not self.stopping.is_set():
                self._firehose_pass(base)
            results = self._drain(at)
        except Exception:  # the database went away, most likely: /readyz says so; retry next tick
            log.exception("scheduler cycle failed")
            self.stats.add("errors", 1, "cycle")
            results = []
        finally:
            self._cycle_lock.release()
        self.stats.add("cycles")
        self.stats.set(last_cycle_at=base, last_cycle_seconds=time.monotonic() - started)
        if results:
            heap.settle("daemon")  # once: the first cycle that checked a repo has made the imports it makes
            changed = sum(r.new_revisions for r in results)
            errors = sum(r.status == "error" for r in results)
            log.info("cycle: %d checked, %d new revisions, %d errors, %.1fs", len(results), changed, errors,
                     time.monotonic() - started)
        return results

    def _drain(self, at: Callable[[], datetime]) -> list[CheckResult]:
        """Keep ``concurrency`` checks running and up to ``CLAIM_AHEAD`` times as many claimed in the
        pool's queue: claims come in batches (few round trips, the next repo ready when a check
        ends), and this thread wakes once per finished check, not once per running one."""
        results: list[CheckResult] = []
        lags: list[float] = []
        seen: set[str] = set()
        running: set[Future[CheckResult]] = set()
        finished: queue.SimpleQueue[Future[CheckResult]] = queue.SimpleQueue()
        n = self.config.concurrency
        with ThreadPoolExecutor(n, thread_name_prefix="hubwatch-check") as pool:
            while True:
                batch: list[RepoRecord] = []
                tried = len(running) <= n and not self.stopping.is_set()
                if tried:
                    now = at()
                    batch = self._claim(now, CLAIM_AHEAD * n - len(running))
                    again = [r for r in batch if r.id in seen]
                    if again:  # due again within this cycle (a tiny interval): leave it to the next one
                        for r in again:
                            self._unclaim(r.id)
                        batch = [r for r in batch if r.id not in seen]
                    seen.update(r.id for r in batch)
                    lags += [(now - r.next_check_at).total_seconds() for r in batch if r.next_check_at]
                    for r in batch:
                        future = pool.submit(self._check_one, r, at)
                        future.add_done_callback(finished.put)
                        running.add(future)
                if not running:
                    break
                if not batch or len(running) > n:
                    # at most a tick: long checks must not stop this daemon from claiming, or an
                    # expired lease of a crashed daemon waits for them (issue 10: takeover within
                    # lease_seconds plus one claim interval; issue 16, point 7: a slow repo never
                    # holds back the others); sooner when a dead daemon's lease runs out first. Only
                    # looked up when a claim found nothing: with checks queued, none is claimed anyway
                    pause = self._until_takeover(at()) if tried and not batch else self.config.tick_seconds
                    done = _finished(finished, timeout=pause)
                    running.difference_update(done)
                    results += [f.result() for f in done]
        self._flush_unchanged(at())
        self.stats.queue_lag_seconds = max(lags, default=0.0)
        self._wake_for_takeover(at())
        return results

    def _until_takeover(self, now: datetime) -> float:
        """Seconds until the next claim: a tick, or less when another daemon's lease on a due repo
        runs out sooner (a dead daemon's: a live one renews its leases long before)."""
        try:
            at = scheduling.next_takeover(self.store, self.owner, now=now)
        except DBAPIError:
            return self.config.tick_seconds
        if at is None:
            return self.config.tick_seconds
        return min(self.config.tick_seconds, max(0.0, (at - now).total_seconds()) + TAKEOVER_SLACK)

    def _wake_for_takeover(self, now: datetime) -> None:
        """Between cycles, claim again the moment a dead daemon's lease runs out, not at the next
        tick: takeover within ``lease_seconds`` and a claim's round trip (issue 10)."""
        sched = self._scheduler
        if sched is None or self.stopping.is_set():
            return
        pause = self._until_takeover(now)
        if pause >= self.config.tick_seconds:
            return
        sched.add_job(self.run_once, "date", run_date=datetime.now(UTC) + timedelta(seconds=pause),
                      id="hubwatch-takeover", replace_existing=True, misfire_grace_time=None)

    def _paused(self, now: datetime) -> bool:
        return self._paused_until is not None and now < self._paused_until

    def _claim(self, now: datetime, free: int) -> list[RepoRecord]:
        if self._paused(now):
            return []
        room = self.budget.room()
        if room <= 0:
            return []
        repos = self.store.claim_due(self.owner, now=now, limit=min(free, room),
                                     lease_seconds=self.config.lease_seconds)
        self.budget.spend(sum(r.source_kind == "hub" for r in repos))  # each one's head check
        with self._state:
            self._inflight.update(r.id for r in repos)
            self._lost.difference_update(r.id for r in repos)
            self.stats.in_flight = len(self._inflight)
        return repos

    def _forget(self, repo_id: str) -> None:
        with self._state:
            self._inflight.discard(repo_id)
            self.stats.in_flight = len(self._inflight)

    def _unclaim(self, repo_id: str) -> None:
        self._forget(repo_id)
        try:
            self.store.release(repo_id, self.owner)
        except DBAPIError as e:  # the lease runs out by itself
            log.error("could not release %s: %s", repo_id, type(e.orig).__name__)

    def _check_one(self, repo: RepoRecord, at: Callable[[], datetime]) -> CheckResult:
        """Check one claimed repo and record the outcome; the lease is released either way."""
        result = CheckResult(repo.id, "cancelled")
        try:
            if self.stopping.is_set() or self._paused(at()):  # claimed and queued, not started yet:
                raise CheckCancelled("stopping or rate limited")  # leave it due for the next claim
            result = self._run_check(repo)
            if result.repaired:
                self.stats.add("repaired", result.repaired)
            if result.status == "unchanged" and repo.next_check_at is not None:
                self._defer_unchanged(repo, at())  # written with others, in one transaction
            else:
                self._record(repo, result, at())  # releases the lease
                self._forget(repo.id)
        except CheckCancelled:
            self._unclaim(repo.id)  # still due: the next claim, ours or another daemon's, takes it
        except DBAPIError as e:  # the outcome could not be written: the lease runs out, it is checked again
            log.error("could not record the check of %s: database %s", repo.id, describe(e))
            self._forget(repo.id)
            self.stats.add("errors", 1, "database")
            result = CheckResult(repo.id, "error", error=f"database: {type(e.orig).__name__}", error_kind="database")
        self.stats.add("polls", 1, result.status)
        return result

    def _run_check(self, repo: RepoRecord) -> CheckResult:
        try:
            src = self.sources.open(repo.id, repo.source, repo.source_kind, added_by=repo.added_by)
        except SourceError as e:
            return CheckResult(repo.id, "error", error=str(e), error_kind=e.kind)
        except ValueError as e:  # an invalid repo id or location: nothing to retry soon
            return CheckResult(repo.id, "error", error=f"cannot open {repo.source}: {e}", error_kind="invalid")
        metered = MeteredSource(src, self, repo.id, metered=repo.source_kind == "hub")
        try:
            return self._check(repo, metered)
        except SourceError as e:
            return CheckResult(repo.id, "error", error=str(e), error_kind=e.kind,
                               retry_after=e.retry_after if isinstance(e, RateLimited) else None)
        except CheckCancelled:
            raise
        except Exception as e:  # the daemon's one catch-all per repo: record it, go on
            log.exception("check of %s failed", repo.id)
            return CheckResult(repo.id, "error", error=f"{type(e).__name__}: {e}", error_kind="internal")
        finally:
            src.close()

    def _check(self, repo: RepoRecord, source: MeteredSource) -> CheckResult:
        """check_repo once. Its writes already try again with the analysis in hand when they lose
        a race or find the database away (``storage.write_retry``); a database error that outlasts
        that is this check's outcome, recorded as what it is, and the Hub is not asked again until
        the repo's backoff has passed (issue 10)."""
        try:
            return self.check(self.store, source, repo, self.options,
                              progress=lambda _i, _n, _sha: self.raise_if_cancelled(repo.id))
        except DBAPIError as e:
            what = describe(e)
            log.error("database error while checking %s: %s", repo.id, what)
            return CheckResult(repo.id, "error", error=f"database {what}", error_kind="database")

    def raise_if_cancelled(self, repo_id: str) -> None:
        """Called before every Hub request of a running check: stopping, a lost lease, or a 429
        that paused this daemon (issue 10) end it there; what it recorded so far stays."""
        if self.cancel.is_set():
            raise CheckCancelled("the daemon is stopping")
        if self._paused(self._cycle_clock()):
            raise CheckCancelled("rate limited by the Hub: paused")
        if repo_id in self._lost:
            raise CheckCancelled(f"lease on {repo_id} lost")

    def _record(self, repo: RepoRecord, result: CheckResult, done: datetime) -> None:
        """The outcome on the repo's row, its next check, and the lease released: one write."""
        self.stats.add("new_revisions", result.new_revisions)
        finish = functools.partial(scheduling.finish_poll, self.store, repo.id, self.owner, now=done,
                                   claimed_next=repo.next_check_at)
        if result.status == "error":
            kind = result.error_kind or "unknown"
            self.stats.add("errors", 1, kind)
            delay = self.backoff_seconds(repo.failures + 1, result.retry_after, kind)
            if result.retry_after is not None:
                self._pause(done + timedelta(seconds=min(result.retry_after, self.config.max_backoff_seconds)))
            log.warning("poll repo=%s status=error kind=%s next_in=%ds error=%s", repo.id, kind, delay, result.error)
            finish(next_check_at=done + timedelta(seconds=delay), error=result.error or kind, error_kind=kind)
            return
        if result.new_revisions:
            log.info("poll repo=%s status=%s new_revisions=%d head=%s", repo.id, result.status,
                     result.new_revisions, (result.head or "")[:12])
        finish(next_check_at=self.next_check(done), changed=result.new_revisions > 0)

    def _defer_unchanged(self, repo: RepoRecord, done: datetime) -> None:
        assert repo.next_check_at is not None
        with self._state:
            self._unchanged.append(scheduling.Unchanged(repo.id, repo.next_check_at, self.next_check(done)))
            full = len(self._unchanged) >= UNCHANGED_BATCH
        if full:
            self._flush_unchanged(done)

    def _flush_unchanged(self, now: datetime) -> None:
        """Write the deferred unchanged outcomes (and release their leases) in one transaction."""
        with self._state:
            done, self._unchanged = self._unchanged, []
        if not done:
            return
        try:
            scheduling.finish_unchanged(self.store, self.owner, done, now=now)
        except DBAPIError as e:  # the leases run out by themselves: checked again, no harm
            log.error("could not record %d unchanged checks: %s", len(done), type(e.orig).__name__)
            self.stats.add("errors", 1, "database")
        for u in done:
            self._forget(u.repo_id)

    def rate_limited(self, retry_after: float | None) -> None:
        """The Hub answered 429 to one of this daemon's requests: pause it now (see ``_record``)."""
        if retry_after is not None:
            self._pause(self._cycle_clock() + timedelta(seconds=min(retry_after, self.config.max_backoff_seconds)))

    def _pause(self, until: datetime) -> None:
        with self._state:
            if self._paused_until is None or until > self._paused_until:
                self._paused_until = until
                self.stats.paused_until = until
                log.warning("rate limited by the Hub: no new checks until %s", until.isoformat())

    # ------------------------------------------------------------------ policy
    def next_check(self, now: datetime) -> datetime:
        """The next regular check: the interval (stretched to fit the budget) plus jitter, the
        jitter at most half the interval (a 5 s interval with the default 60 s jitter stays ~5 s)."""
        spread = min(float(self.config.jitter_seconds), self.config.interval_seconds / 2)
        jitter = self.rng.uniform(0, spread) if spread > 0 else 0.0
        return now + timedelta(seconds=self.stats.effective_interval + jitter)

    def backoff_seconds(self, failures: int, retry_after: float | None, kind: str = "unavailable") -> float:
        """Exponential from one minute. Transient errors retry at least every interval; a repo
        that is gone, gated or invalid backs off to ``max_backoff_seconds``. Retry-After is a floor."""
        cap = float(self.config.max_backoff_seconds)
        if kind not in PERMANENT_KINDS:
            cap = min(cap, max(float(self.config.interval_seconds), 60.0))
        delay: float = min(cap, 60.0 * 2.0 ** min(max(0, failures - 1), 20))
        delay *= 1 + self.rng.uniform(0, 0.1)  # several daemons must not retry in step
        if retry_after is not None:
            delay = max(delay, min(float(retry_after), float(self.config.max_backoff_seconds)))
        return delay

    def _plan_budget(self, now: datetime) -> None:
        """Share the budget among the busy daemons; stretch the interval when the set does not fit."""
        daemons = len(scheduling.lease_holders(self.store, now) | {self.owner})
        share = max(1, self.config.requests_per_5min // daemons)
        self.budget.per_window = share
        polled = scheduling.count_hub_repos(self.store)
        if self.coverage is not None:  # covered repos cost nothing each; the listing one request
            polled = max(0, polled - covered_count(self.store)) + 1
        fit = budget_fit(polled, self.config.interval_seconds, self.config.requests_per_5min)
        if fit.over and not self.stats.over_budget:
            log.warning("over budget: %d repos need %.0f requests per 5 min at interval %ss; budget is %d: "
                        "each repo is checked every %ds instead", polled, fit.needed, self.config.interval_seconds,
                        self.config.requests_per_5min, fit.interval)
        elif self.stats.over_budget and not fit.over:
            log.info("back within budget: %.0f of %d requests per 5 min", fit.needed, self.config.requests_per_5min)
        self.stats.set(budget_share=share, budget_needed=fit.needed, over_budget=fit.over,
                       effective_interval=fit.interval)

    # ------------------------------------------------------------------ firehose
    def _firehose_pass(self, now: datetime) -> None:
        """Once an interval: one listing read stands in for a head check of every covered repo."""
        assert self.coverage is not None
        if self._firehose_next is not None and now < self._firehose_next:
            return
        if self._paused(now) or self.budget.room() <= 0:
            return
        self._firehose_next = now + timedelta(seconds=self.config.interval_seconds)
        # confirmed repos wait two intervals: one failed read does not make them all due
        later = now + timedelta(seconds=2 * self.config.interval_seconds)
        try:
            read = self.coverage.read(self.store, now, confirm_until=later)
        except SourceError as e:
            self.stats.add("errors", 1, f"firehose_{e.kind}")
            if isinstance(e, RateLimited) and e.retry_after:
                self._pause(now + timedelta(seconds=min(e.retry_after, self.config.max_backoff_seconds)))
            log.warning("firehose read failed: %s", e)
            return
        self.budget.spend(read.requests)
        for name, n in (("requests", read.requests), ("bytes", read.bytes), ("firehose_reads", 1),
                        ("firehose_moved", len(read.moved)), ("firehose_confirmed", read.confirmed)):
            self.stats.add(name, n)
        log.info("firehose: %d request(s), %d listed, %d moved, %d confirmed unchanged%s", read.requests,
                 read.listed, len(read.moved), read.confirmed, "" if read.complete else " (watermark not reached)")

    # ------------------------------------------------------------------ lifecycle
    def renew_leases(self) -> None:
        """Extend the leases of running checks; a lease another daemon took stops its check."""
        with self._state:
            running = list(self._inflight)
        now = self.clock()
        for repo_id in running:
            try:
                if not self.store.renew_lease(repo_id, self.owner, now=now, lease_seconds=self.config.lease_seconds):
                    log.warning("lease on %s lost; stopping its check", repo_id)
                    self._lost.add(repo_id)
            except Exception as e:
                log.warning("lease renewal for %s failed: %s", repo_id, e)

    def deliver_once(self) -> None:
        """One webhook delivery pass: the delivery worker's job, never part of a polling cycle,
        so a slow receiver cannot delay a poll (issue 10)."""
        if self.deliver is None or self.stopping.is_set():
            return
        try:
            self.deliver()
        except Exception:  # the database went away, most likely; the next tick tries again
            log.exception("webhook delivery pass failed")
            self.stats.add("errors", 1, "delivery")

    def start(self) -> Any:
        """Start APScheduler: a cycle every tick, lease renewal every third of a lease, and the
        webhook delivery worker every tick, in a thread of its own."""
        from apscheduler.schedulers.background import BackgroundScheduler

        sched = BackgroundScheduler(timezone="UTC")
        sched.add_job(self.run_once, "interval", seconds=self.config.tick_seconds, id="hubwatch-cycle",
                      max_instances=1, coalesce=True, next_run_time=datetime.now(UTC))
        sched.add_job(self.renew_leases, "interval", seconds=max(1.0, self.config.lease_seconds / 3),
                      id="hubwatch-leases", max_instances=1, coalesce=True)
        if self.deliver is not None:
            sched.add_job(self.deliver_once, "interval", seconds=self.config.tick_seconds, id="hubwatch-deliver",
                          max_instances=1, coalesce=True, next_run_time=datetime.now(UTC))
        sched.start()
        self._scheduler = sched
        return sched

    def stop(self, grace_seconds: float | None = None) -> int:
        """Stop claiming; let running checks finish for the grace period, then cancel them at their
        next request; release every lease still held. Returns how many leases were released."""
        self.stopping.set()
        grace = self.config.shutdown_grace_seconds if grace_seconds is None else grace_seconds
        deadline = time.monotonic() + grace
        while self._inflight and time.monotonic() < deadline:
            time.sleep(0.05)
        self.cancel.set()
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=True)  # waits for the cycle, which waits for its checks
        else:
            with self._cycle_lock:
                pass
        if self.firehose is not None:
            self.firehose.close()
        self.sources.close()  # the shared Hub connections
        try:
            released = scheduling.release_all(self.store, self.owner)
        except DBAPIError as e:  # the leases run out by themselves
            log.error("could not release this daemon's leases: %s", type(e.orig).__name__)
            return 0
        log.info("daemon stopped; %d lease(s) released", released)
        return released

    def alive(self) -> bool:
        sched = self._scheduler
        return bool(sched is not None and sched.running and not self.stopping.is_set())


def _finished(done: queue.SimpleQueue[Future[CheckResult]], *, timeout: float) -> list[Future[CheckResult]]:
    """The checks that finished: at least one (waiting up to ``timeout``), else none."""
    try:
        out = [done.get(timeout=timeout)]
    except queue.Empty:
        return []
    while True:
        try:
            out.append(done.get_nowait())
        except queue.Empty:
            return out
