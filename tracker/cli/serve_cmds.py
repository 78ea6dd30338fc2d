"""run and serve: the long-running commands."""

from __future__ import annotations

import logging
import signal
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from tracker.cli.context import Context
from tracker.cli.transport import HEAD_TIMEOUT_SECONDS, Stack, preferred, uvicorn_options
from tracker.errors import HubwatchError

log = logging.getLogger("hubwatch")


def _configure_logging() -> None:
    """The long-running commands log at INFO, one line per event, to stderr."""
    root = logging.getLogger()
    if root.level > logging.INFO:
        root.setLevel(logging.INFO)


def _quiet_libraries() -> None:
    """Below --debug, libraries that log a line per request or migration step stay quiet."""
    if logging.getLogger().level > logging.DEBUG:
        for noisy in ("httpx", "httpx2", "huggingface_hub", "alembic"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
        logging.getLogger("apscheduler").setLevel(logging.ERROR)  # a line per tick, "skipped: still running"


def listen(host: str, port: int) -> socket.socket:
    """The API's listening socket, bound before anything else starts.

    A busy port or a bad address is one ``hubwatch: error:`` line (exit 1), not a uvicorn
    traceback after the store was opened.
    """
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except (OSError, UnicodeError) as e:
        raise HubwatchError(f"could not listen on {host}:{port}: {e}") from e
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(2048)
    except OSError as e:
        sock.close()
        raise HubwatchError(f"could not listen on {host}:{port}: {e.strerror or e}") from e
    sock.set_inheritable(True)
    return sock


def uvicorn_config(app: Any, *, stack: Stack | None = None, head_timeout: float = HEAD_TIMEOUT_SECONDS,
                   **extra: Any) -> Any:
    """How ``serve`` and ``run`` configure uvicorn (benchmarks/api.py serves its ceiling so too).

    httptools and uvloop unless ``stack`` says otherwise (``tracker.cli.transport``: h11 and
    asyncio where they cannot be imported), one limit on a request's head for either parser,
    and ``head_timeout`` seconds to send it (408 and closed past that).
    Its access log is off: at the warning level the long-running commands log at, its line
    was never written, yet each answer still built the line's arguments.
    """
    import uvicorn

    options = uvicorn_options(stack or preferred(), head_timeout) | extra
    return uvicorn.Config(app, log_level="warning", access_log=False, **options)


def serve(ctx: Context) -> int:
    """The HTTP API alone, on [server] host/port, in ``--workers`` / [server] workers processes."""
    from tracker.api.app import create_app

    workers = getattr(ctx.args, "workers", None) or ctx.settings.server.workers
    sock = listen(ctx.settings.server.host, ctx.settings.server.port)
    _configure_logging()
    _quiet_libraries()
    app = create_app(ctx.store, ctx.settings)
    if workers > 1:
        log.info("hubwatch serve: api on http://%s:%s, %d workers", ctx.settings.server.host,
                 ctx.settings.server.port, workers)
    return serve_app(app, sock, workers, after_fork=lambda: ctx.store.engine.dispose(close=False))


def serve_app(app: Any, sock: socket.socket, workers: int = 1, *,
              after_fork: Callable[[], None] = lambda: None, stack: Stack | None = None,
              head_timeout: float = HEAD_TIMEOUT_SECONDS) -> int:
    """``app`` on uvicorn on the bound ``sock``: in this process, or in ``workers`` forked ones
    (``stack``: the parser and loop, when not the preferred ones; ``head_timeout``: seconds
    a client has to send a request's head)."""
    import uvicorn

    from tracker.cli.workers import run_workers

    config = uvicorn_config(app, stack=stack, head_timeout=head_timeout)
    config.load()  # before the fork: uvicorn's protocol modules imported once, shared by the workers

    if workers == 1:
        uvicorn.Server(config).run(sockets=[sock])
        return 0
    metrics = getattr(app.state, "metrics", None)
    if metrics is not None:
        metrics.share_across_processes()
    return run_workers(workers, lambda: uvicorn.Server(config), [sock], after_fork=after_fork)


def build_daemon(ctx: Context) -> Any:
    """A Daemon configured from ``[schedule]`` and ``[hub]`` (firehose reader included when on)."""
    from tracker.daemon import Daemon, DaemonConfig
    from tracker.hub.firehose import Firehose

    sch, hub = ctx.settings.schedule, ctx.settings.hub
    config = DaemonConfig(
        interval_seconds=sch.interval_seconds, jitter_seconds=sch.jitter_seconds, concurrency=sch.concurrency,
        lease_seconds=sch.lease_seconds, requests_per_5min=hub.requests_per_5min,
        max_backoff_seconds=sch.max_backoff_seconds, firehose=sch.firehose,
        tick_seconds=max(0.5, min(5.0, sch.interval_seconds / 4, sch.lease_seconds / 4)),
    )
    firehose = Firehose(hub.endpoint, token=hub.token, timeout=hub.timeout_seconds) if sch.firehose else None
    daemon = Daemon(ctx.store, ctx.sources, ctx.pipeline_options, config, firehose=firehose)
    daemon.deliver = _deliverer(ctx, daemon)
    return daemon


def _deliverer(ctx: Context, daemon: Any) -> Any:
    """The daemon's delivery worker: its own job, beside the polling cycle; outcomes counted for /metrics."""
    from tracker.delivery import DeliveryWorker

    return DeliveryWorker(ctx.store, ctx.settings, stop=daemon.stopping,
                          on_outcome=lambda outcome: daemon.stats.add("deliveries", key=outcome))


def run(ctx: Context) -> int:
    """Scheduler and HTTP API in one process until SIGINT/SIGTERM; exits 0 after a clean stop.

    The API runs in a thread (uvicorn installs no signal handlers off the main thread); the
    main thread owns the signals: the first one stops claiming and lets running checks finish
    for a grace period, a second one cancels them at once. Leases still held are released.
    """
    import uvicorn

    from tracker.api.app import create_app
    from tracker.api.metrics import Metrics

    host, port = ctx.settings.server.host, ctx.settings.server.port
    sock = listen(host, port)
    _configure_logging()
    _quiet_libraries()
    added = ctx.sync_config_repos()
    if ctx.settings.server.workers > 1:
        log.info("[server] workers = %d is for `hubwatch serve`: `run` serves its API from one process "
                 "(its scheduler runs once)", ctx.settings.server.workers)
    daemon = build_daemon(ctx)
    metrics = Metrics(ctx.store, stats=daemon.stats.snapshot)
    app = create_app(ctx.store, ctx.settings, scheduler_alive=daemon.alive, metrics=metrics)
    server = uvicorn.Server(uvicorn_config(app, lifespan="off"))
    stop = threading.Event()
    signals: list[int] = []

    def on_signal(signum: int, _frame: Any) -> None:
        signals.append(signum)
        if len(signals) > 1:
            daemon.cancel.set()  # a second signal: do not wait for running checks
        log.info("signal %s: stopping", signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    api = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="hubwatch-api", daemon=True)
    api.start()
    while not server.started and api.is_alive() and not stop.is_set():
        time.sleep(0.05)
    if not server.started and not stop.is_set():
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        raise HubwatchError(f"the HTTP API could not listen on {host}:{port}")
    failed = False
    try:
        if not stop.is_set():
            daemon.start()
            log.info("hubwatch running: owner %s, api on http://%s:%s, %d repos tracked (%d from config), "
                     "firehose %s", daemon.owner, host, port, len(ctx.store.list_repos()), added,
                     "on" if daemon.firehose else "off")
        while not stop.wait(0.5):
            if not api.is_alive():
                log.error("the HTTP API stopped; stopping")
                failed = True
                break
    finally:
        daemon.stop()
        server.should_exit = True
        api.join(timeout=10)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        log.info("hubwatch stopped")
    return 1 if failed else 0
