"""``hubwatch serve --workers N`` (issue 17): N API processes on one socket, one counter
of inbound webhooks across them, a clean stop on SIGTERM, and exit 1 when a worker dies."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from storage import open_store
from tests.corpus import REPO_ROOT
from tests.daemon.helpers import free_port, hubwatch_env, wait_for
from tracker.api.metrics import Metrics
from tracker.cli import build_parser
from tracker.config import load_settings
from tracker.errors import ConfigError


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(c) for c in (task / "children").read_text().split()]
    return out


def _serve(tmp_path: Path, *extra: str, workers_key: int | None = None) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    lines = ["[storage]", f'url = "sqlite:///{tmp_path / "hw.db"}"', "[server]", 'host = "127.0.0.1"', f"port = {port}"]
    if workers_key is not None:
        lines.append(f"workers = {workers_key}")
    config = tmp_path / "config.toml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    log = (tmp_path / "serve.log").open("ab")
    proc = subprocess.Popen([sys.executable, "-m", "tracker.cli", "--config", str(config), "serve", *extra],
                            cwd=REPO_ROOT, env=hubwatch_env(), stdout=log, stderr=subprocess.STDOUT)
    return proc, f"http://127.0.0.1:{port}"


def _get(url: str) -> int:
    try:
        return httpx.get(url, timeout=5).status_code
    except httpx.HTTPError:
        return 0


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="counts workers through /proc")
def test_two_workers_serve_one_port_count_hooks_together_and_stop_on_sigterm(tmp_path: Path) -> None:
    proc, base = _serve(tmp_path, "--workers", "2")
    try:
        wait_for(lambda: _get(f"{base}/healthz") == 200, 120, "/healthz")
        workers = wait_for(lambda: len(_children(proc.pid)) == 2 and _children(proc.pid), 30, "two workers")
        for _ in range(6):  # a new connection each: either worker may answer
            assert httpx.post(f"{base}/hooks/huggingface", json={}, timeout=5).status_code == 403  # no secret set
        for _ in range(4):
            assert 'hubwatch_hub_webhooks_total{outcome="disabled"} 6.0' in httpx.get(f"{base}/metrics", timeout=5).text
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert not any(Path(f"/proc/{w}").exists() for w in workers)
        log = (tmp_path / "serve.log").read_text()
        assert "2 workers" in log and "Traceback" not in log
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="counts workers through /proc")
def test_a_worker_that_dies_stops_the_others_and_serve_exits_1(tmp_path: Path) -> None:
    proc, base = _serve(tmp_path, workers_key=3)  # from [server] workers
    try:
        wait_for(lambda: _get(f"{base}/healthz") == 200, 120, "/healthz")
        workers = wait_for(lambda: len(_children(proc.pid)) == 3 and _children(proc.pid), 30, "three workers")
        os.kill(workers[0], signal.SIGKILL)
        assert proc.wait(30) == 1
        wait_for(lambda: not any(Path(f"/proc/{w}").exists() for w in workers), 10, "the other workers to stop")
        assert "exited (-9); stopping the others" in (tmp_path / "serve.log").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def _hook_in_child(metrics: Metrics) -> None:
    metrics.hook("queued")
    metrics.hook("queued")


def test_shared_hook_counters_count_what_forked_workers_saw(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'm.db'}")
    try:
        ctx = multiprocessing.get_context("fork")
        local = Metrics(store)
        child = ctx.Process(target=_hook_in_child, args=(local,))
        child.start()
        child.join(30)
        assert local.hook_counts() == {}  # each process's own: the child's hooks are lost to the parent

        shared = Metrics(store)
        shared.hook("queued")
        shared.share_across_processes()  # the count so far moves into the shared memory
        child = ctx.Process(target=_hook_in_child, args=(shared,))
        child.start()
        child.join(30)
        shared.hook("odd")  # an outcome with no shared slot stays this process's
        assert child.exitcode == 0 and shared.hook_counts() == {"queued": 3, "odd": 1}
        assert 'hubwatch_hub_webhooks_total{outcome="queued"} 3.0' in shared.render()[0].decode()
    finally:
        store.close()


def test_workers_from_the_flag_the_file_and_the_environment(tmp_path: Path) -> None:
    parser = build_parser()
    assert parser.parse_args(["serve", "--workers", "4"]).workers == 4
    assert parser.parse_args(["serve"]).workers is None
    for bad in ("0", "-1", "65", "two"):
        with pytest.raises(SystemExit) as exit_:
            parser.parse_args(["serve", "--workers", bad])
        assert exit_.value.code == 2
    cfg = tmp_path / "c.toml"
    cfg.write_text("[server]\n", encoding="utf-8")
    assert load_settings(cfg, env={}).server.workers == 1
    cfg.write_text("[server]\nworkers = 3\n", encoding="utf-8")
    assert load_settings(cfg, env={}).server.workers == 3
    assert load_settings(cfg, env={"HUBWATCH_SERVER_WORKERS": "5"}).server.workers == 5
    for bad in ("0", "65"):
        cfg.write_text(f"[server]\nworkers = {bad}\n", encoding="utf-8")
        with pytest.raises(ConfigError, match=r"\[server\] workers must be between 1 and 64"):
            load_settings(cfg, env={})


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="counts workers through /proc")
def test_sigint_to_serve_alone_stops_every_worker(tmp_path: Path) -> None:
    """A SIGINT sent to the parent only (not the terminal's, which reaches every process)."""
    proc, base = _serve(tmp_path, "--workers", "2")
    try:
        wait_for(lambda: _get(f"{base}/healthz") == 200, 120, "/healthz")
        workers = wait_for(lambda: len(_children(proc.pid)) == 2 and _children(proc.pid), 30, "two workers")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
        assert not any(Path(f"/proc/{w}").exists() for w in workers)
        assert _get(f"{base}/healthz") == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


class _SlowStart:
    """A server that takes its time to start, then runs until told to stop (at most 20 s)."""

    should_exit = False

    def run(self, sockets: object = None) -> None:
        time.sleep(1.0)  # starting: uvicorn has not taken the signals over yet
        deadline = time.monotonic() + 20
        while not self.should_exit:
            if time.monotonic() > deadline:
                raise RuntimeError("never told to stop")
            time.sleep(0.01)


def test_a_signal_while_workers_still_start_stops_them() -> None:
    """SIGTERM reaches workers that are still starting (before uvicorn handles signals): they
    stop then, not never."""
    from tracker.cli.workers import run_workers

    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    started = time.monotonic()
    try:
        assert run_workers(2, _SlowStart, [], after_fork=lambda: None) == 0
    finally:
        timer.cancel()
    assert time.monotonic() - started < 15


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_stop_when_serve_is_killed(tmp_path: Path) -> None:
    """A SIGKILL to serve (which it cannot pass on) still stops its workers: none is left
    serving the port on its own."""
    proc, base = _serve(tmp_path, "--workers", "2")
    try:
        wait_for(lambda: _get(f"{base}/healthz") == 200, 120, "/healthz")
        workers = wait_for(lambda: len(_children(proc.pid)) == 2 and _children(proc.pid), 30, "two workers")
        proc.kill()
        proc.wait(10)
        wait_for(lambda: not any(Path(f"/proc/{w}/cmdline").exists() and Path(f"/proc/{w}/cmdline").read_bytes()
                                 for w in workers), 30, "the workers to stop")
        assert _get(f"{base}/healthz") == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
