"""``POST /hooks/huggingface``: the secret (constant time, header or query), the lenient payload
parser, and which events mark a tracked repo due."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from storage import Store, open_store
from tracker.api import hooks
from tracker.api.app import create_app
from tracker.config import HookSettings, Settings, load_settings

SECRET = "s3cret-webhook"
HEAD = "a" * 40
NEW = "b" * 40


def push(name: str = "org/model", ref: str = "refs/heads/main", new: str | None = NEW, **extra: Any) -> dict[str, Any]:
    """A repo.content update as the Hub sends it (hub-docs webhooks.md)."""
    return {
        "event": {"action": "update", "scope": "repo.content"},
        "repo": {"type": "model", "name": name, "id": "6543", "private": False, "headSha": new,
                 "url": {"web": f"https://huggingface.co/{name}"}, "owner": {"id": "1"}},
        "updatedRefs": [{"ref": ref, "oldSha": HEAD, "newSha": new}],
        "webhook": {"id": "abc", "version": 3},
        **extra,
    }


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    st = open_store(f"sqlite:///{tmp_path / 'hw.db'}")
    st.add_repo("org/model", source="org/model", source_kind="hub")
    st.set_head("org/model", HEAD)
    later = datetime.now(UTC) + timedelta(hours=1)
    st.record_poll("org/model", now=datetime.now(UTC), next_check_at=later)
    yield st
    st.close()


@pytest.fixture
def client(store: Store) -> TestClient:
    return TestClient(create_app(store, Settings(hooks=HookSettings(secret=SECRET))))


def due(store: Store) -> bool:
    repo = store.get_repo("org/model")
    assert repo is not None and repo.next_check_at is not None
    return repo.next_check_at <= datetime.now(UTC)


def post(client: TestClient, body: Any, secret: str | None = SECRET, **kw: Any) -> Any:
    headers = {"X-Webhook-Secret": secret} if secret is not None else {}
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return client.post("/hooks/huggingface", content=data, headers=headers, **kw)


def test_a_push_to_the_tracked_branch_marks_the_repo_due(client: TestClient, store: Store) -> None:
    assert not due(store)
    r = post(client, push())
    assert r.status_code == 200 and r.json() == {"status": "queued", "repo": "org/model"}
    assert due(store)
    metrics = client.get("/metrics").text
    assert 'hubwatch_hub_webhooks_total{outcome="queued"} 1.0' in metrics


def test_the_secret_is_required_and_compared_in_constant_time(
    client: TestClient, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = hooks.hmac.compare_digest
    monkeypatch.setattr(hooks.hmac, "compare_digest", lambda a, b: calls.append((a, b)) or real(a, b))
    assert post(client, push(), secret=None).status_code == 401
    wrong = post(client, push(), secret="s3cret-webhooK")
    assert wrong.status_code == 403 and wrong.json()["message"] == "wrong webhook secret"
    assert calls == [(SECRET.encode(), b"s3cret-webhooK")]
    assert not due(store)
    by_query = client.post(f"/hooks/huggingface?secret={SECRET}", json=push())
    assert by_query.status_code == 401 and not due(store)  # the query form only when configured
    allowing = TestClient(create_app(store, Settings(hooks=HookSettings(secret=SECRET, allow_query_secret=True))))
    by_query = allowing.post(f"/hooks/huggingface?secret={SECRET}", json=push())
    assert by_query.status_code == 200 and due(store)


def test_without_a_secret_inbound_webhooks_are_refused(store: Store) -> None:
    client = TestClient(create_app(store, Settings()))
    r = post(client, push(), secret="")
    assert r.status_code == 403 and "disabled" in r.json()["message"]
    assert not due(store)


def test_the_secret_may_come_from_the_environment(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text("[hooks]\nsecret = \"from-file\"\n")
    assert load_settings(cfg, env={}).hooks.secret == "from-file"
    assert load_settings(cfg, env={"HUBWATCH_WEBHOOK_SECRET": "from-env"}).hooks.secret == "from-env"
    assert "from-env" not in repr(load_settings(cfg, env={"HUBWATCH_WEBHOOK_SECRET": "from-env"}))


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({**push(), "event": {"action": "create", "scope": "discussion"}}, "discussion is not watched"),
        ({**push(), "event": {"action": "update", "scope": "discussion.comment"}}, "not watched"),
        (push(name="org/other"), "not tracked"),
        ({**push(), "repo": {**push()["repo"], "type": "dataset"}}, "dataset"),
        (push(ref="refs/pr/3"), "another ref moved"),
        (push(new=HEAD), "already current"),
        ({"event": "nope"}, "not a Hub repo event"),
        (b"\xff\xfe not json", "not a Hub repo event"),
        (b"[" * 100_000 + b"]" * 100_000, "not a Hub repo event"),
        ([1, 2, 3], "not a Hub repo event"),
    ],
)
def test_other_events_are_acknowledged_and_ignored(client: TestClient, store: Store, body: Any, reason: str) -> None:
    r = post(client, body)
    assert r.status_code == 200
    assert r.json()["status"] == "ignored" and reason in r.json()["reason"]
    assert not due(store)


def test_an_unknown_action_or_new_scope_on_a_tracked_repo_still_counts(client: TestClient, store: Store) -> None:
    body = push()
    body["event"] = {"action": "somethingnew", "scope": "repo.config.dois"}
    del body["updatedRefs"]
    body["webhook"]["version"] = 4
    assert post(client, body).json()["status"] == "queued"
    assert due(store)


def test_an_untracked_repo_is_not_revived(client: TestClient, store: Store) -> None:
    store.untrack("org/model")
    assert post(client, push()).json() == {"status": "ignored", "reason": "not tracked"}


def test_an_oversized_payload_is_refused_before_it_is_read(client: TestClient, store: Store) -> None:
    big = json.dumps({**push(), "pad": "x" * (hooks.MAX_BODY + 1)}).encode()
    assert post(client, big).status_code == 413
    assert not due(store)


def test_the_parser_reads_head_sha_and_refs() -> None:
    ev = hooks.parse_hub_event(json.dumps(push()).encode())
    assert ev is not None
    assert (ev.action, ev.scope, ev.repo_type, ev.repo_name) == ("update", "repo.content", "model", "org/model")
    assert ev.head_sha == NEW  # huggingface_hub's WebhookPayload loses it (head_sha vs headSha)
    assert ev.updated_refs == (("refs/heads/main", NEW),)
    deleted = hooks.parse_hub_event(json.dumps(push(new=None)).encode())
    assert deleted is not None and deleted.updated_refs == (("refs/heads/main", None),)
