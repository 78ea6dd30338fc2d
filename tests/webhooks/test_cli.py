"""The CLI path: ``hubwatch subscribe/subscriptions/unsubscribe``, and ``poll`` delivering the
advisories of a real corpus history to a receiver that fails the first delivery."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.cli_helpers import Cli
from tests.hubemu import clone_bundle
from tests.webhooks.receiver import Receiver

ALLOW = "[webhooks]\nallow_private_destinations = true\n"


def test_subscribe_list_unsubscribe(tmp_path: Path) -> None:
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'hw.db'}", ALLOW)
    assert "no webhook subscriptions" in cli.ok("subscriptions").out
    sub = cli.ok("subscribe", "http://127.0.0.1:9/hook", "--repo", "org/a", "--repo", "org/b", "--json").json()
    assert sub["repos"] == ["org/a", "org/b"] and sub["secret"].startswith("whsec_") and sub["id"].startswith("sub_")
    text = cli.ok("subscribe", "http://127.0.0.1:9/all").out
    assert "all repos" in text and "whsec_" in text
    listed = cli.ok("subscriptions", "--json").json()
    assert [s["url"] for s in listed] == ["http://127.0.0.1:9/hook", "http://127.0.0.1:9/all"]
    assert listed[0]["status"] == "active" and "secret" not in listed[0]
    assert cli.ok("unsubscribe", sub["id"], "--json").json() == {"id": sub["id"], "removed": True, "discarded": 0}
    gone = cli("unsubscribe", sub["id"])
    assert gone.code == 1 and "no subscription" in gone.err
    assert len(cli.ok("subscriptions", "--json").json()) == 1


def test_enable_disable_rotate_and_a_queue_unsubscribe_keeps(tmp_path: Path) -> None:
    from storage import open_store
    from tests.api.data import seed_history

    url = f"sqlite:///{tmp_path / 'hw.db'}"
    cli = Cli(tmp_path, url, ALLOW)
    sub = cli.ok("subscribe", "http://127.0.0.1:9/hook", "--json").json()
    assert cli.ok("subscriptions", "disable", sub["id"], "--json").json()["status"] == "disabled"
    store = open_store(url)
    seed_history(store, n=2)  # queued although disabled: disabling pauses, it does not drop
    store.close()
    assert "1 deliveries queued" in cli.ok("subscriptions", "enable", sub["id"]).out
    rotated = cli.ok("subscriptions", "rotate-secret", sub["id"], "--json").json()
    assert rotated["secret"] != sub["secret"] and rotated["previous_secret_expires_at"]
    refused = cli("unsubscribe", sub["id"])
    assert refused.code == 1 and "still queued" in refused.err and "--discard-pending" in refused.err
    assert cli.ok("unsubscribe", sub["id"], "--discard-pending", "--json").json()["discarded"] == 1
    assert cli("subscriptions", "enable").code == 2  # an action needs an ID


def test_cli_refuses_what_the_api_refuses(tmp_path: Path) -> None:
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'hw.db'}")  # private destinations not allowed
    r = cli("subscribe", "http://127.0.0.1:9/hook")
    assert r.code == 1 and "allow_private_destinations" in r.err and r.out == ""
    r = cli("subscribe", "https://hooks.example.com/x", "--repo", "not a repo")
    assert r.code == 2 and "repo id" in r.err
    r = cli("subscribe", "https://hooks.example.com/x", "--secret", "plain")
    assert r.code == 2 and "whsec_" in r.err
    assert cli.ok("subscriptions", "--json").json() == []


def test_poll_delivers_and_redelivers_with_the_same_id(tmp_path: Path) -> None:
    first: list[str] = []

    def answer(r, _seen):  # type: ignore[no-untyped-def]
        if not first:
            first.append(r.headers["webhook-id"])
            return 500
        return 200

    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'hw.db'}", ALLOW)
    with Receiver(answer=answer) as rx:
        sub = cli.ok("subscribe", rx.url, "--repo", "google/gemma-2b-it", "--json").json()
        cli.ok("track", str(clone_bundle("google__gemma-2b-it", tmp_path / "mirror")), "--as", "google/gemma-2b-it")
        advisories = cli.ok("advisories", "google/gemma-2b-it", "--json").json()
        assert advisories
        counts = cli.ok("subscriptions", "--json").json()[0]["deliveries"]
        events = counts["pending"]  # one per published advisory and per later edit of one
        assert events >= len(advisories) and counts["delivered"] == 0
        cli.ok("poll", "--json")
        assert len(rx.requests) == events and len(set(rx.ids())) == events and first
        cli.ok("poll", "--json")  # the failed one again (the receiver took the others: it is up), same id, same body
        again = [r for r in rx.requests if r.headers["webhook-id"] == first[0]]
        assert len(again) == 2 and again[0].body == again[1].body
        docs = rx.verified(sub["secret"])
        assert {d["data"]["id"] for d in docs} == {a["id"] for a in advisories}
        current = {f"{a['id']}.{a['modified']}" for a in advisories}
        assert current <= set(rx.ids())  # each record's newest version was sent
        cli.ok("poll")
        assert len(rx.requests) == events + 1  # delivered once each: nothing more
    listed = cli.ok("subscriptions", "--json").json()[0]
    assert listed["deliveries"] == {"pending": 0, "delivered": events, "failed": 0}

