"""``/api/v1/subscriptions``: token, validation, private destinations, status visible in the API."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from advisories.webhooks import new_secret
from tests.api.data import START, TOKEN, seed_history, settings
from tests.webhooks.receiver import Receiver
from tracker.api.app import create_app
from tracker.delivery import deliver_pending

AUTH = {"Authorization": f"Bearer {TOKEN}"}
URL = "/api/v1/subscriptions"


def test_crud_needs_the_token(store) -> None:  # type: ignore[no-untyped-def]
    c = TestClient(create_app(store, settings()))
    for method, path in (("get", URL), ("post", URL), ("delete", URL + "/sub_0"), ("get", URL + "/sub_0")):
        r = getattr(c, method)(path, **({"json": {"url": "http://127.0.0.1:1/x"}} if method == "post" else {}))
        assert r.status_code == 401 and r.json()["code"] == 401
        assert r.headers["WWW-Authenticate"] == "Bearer"
    r = c.post(URL, json={"url": "http://127.0.0.1:9/hook", "repos": ["org/model"]}, headers=AUTH)
    assert r.status_code == 201
    doc = r.json()
    assert {"id", "url", "repos", "secret"} <= set(doc)
    assert doc["url"] == "http://127.0.0.1:9/hook" and doc["repos"] == ["org/model"] and doc["secret"].startswith("whsec_")
    mine = new_secret()
    other = c.post(URL, json={"url": "https://hooks.example.com/x", "repos": None, "secret": mine}, headers=AUTH).json()
    assert other["secret"] == mine and other["repos"] is None
    listed = c.get(URL, headers=AUTH).json()
    assert [s["id"] for s in listed] == [doc["id"], other["id"]]
    assert all(s["status"] == "active" and s["consecutive_failures"] == 0 and "secret" not in s for s in listed)
    assert c.delete(f"{URL}/{doc['id']}", headers=AUTH).status_code == 204
    assert c.delete(f"{URL}/{doc['id']}", headers=AUTH).status_code == 404
    assert [s["id"] for s in c.get(URL, headers=AUTH).json()] == [other["id"]]


@pytest.mark.parametrize("body, fragment", [
    ({"url": "ftp://example.com/x"}, "http or https"),
    ({"url": "http://example.com/x", "repos": ["bad id"]}, "repo id"),
    ({"url": "http://example.com/x", "secret": "hunter2"}, "whsec_"),
    ({"url": "http://example.com/x", "extra": True}, "extra"),
    ({"repos": None}, "url"),
])
def test_input_is_validated(sqlite_store, body, fragment) -> None:  # type: ignore[no-untyped-def]
    c = TestClient(create_app(sqlite_store, settings()))
    r = c.post(URL, json=body, headers=AUTH)
    assert r.status_code == 400 and fragment in r.json()["message"]


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/x", "http://localhost/x", "http://10.0.0.5/x",
                                 "http://[::1]/x", "http://169.254.169.254/x"])
def test_private_destinations_refused_unless_allowed(sqlite_store, url) -> None:  # type: ignore[no-untyped-def]
    refusing = TestClient(create_app(sqlite_store, settings(allow_private=False)))
    r = refusing.post(URL, json={"url": url}, headers=AUTH)
    assert r.status_code == 400 and "allow_private_destinations" in r.json()["message"]
    allowing = TestClient(create_app(sqlite_store, settings(allow_private=True)))
    assert allowing.post(URL, json={"url": url}, headers=AUTH).status_code == 201


def test_disabled_subscription_is_visible_and_patch_enables_it(store) -> None:  # type: ignore[no-untyped-def]
    cfg = settings(disable_after_days=1)
    c = TestClient(create_app(store, cfg))
    up: list[bool] = []
    with Receiver(answer=lambda _r, _n: 204 if up else 500) as rx:
        sub = c.post(URL, json={"url": rx.url}, headers=AUTH).json()
        seed_history(store, n=5)
        for hours in (0, 12, 25):  # failing for more than a day
            deliver_pending(store, cfg, now=START + timedelta(days=1, hours=hours))
        doc = c.get(f"{URL}/{sub['id']}", headers=AUTH).json()
        assert doc["status"] == "disabled" and doc["consecutive_failures"] >= 3 and doc["failing_since"]
        assert "without a success" in doc["disabled_reason"] and doc["last_error"] == "HTTP 500"
        queued = doc["deliveries"]["pending"]
        assert queued and doc["recent_deliveries"]
        assert c.get(URL, headers=AUTH).json()[0]["status"] == "disabled"
        assert c.delete(f"{URL}/{sub['id']}", headers=AUTH).status_code == 409  # its queue is not dropped
        up.append(True)
        r = c.patch(f"{URL}/{sub['id']}", json={"status": "active"}, headers=AUTH)
        assert r.status_code == 200 and r.json()["status"] == "active" and "secret" not in r.json()
        assert deliver_pending(store, cfg) == queued  # the queue resumes at once
        rx.verified(sub["secret"])
    doc = c.get(f"{URL}/{sub['id']}", headers=AUTH).json()
    assert doc["deliveries"]["pending"] == 0 and doc["failing_since"] is None


def test_patch_rotates_the_secret_and_disables(store) -> None:  # type: ignore[no-untyped-def]
    c = TestClient(create_app(store, settings()))
    sub = c.post(URL, json={"url": "http://127.0.0.1:9/hook"}, headers=AUTH).json()
    r = c.patch(f"{URL}/{sub['id']}", json={"rotate_secret": True}, headers=AUTH)
    doc = r.json()
    assert r.status_code == 200 and doc["secret"].startswith("whsec_") and doc["secret"] != sub["secret"]
    assert doc["previous_secret_expires_at"]
    assert c.patch(f"{URL}/{sub['id']}", json={"status": "disabled"}, headers=AUTH).json()["status"] == "disabled"
    assert c.patch(f"{URL}/{sub['id']}", json={"status": "gone"}, headers=AUTH).status_code == 400
    assert c.patch(f"{URL}/{sub['id']}", json={"secret": new_secret()}, headers=AUTH).status_code == 400
    assert c.patch(f"{URL}/sub_{'0' * 24}", json={"status": "active"}, headers=AUTH).status_code == 404
    assert c.patch(f"{URL}/{sub['id']}", json={"status": "active"}).status_code == 401
    seed_history(store, n=2)
    assert c.delete(f"{URL}/{sub['id']}", headers=AUTH).status_code == 409
    assert c.delete(f"{URL}/{sub['id']}?discard_pending=true", headers=AUTH).status_code == 204
