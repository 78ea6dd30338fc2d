"""Read-side test data: stored histories with real OSV records, and servers on 127.0.0.1.

``seed_history`` writes revisions through ``Store.record_revision`` (as the pipeline does),
with advisories built by ``advisories.osv.build_record`` and edits by its lifecycle
functions, so feeds, pages and webhooks see the records the daemon would store.
"""

from __future__ import annotations

import hashlib
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import uvicorn

from advisories.osv import build_record, withdraw
from storage.records import NewRevision
from storage.store import Store
from tracker.config import ApiSettings, ServerSettings, Settings, WebhookSettings
from tracker.model import Change, ChangeKind, CommitInfo, RevisionDiff, Severity

START = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
TOKEN = "test-token-7f3a"

_TEMPLATE_DIFF = (
    "--- a/chat_template.jinja\n+++ b/chat_template.jinja\n@@ -1,2 +1,2 @@\n"
    "-{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}\n"
    "+{% for m in messages %}<|{{ m.role }}|>\\n{{ m.content }}<|end|>{% endfor %}\n"
)
_RENDERED_DIFF = "--- a/old/user\n+++ b/new/user\n@@ -1 +1,2 @@\n-<s><|user|>Hi\n+<|user|>\n+Hi<|end|>\n"
# the shapes tracker.diff stores (templates.py, weights.py): rendered probes, tensor tables
_RENDERED = [{"probe": "user", "old": "<s><|user|>Hi", "old_error": None, "new": "<|user|>\nHi<|end|>",
              "new_error": None, "changed": True, "diff": _RENDERED_DIFF},
             {"probe": "tool_call", "old": None, "old_error": "template error: no tools", "new": None,
              "new_error": "template error: no tools", "changed": False}]
_TENSORS = {"changes": [{"name": n, "op": "changed", "old": {"dtype": "F32", "shape": [32000, 4096]},
                         "new": {"dtype": "BF16", "shape": [32000, 4096]}} for n in ("embed.weight", "lm_head.weight")],
            "changes_total": 2, "params_by_dtype": {"BF16": {"old": 0, "new": 262144000},
                                                     "F32": {"old": 262144000, "new": 0}}}


def sha_of(repo_id: str, i: int) -> str:
    return hashlib.sha1(f"{repo_id}#{i}".encode()).hexdigest()


def changes_for(i: int) -> tuple[Change, ...]:
    """A rotating set of realistic changes; every third revision touches only the README."""
    kind = i % 3
    if kind == 0:
        return (Change(ChangeKind.OTHER, "README.md", "README.md modified"),)
    if kind == 1:
        return (
            Change(ChangeKind.CHAT_TEMPLATE, "chat_template.jinja", "chat template changed (bos dropped)",
                   ("chat_template.changed",), Severity.HIGH,
                   {"op": "changed", "name": "default", "sources": {"old": "chat_template.jinja", "new": "chat_template.jinja"},
                    "text": {"diff": _TEMPLATE_DIFF, "added": 1, "removed": 1, "truncated": False},
                    "rendered": _RENDERED, "rendered_changed": 1}),
            Change(ChangeKind.GENERATION_CONFIG, "generation_config.json", "temperature 0.9 -> 0.6",
                   ("generation.sampling",), Severity.LOW,
                   {"op": "changed", "fields": [{"path": "temperature", "keys": ["temperature"], "op": "changed", "old": 0.9,
                                                 "new": 0.6, "topic": "generation.sampling"}],
                    "fields_total": 1, "truncated": False}),
        )
    return (
        Change(ChangeKind.WEIGHTS, "model.safetensors", "model.safetensors replaced; 2 tensors changed dtype",
               ("weights.replaced", "weights.tensors"), Severity.HIGH,
               {"op": "changed", "format": "safetensors", "old": {"size": 2_097_152_000, "content_id": "sha256:" + "a" * 64,
                "tensors": 2}, "new": {"size": 1_048_576_000, "content_id": "sha256:" + "b" * 64, "tensors": 2},
                "tensors": _TENSORS}),
    )


def seed_history(store: Store, repo_id: str = "org/model", n: int = 7, *, start: datetime = START,
                 first_index: int = 0) -> list[NewRevision]:
    """Track ``repo_id`` and store ``n`` linear revisions (index ``first_index`` on); returns them."""
    store.add_repo(repo_id, source=repo_id, source_kind="hub", now=start)
    last = store.last_revision(repo_id)
    parent = last.sha if last else None
    out = []
    for i in range(first_index, first_index + n):
        sha = sha_of(repo_id, i)
        when = start + timedelta(hours=i)
        changes = changes_for(i) if parent else ()
        commit = CommitInfo(sha=sha, parents=(parent,) if parent else (), committed_at=when, title=f"Update {i}",
                            authors=("alice",))
        delta = ({"summary": f"parameters 1,000,000 -> {1_000_000 + i:,}", "is_empty": False,
                  "params": {"total": [1_000_000, 1_000_000 + i], "active": [1_000_000, 1_000_000 + i]},
                  "memory_bytes": {}, "kv_cache_factor": None, "cards": [], "findings_added": [],
                  "findings_removed": [], "dims": {}} if i % 3 == 2 else None)  # delta_to_json's shape
        record = build_record(
            prefix="x_HUBWATCH", repo_id=repo_id, repo_url=f"https://huggingface.co/{repo_id}",
            commit_url=f"https://huggingface.co/{repo_id}/commit/{sha}", branch="main", commit=commit,
            parent=parent, diff=RevisionDiff(base=parent, head=sha, changes=changes), plan_delta=delta, related=[],
            now=when + timedelta(minutes=5),
        )
        severities = [c.severity for c in changes if c.severity]
        rev = NewRevision(
            repo_id=repo_id, sha=sha, parent=parent, parents=commit.parents, committed_at=when, title=commit.title,
            message=f"Update {i}\n\nbody", authors=commit.authors, changes=changes,
            severity=max(severities, key=lambda s: s.rank).value if severities else None, tree=None,
            plan=_plan(i) if i == first_index or i % 3 == 2 else None, plan_delta=delta, advisory=record,
            new_head=sha,
        )
        assert store.record_revision(rev, now=when + timedelta(minutes=5))
        out.append(rev)
        parent = sha
    return out


def withdraw_one(store: Store, record: dict[str, Any], now: datetime) -> dict[str, Any]:
    """Edit a stored advisory (withdrawn), as the lifecycle does: ``modified`` moves on."""
    edited = withdraw(record, "test withdrawal", now)
    store.update_advisories([(edited, "withdrawn")])
    return edited


def _plan(i: int) -> dict[str, Any]:
    return {
        "params": {"total": 1_000_000 + i, "active": 1_000_000 + i, "checkpoint": None, "delta_pct": None},
        "training_tokens": 2048,
        "memory_bytes": {"full_finetune": 19_200_000, "lora": 2_000_000, "serve_weights": 2_000_000,
                         "kv_cache": 65_536},
        "cards": {c: {"full_finetune": 64, "lora": 128, "serve": 256} for c in ("t4", "l4", "a100-40", "a100-80", "h200")},
        "structure": [], "findings": ["tied embeddings"], "cost": {},
    }


def settings(*, token: str | None = TOKEN, allow_private: bool = True, public_url: str = "http://testserver",
             **webhooks: Any) -> Settings:
    return Settings(server=ServerSettings(api_token=token), api=ApiSettings(public_url=public_url),
                    webhooks=replace(WebhookSettings(allow_private_destinations=allow_private), **webhooks))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve_app(app: Any) -> Iterator[str]:
    """Run an ASGI app under uvicorn on 127.0.0.1 in a thread; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
