"""Helpers shared by the daemon tests and the scale benchmark: tiny repos, daemons, processes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from storage import Store
from tests.corpus import REPO_ROOT
from tests.hubemu import RepoBuilder, safetensors_bytes
from tracker.config import AdvisorySettings, Settings
from tracker.daemon import Daemon, DaemonConfig
from tracker.hub.firehose import Firehose
from tracker.pipeline.sources import SourceFactory

BASE_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
    "num_attention_heads": 4, "num_key_value_heads": 4, "num_hidden_layers": 2, "vocab_size": 256,
    "max_position_embeddings": 512, "eos_token_id": 2, "torch_dtype": "bfloat16",
}


def config_bytes(**changes: Any) -> bytes:
    return json.dumps({**BASE_CONFIG, **changes}, indent=2).encode()


def tiny_repo(path: Path, *, commits: int = 2, weights: bool = True, now_dates: bool = False) -> RepoBuilder:
    """A bare repo with ``commits`` commits: a baseline, then config changes that are advisories.

    ``now_dates`` dates the commits at the wall clock (the firehose sorts by commit time).
    """
    b = RepoBuilder.init(path)
    files: dict[str, Any] = {"config.json": config_bytes(), "README.md": b"# tiny\n"}
    if weights:
        files["model.safetensors"] = safetensors_bytes({"w": ("BF16", [4, 4])})
    b.commit(files, title="initial", date=datetime.now(UTC) if now_dates else None)
    for i in range(1, commits):
        b.commit({"config.json": config_bytes(max_position_embeddings=512 * (i + 1))}, title=f"context {i}",
                 date=datetime.now(UTC) if now_dates else None)
    return b


def make_daemon(store: Store, hub_url: str, *, timeout: float = 5.0, firehose: bool = False,
                check: Callable[..., Any] | None = None, **config: Any) -> Daemon:
    """A Daemon over ``store`` reading the Hub at ``hub_url``; OSV lookups off (no network)."""
    from tracker.cli.context import pipeline_options

    settings = Settings(advisories=AdvisorySettings(osv_api=""))
    defaults: dict[str, Any] = {"interval_seconds": 900, "jitter_seconds": 0, "concurrency": 4,
                                "lease_seconds": 60, "shutdown_grace_seconds": 5.0}
    cfg = DaemonConfig(**{**defaults, **config, "firehose": firehose})
    fh = Firehose(hub_url, timeout=timeout) if firehose else None
    extra: dict[str, Any] = {"check": check} if check is not None else {}
    return Daemon(store, SourceFactory(endpoint=hub_url, timeout=timeout), pipeline_options(settings), cfg,
                  firehose=fh, **extra)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_config(path: Path, *, db_url: str, hub_url: str, port: int, repos: Sequence[str] = (),
                 schedule: dict[str, Any] | None = None, hub: dict[str, Any] | None = None,
                 hooks_secret: str = "") -> Path:
    """A config.toml as a user would write it for ``hubwatch run``."""
    sched = {"interval_seconds": 900, "jitter_seconds": 0, "concurrency": 4, "lease_seconds": 60,
             **(schedule or {})}
    hubcfg = {"endpoint": hub_url, "timeout_seconds": 5, "requests_per_5min": 1000, **(hub or {})}
    lines = ["[storage]", f'url = "{db_url}"', "[hub]"]
    lines += [f"{k} = {_toml(v)}" for k, v in hubcfg.items()]
    lines += ["[schedule]"] + [f"{k} = {_toml(v)}" for k, v in sched.items()]
    lines += ["[server]", 'host = "127.0.0.1"', f"port = {port}", "[advisories]", 'osv_api = ""']
    if hooks_secret:
        lines += ["[hooks]", f'secret = "{hooks_secret}"']
    for r in repos:
        lines += ["[[repos]]", f'id = "{r}"']
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    return str(v)


def hubwatch_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HUBWATCH_", "HF_TOKEN", "HF_ENDPOINT"))}
    env.update({"HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_DISABLE_XET": "1", "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
                "PYTHONUNBUFFERED": "1"})
    return env


def start_run(config: Path, log: Path, *extra: str) -> subprocess.Popen[bytes]:
    """``hubwatch --config CONFIG run`` as a separate process, its output in ``log``."""
    script = Path(sys.executable).parent / "hubwatch"  # the console script a user runs
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "tracker.cli"]
    with log.open("ab") as out:
        return subprocess.Popen(
            [*cmd, "--config", str(config), *extra, "run"],
            cwd=REPO_ROOT, env=hubwatch_env(), stdout=out, stderr=subprocess.STDOUT,
        )


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, every: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def http_get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    import httpx

    try:
        r = httpx.get(url, timeout=timeout)
    except httpx.HTTPError:
        return 0, ""
    return r.status_code, r.text
