"""Faults (issue 10): the figures the issue measured, on this code, in a few minutes.

  webhooks   8 events, a receiver failing for 10 minutes (500, reset, 410, 429), then back:
             events delivered / lost (the issue: 8 of 8 lost in each scenario)
  migration  a first start SIGKILLed after each statement of the migration: databases the
             next start cannot open (the issue: 18 of 23 kill points)
  trickle    a Hub poll against a server sending 1 byte every 2 s, timeout_seconds = 5:
             seconds until the poll gives up (the issue: 104-110 s)
  slow hook  a polling cycle while the delivery worker is stuck in a receiver that takes 30 s:
             cycle seconds (the issue: 31-39 s)
  lease      how long a crashed deliverer's leased rows wait (the issue: 10 minutes)
  takeover   two `hubwatch run` processes, lease_seconds = 10, the repo's holder SIGKILLed mid-check:
             seconds until the survivor asks the Hub for the repo (the issue: 11-76 s; the bound:
             lease_seconds plus one claim interval, 12.5 s), on SQLite and, with --pg URL, PostgreSQL

Run from the repository root:  .venv/bin/python benchmarks/faults.py [--pg postgresql+psycopg://...]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repo root: tests.* helpers

from tests.hubemu import hf_test_env

hf_test_env()

import argparse  # noqa: E402
import os  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from datetime import UTC, datetime, timedelta  # noqa: E402

from advisories.webhooks import new_secret  # noqa: E402
from storage import open_store  # noqa: E402
from storage import subscriptions as subs  # noqa: E402
from tests.api.data import seed_history, settings  # noqa: E402
from tests.daemon.helpers import make_daemon, tiny_repo  # noqa: E402
from tests.faults.test_lease_takeover import kill_the_holder_mid_check  # noqa: E402
from tests.faults.test_migration_kills import _first_starts  # noqa: E402
from tests.hubemu import HubEmulator  # noqa: E402
from tests.webhooks.receiver import Receiver  # noqa: E402
from tracker.delivery import DeliveryWorker, deliver_pending, lease_seconds  # noqa: E402
from tracker.errors import SourceError  # noqa: E402
from tracker.hub.hf import HfSource  # noqa: E402


def webhooks(tmp: Path) -> None:
    for down in (500, "reset", 410, 429):
        store = open_store(f"sqlite:///{tmp / f'hooks-{down}.db'}")
        up = threading.Event()

        def answer(_r, _n, down=down, up=up):  # type: ignore[no-untyped-def]
            if up.is_set():
                return 204
            if down == "reset":
                raise ConnectionResetError
            return down

        with Receiver(answer=answer) as rx:
            sub = subs.create_subscription(store, url=rx.url, repos=None, secret=new_secret(),
                                           now=datetime(2025, 3, 1, tzinfo=UTC))
            seed_history(store, n=12)
            events = subs.get_subscription(store, sub.id).pending
            start, cfg = datetime(2025, 3, 3, tzinfo=UTC), settings()
            for second in range(0, 600, 20):  # ten minutes down, a pass every 20 s
                deliver_pending(store, cfg, now=start + timedelta(seconds=second))
            up.set()
            for hours in (1, 3):
                deliver_pending(store, cfg, now=start + timedelta(hours=hours))
            got = {r.headers["webhook-id"] for r in rx.requests if r.headers.get("webhook-id")}
            rx.verified(sub.secret)
            state = subs.get_subscription(store, sub.id)
        print(f"webhooks   receiver {down!s:5} for 10 min: {len(got)} of {events} events delivered after recovery, "
              f"{events - state.delivered} lost, subscription {state.status}")
        store.close()


def migration(tmp: Path) -> None:
    statements, killed = _first_starts(tmp)
    bricked = 0
    for n in range(1, statements + 1):
        try:
            open_store(f"sqlite:///{tmp / f'kill{n}.db'}").close()
        except Exception:
            bricked += 1
    print(f"migration  {sum(killed.values())} kill points of {statements}: {bricked} databases the next start cannot open")


def trickle(tmp: Path) -> None:
    with HubEmulator() as hub:
        hub.add_repo("org/m", tiny_repo(tmp / "m.git", commits=1).path)
        hub.faults.add("trickle", route="tree", every=2.0)
        src = HfSource("org/m", endpoint=hub.url, timeout=5.0)
        head = src.resolve_head("main")
        started = time.monotonic()
        try:
            src.list_files(head)
        except SourceError as e:
            print(f"trickle    1 byte / 2 s, timeout 5 s: gave up after {time.monotonic() - started:.1f}s ({e})")
        finally:
            src.close()


def slow_hook(tmp: Path) -> None:
    store = open_store(f"sqlite:///{tmp / 'slow.db'}")
    release = threading.Event()
    with HubEmulator() as hub, Receiver(answer=lambda _r, _n: (release.wait(30), 204)[1]) as rx:
        hub.add_repo("org/m", tiny_repo(tmp / "s.git", commits=2).path)
        store.add_repo("org/m", source="org/m", source_kind="hub")
        subs.create_subscription(store, url=rx.url, repos=None, secret=new_secret(), now=datetime.now(UTC))
        d = make_daemon(store, hub.url)
        d.deliver = DeliveryWorker(store, settings(), stop=d.stopping)
        d.run_once()  # the first read queues events
        worker = threading.Thread(target=d.deliver_once)
        worker.start()
        while not rx.requests:
            time.sleep(0.05)
        store.mark_due("org/m", now=datetime.now(UTC))  # due again: the cycle measured checks it
        started = time.monotonic()
        checked = d.run_once()
        took = time.monotonic() - started
        release.set()
        worker.join()
        d.stop(grace_seconds=0)
    print(f"slow hook  a cycle ({len(checked)} repo checked: {checked[0].status if checked else '-'}) while the "
          f"delivery worker waits on a 30 s receiver: {took:.2f}s")
    store.close()


def takeover(tmp: Path, pg_url: str | None, runs: int = 3) -> None:
    for name, make_url in (("sqlite", lambda i: f"sqlite:///{tmp / f'take{i}.db'}"), ("postgresql", pg_database)):
        if name == "postgresql" and not pg_url:
            continue
        delays, after_expiry = [], []
        for i in range(runs):
            (tmp / f"take{name}{i}").mkdir()
            url = make_url(i) if name == "sqlite" else make_url(pg_url, i)  # type: ignore[operator]
            t = kill_the_holder_mid_check(url, tmp / f"take{name}{i}", lease_seconds=10, tick_seconds=2.5)
            delays.append(t.delay)
            after_expiry.append(t.taken_at - t.expired_at)
        print(f"takeover   {name:10} lease 10 s, claim every 2.5 s, {runs} kills: taken over "
              f"{min(delays):.1f}-{max(delays):.1f}s after the kill, {min(after_expiry):.2f}-{max(after_expiry):.2f}s "
              "after the lease ran out (bound 12.5 s)")


def pg_database(admin_url: str, i: int) -> str:
    """A fresh database on the server of ``admin_url`` (postgresql+psycopg://user@host:port/db)."""
    import psycopg

    name = f"hubwatch_bench_takeover_{os.getpid()}_{i}"
    plain = admin_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(plain, autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        c.execute(f'CREATE DATABASE "{name}"')
    return admin_url.rsplit("/", 1)[0] + "/" + name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", help="a PostgreSQL URL whose server may get scratch databases (takeover)")
    parser.add_argument("--only", choices=["webhooks", "migration", "trickle", "slow_hook", "takeover"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        (tmp / "mig").mkdir()
        runs: dict[str, Callable[[], None]] = {
            "webhooks": lambda: webhooks(tmp), "migration": lambda: migration(tmp / "mig"),
            "trickle": lambda: trickle(tmp), "slow_hook": lambda: slow_hook(tmp),
            "takeover": lambda: takeover(tmp, args.pg),
        }
        for name, run in runs.items():
            if args.only in (None, name):
                run()
    if args.only is None:
        print(f"lease      a crashed deliverer's rows are retried after {lease_seconds(settings()):.0f}s "
              "(tests/faults/test_delivery_kills.py kills one mid-POST)")


if __name__ == "__main__":
    main()
