"""Layer 3: when to check what. APScheduler drives ``Daemon.run_once(now)``; state lives in the DB.

Due repos are claimed from the database with leases (``FOR UPDATE SKIP LOCKED`` on
PostgreSQL) and renewed while a check runs, so several daemons share one database without
doing anything twice and a killed daemon's repos return to the pool when its leases expire.
Errors back off per repo; a 429 pauses the whole daemon for its Retry-After (the Hub limits
the client, not the repo); every Hub request takes a token from a sliding 5-minute budget
shared by the daemons holding leases, and next checks are spread so the tracked set fits it.
In firehose mode one listing read confirms every tracked repo that did not move.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import random
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Collection
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.exc import DBAPIError

from storage import scheduling
from storage.records import RepoRecord
from storage.store import Store
from tracker.errors import RateLimited, SourceError
from tracker.hub.firehose import Firehose
from tracker.hub.interface import CommitListing, HubSource
from tracker.model import FileEntry
from tracker.pipeline import CheckResult, PipelineOptions, check_repo
from tracker.pipeline.sources import SourceFactory

log = logging.getLogger("hubwatch.daemon")

BUDGET_WINDOW = 300.0  # seconds: the Hub's rate-limit window
PERMANENT_KINDS = frozenset({"not_found", "gated", "revision_not_found", "invalid"})

CheckFn = Callable[..., CheckResult]


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


class CheckCancelled(Exception):
    """Raised inside a check when the daemon stops or lost the repo's lease: nothing half-done
    is recorded (each revision is one transaction), the lease is released."""


class RequestBudget:
    """A sliding 5-minute window of Hub requests. ``acquire`` waits for room, so the window
    never holds more than ``per_window`` (a fixed-window limit of that size is then kept)."""

    def __init__(self, per_window: int, clock: Callable[[], float] = time.monotonic):
        self.per_window = per_window
        self.clock = clock
        self.sent: deque[float] = deque()
        self.cond = threading.Condition()

    def _trim(self) -> None:
        cutoff = self.clock() - BUDGET_WINDOW
        while self.sent and self.sent[0] <= cutoff:
            self.sent.popleft()

    def room(self) -> int:
        with self.cond:
            self._trim()
            return max(0, self.per_window - len(self.sent))

    def spend(self, n: int = 1) -> None:
        with self.cond:
            self.sent.extend([self.clock()] * n)

    def acquire(self, cancel: threading.Event) -> None:
        """Take one request token, waiting for the oldest to leave the window when none is left."""
        while True:
            with self.cond:
                self._trim()
                if len(self.sent) < self.per_window:
                    self.sent.append(self.clock())
                    return
                wait = self.sent[0] + BUDGET_WINDOW - self.clock()
            if cancel.wait(min(max(wait, 0.01), 1.0)):
                raise CheckCancelled("stopping while waiting for request budget")


@dataclass
class DaemonStats:
    """Counters and gauges of one daemon: /metrics renders ``snapshot()``."""

    polls: dict[str, int] = field(default_factory=dict)  # by status
    errors: dict[str, int] = field(default_factory=dict)  # by kind
    requests: int = 0
    bytes: int = 0
    new_revisions: int = 0
    cycles: int = 0
    last_cycle_at: datetime | None = None
    last_cycle_seconds: float = 0.0
    queue_lag_seconds: float = 0.0
    in_flight: int = 0
    budget_share: float = 0.0  # requests per 5 min this daemon may send
    budget_needed: float = 0.0  # requests per 5 min the tracked set needs at its interval
    over_budget: bool = False
    effective_interval: float = 0.0
    paused_until: datetime | None = None
    firehose_reads: int = 0
    firehose_moved: int = 0
    firehose_confirmed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, name: str, n: float = 1, key: str | None = None) -> None:
        with self.lock:
            if key is None:
                setattr(self, name, getattr(self, name) + n)
            else:
                d = getattr(self, name)
                d[key] = d.get(key, 0) + int(n)

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "lock"}
            out["polls"], out["errors"] = dict(self.polls), dict(self.errors)
        return out


class MeteredSource:
    """A HubSource that takes a budget token per request, counts requests and bytes, and stops
    the check (CheckCancelled) when the daemon stops or lost the lease."""

    def __init__(self, inner: HubSource, daemon: Daemon, repo_id: str, metered: bool):
        self.inner, self.daemon, self.repo_id_, self.metered = inner, daemon, repo_id, metered
        self.prepaid = 1 if metered else 0  # the claim took the token of the head check

    def _call(self) -> None:
        self.daemon.raise_if_cancelled(self.repo_id_)
        if self.metered:
            if self.prepaid:
                self.prepaid -= 1
            else:
                self.daemon.budget.acquire(self.daemon.cancel)
            self.daemon.stats.add("requests")

    def _got(self, data: bytes) -> bytes:
        self.daemon.stats.add("bytes", len(data))
        return data

    @property
    def repo_id(self) -> str:
        return self.inner.repo_id

    @property
    def web_url(self) -> str:
        return self.inner.web_url

    def resolve_head(self, branch: str) -> str:
        self._call()
        return self.inner.resolve_head(branch)

    def list_commits(self, branch: str, *, stop_at: Collection[str] = ()) -> CommitListing:
        self._call()
        listing = self.inner.list_commits(branch, stop_at=stop_at)
        if self.metered and len(listing.commits) > 50:  # the Hub pages commits by 50
            self.daemon.budget.spend(len(listing.commits) // 50)
            self.daemon.stats.add("requests", len(listing.commits) // 50)
        return listing

    def list_files(self, revision: str) -> tuple[FileEntry, ...]:
        self._call()
        return self.inner.list_files(revision)

    def read_file(self, revision: str, path: str, *, max_bytes: int) -> bytes:
        self._call()
        return self._got(self.inner.read_file(revision, path, max_bytes=max_bytes))

    def read_range(self, revision: str, path: str, start: int, length: int) -> bytes:
        self._call()
        return self._got(self.inner.read_range(revision, path, start, length))

    def close(self) -> None:
        self.inner.close()


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
        self._inflight: dict[str, datetime] = {}
        self._lost: set[str] = set()
        self._state = threading.Lock()
        self._cycle_lock = threading.Lock()
        self._scheduler: Any = None
        self._paused_until: datetime | None = None
        self._watermark: datetime | None = None  # firehose: newest lastModified read
        self._chain_start: datetime | None = None  # firehose: reads continuous since then
        self._firehose_next: datetime | None = None

    # ------------------------------------------------------------------ one cycle
    def run_once(self, now: datetime | None = None) -> list[CheckResult]:
        """Firehose (when on), then claim and check due repos, ``concurrency`` at a time, until
        none is due, the budget is spent or the daemon stops. ``now`` fixes the clock."""
        if not self._cycle_lock.acquire(blocking=False):
            return []  # the previous cycle is still running
        started = time.monotonic()
        base = now or self.clock()
        at: Callable[[], datetime] = (lambda: base + timedelta(seconds=time.monotonic() - started)) if now else self.clock
        try:
            self._plan_budget(base)
            if self.firehose is not None and not self.stopping.is_set():
                self._firehose_pass(base)
            results = self._drain(at)
            if self.deliver is not None and not self.stopping.is_set():
                self.deliver()
        except Exception:  # the database went away, most likely: /readyz says so; retry next tick
            log.exception("scheduler cycle failed")
            self.stats.add("errors", 1, "cycle")
            results = []
        finally:
            self._cycle_lock.release()
        with self.stats.lock:
            self.stats.cycles += 1
            self.stats.last_cycle_at = base
            self.stats.last_cycle_seconds = time.monotonic() - started
        if results:
            changed = sum(r.new_revisions for r in results)
            errors = sum(r.status == "error" for r in results)
            log.info("cycle: %d checked, %d new revisions, %d errors, %.1fs", len(results), changed, errors,
                     time.monotonic() - started)
        return results

    def _drain(self, at: Callable[[], datetime]) -> list[CheckResult]:
        """Keep ``concurrency`` checks running and as many claimed in the pool's queue (claims come
        in batches: fewer round trips, and the next repo is ready when a check ends)."""
        results: list[CheckResult] = []
        lags: list[float] = []
        seen: set[str] = set()
        running: set[Future[CheckResult]] = set()
        claiming = True
        n = self.config.concurrency
        with ThreadPoolExecutor(n, thread_name_prefix="hubwatch-check") as pool:
            while True:
                batch: list[RepoRecord] = []
                if claiming and len(running) <= n and not self.stopping.is_set():
                    now = at()
                    batch = self._claim(now, 2 * n - len(running))
                    again = [r for r in batch if r.id in seen]
                    if again:  # due again within this cycle (a tiny interval): leave it to the next one
                        claiming = False
                        for r in again:
                            self._unclaim(r.id)
                        batch = [r for r in batch if r.id not in seen]
                    seen.update(r.id for r in batch)
                    lags += [(now - r.next_check_at).total_seconds() for r in batch if r.next_check_at]
                    running |= {pool.submit(self._check_one, r, at) for r in batch}
                if not running:
                    break
                if not batch or len(running) > n:
                    done, running = wait(running, return_when=FIRST_COMPLETED)
                    results += [f.result() for f in done]
        self.stats.queue_lag_seconds = max(lags, default=0.0)
        return results

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
            for r in repos:
                self._inflight[r.id] = now
                self._lost.discard(r.id)
            self.stats.in_flight = len(self._inflight)
        return repos

    def _forget(self, repo_id: str) -> None:
        with self._state:
            self._inflight.pop(repo_id, None)
            self.stats.in_flight = len(self._inflight)

    def _unclaim(self, repo_id: str) -> None:
        self._forget(repo_id)
        self.store.release(repo_id, self.owner)

    def _check_one(self, repo: RepoRecord, at: Callable[[], datetime]) -> CheckResult:
        result = CheckResult(repo.id, "cancelled")
        finished = False
        try:
            if self.stopping.is_set() or self._paused(at()):  # claimed and queued, not started yet:
                raise CheckCancelled("stopping or rate limited")  # leave it due for the next claim
            result = self._run_check(repo)
            self._record(repo, result, at())  # releases the lease
            finished = True
        except CheckCancelled:
            pass  # still due: the next claim, ours or another daemon's, takes it
        finally:
            if finished:
                self._forget(repo.id)
            else:
                self._unclaim(repo.id)
        self.stats.add("polls", 1, result.status)
        return result

    def _run_check(self, repo: RepoRecord) -> CheckResult:
        try:
            src = self.sources.open(repo.id, repo.source, repo.source_kind)
        except SourceError as e:
            return CheckResult(repo.id, "error", error=str(e), error_kind=e.kind)
        except ValueError as e:  # an invalid repo id or location: nothing to retry soon
            return CheckResult(repo.id, "error", error=f"cannot open {repo.source}: {e}", error_kind="invalid")
        metered = MeteredSource(src, self, repo.id, metered=repo.source_kind == "hub")
        try:
            for attempt in range(3):
                try:
                    return self.check(self.store, metered, repo, self.options,
                                      progress=lambda _i, _n, _sha: self.raise_if_cancelled(repo.id))
                except DBAPIError as e:  # lost a write race (a blob or revision another check wrote)
                    if attempt == 2:
                        raise
                    log.info("database conflict while checking %s (%s); checking again", repo.id,
                             type(e.orig).__name__)
            raise AssertionError("unreachable")
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

    def raise_if_cancelled(self, repo_id: str) -> None:
        if self.cancel.is_set():
            raise CheckCancelled("the daemon is stopping")
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

    def _pause(self, until: datetime) -> None:
        with self._state:
            if self._paused_until is None or until > self._paused_until:
                self._paused_until = until
                self.stats.paused_until = until
                log.warning("rate limited by the Hub: no new checks until %s", until.isoformat())

    # ------------------------------------------------------------------ policy
    def next_check(self, now: datetime) -> datetime:
        """The next regular check: the interval (stretched to fit the budget) plus jitter."""
        jitter = self.rng.uniform(0, self.config.jitter_seconds) if self.config.jitter_seconds else 0.0
        return now + timedelta(seconds=self.stats.effective_interval + jitter)

    def backoff_seconds(self, failures: int, retry_after: float | None, kind: str = "unavailable") -> float:
        """Exponential from one minute. Transient errors retry at least every interval; a repo
        that is gone, gated or invalid backs off to ``max_backoff_seconds``. Retry-After is a floor."""
        cap = float(self.config.max_backoff_seconds)
        if kind not in PERMANENT_KINDS:
            cap = min(cap, max(float(self.config.interval_seconds), 60.0))
        delay = min(cap, 60.0 * 2 ** min(max(0, failures - 1), 20))
        delay *= 1 + self.rng.uniform(0, 0.1)  # several daemons must not retry in step
        if retry_after is not None:
            delay = max(delay, min(float(retry_after), float(self.config.max_backoff_seconds)))
        return delay

    def _plan_budget(self, now: datetime) -> None:
        """Share the budget among the busy daemons; stretch the interval when the set does not fit."""
        daemons = len(scheduling.lease_holders(self.store, now) | {self.owner})
        share = max(1, self.config.requests_per_5min // daemons)
        self.budget.per_window = share
        hub = scheduling.count_hub_repos(self.store)
        polled = hub if self.firehose is None else max(0, hub - len(scheduling.firehose_repos(self.store))) + 1
        needed = polled * BUDGET_WINDOW / self.config.interval_seconds
        total = self.config.requests_per_5min
        over = needed > total
        effective = float(self.config.interval_seconds)
        if over:
            effective = math.ceil(polled * BUDGET_WINDOW / (0.9 * total))
        if over and not self.stats.over_budget:
            log.warning("over budget: %d repos need %.0f requests per 5 min at interval %ss; budget is %d: "
                        "each repo is checked every %ds instead", polled, needed, self.config.interval_seconds,
                        total, effective)
        elif self.stats.over_budget and not over:
            log.info("back within budget: %.0f of %d requests per 5 min", needed, total)
        with self.stats.lock:
            self.stats.budget_share, self.stats.budget_needed = share, needed
            self.stats.over_budget, self.stats.effective_interval = over, effective

    # ------------------------------------------------------------------ firehose
    def _firehose_pass(self, now: datetime) -> None:
        """Read the listing down to the watermark; mark moved repos due, confirm the others.

        Reads chain: each reaches back to the previous one's watermark. The first read of a
        chain reaches back to the oldest last successful check of the covered repos, so after
        a restart nothing needs a poll of its own. A repo is confirmed unchanged when it was
        checked successfully since the chain began and is not listed with another head.
        """
        assert self.firehose is not None
        if self._firehose_next is not None and now < self._firehose_next:
            return
        if self._paused(now) or self.budget.room() <= 0:
            return
        self._firehose_next = now + timedelta(seconds=self.config.interval_seconds)
        tracked = {r.id: r for r in scheduling.firehose_repos(self.store)}
        since = self._watermark
        if self._chain_start is None:
            checked = [r.last_success_at for r in tracked.values() if r.failures == 0 and r.last_success_at]
            since = min(checked, default=None)
        try:
            read = self.firehose.read(since)
        except SourceError as e:
            self.stats.add("errors", 1, f"firehose_{e.kind}")
            if isinstance(e, RateLimited) and e.retry_after:
                self._pause(now + timedelta(seconds=min(e.retry_after, self.config.max_backoff_seconds)))
            log.warning("firehose read failed: %s", e)
            return
        self.budget.spend(read.requests)
        self.stats.add("requests", read.requests)
        self.stats.add("bytes", read.bytes)
        self.stats.add("firehose_reads")
        moved = {i.id for i in read.items if i.id in tracked and i.sha != tracked[i.id].head_sha}
        for repo_id in sorted(moved):
            self.store.mark_due(repo_id, now)
        confirmed = 0
        if read.complete and since is not None:
            start = self._chain_start = self._chain_start or since
            ok = [r.id for r in tracked.values() if r.id not in moved and r.failures == 0
                  and r.last_success_at is not None and r.last_success_at >= start]
            later = now + timedelta(seconds=2 * self.config.interval_seconds)
            confirmed = scheduling.confirm_unchanged(self.store, ok, now=now, next_check_at=later)
            self._watermark = read.watermark
        else:  # the watermark was out of reach: repos are polled until a read reaches back again
            self._chain_start = self._watermark = None
        self.stats.add("firehose_moved", len(moved))
        self.stats.add("firehose_confirmed", confirmed)
        log.info("firehose: %d request(s), %d listed, %d moved, %d confirmed unchanged%s", read.requests,
                 len(read.items), len(moved), confirmed, "" if read.complete else " (watermark not reached)")

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

    def start(self) -> Any:
        """Start APScheduler: a cycle every tick, lease renewal every third of a lease."""
        from apscheduler.schedulers.background import BackgroundScheduler

        sched = BackgroundScheduler(timezone="UTC")
        sched.add_job(self.run_once, "interval", seconds=self.config.tick_seconds, id="hubwatch-cycle",
                      max_instances=1, coalesce=True, next_run_time=datetime.now(UTC))
        sched.add_job(self.renew_leases, "interval", seconds=max(1.0, self.config.lease_seconds / 3),
                      id="hubwatch-leases", max_instances=1, coalesce=True)
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
        released = scheduling.release_all(self.store, self.owner)
        log.info("daemon stopped; %d lease(s) released", released)
        return released

    def alive(self) -> bool:
        sched = self._scheduler
        return bool(sched is not None and sched.running and not self.stopping.is_set())
