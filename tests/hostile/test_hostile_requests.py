"""Hostile API clients (issue 16, points 2, 8, 9, 10 and the lower list): what a client can
send never makes the daemon read a local repo or an internal URL, never leaks git's or the
database's words, never costs memory before the token is checked, and never 500s."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from storage.store import Store
from tests.api.data import TOKEN, seed_history, settings
from tracker.api.app import create_app
from tracker.config import ApiSettings, Settings

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _client(store: Store, **api: Any) -> TestClient:
    base = settings()
    return TestClient(create_app(store, Settings(server=base.server, webhooks=base.webhooks,
                                                 api=ApiSettings(**api))))


def test_git_sources_are_refused_by_default(store: Store) -> None:
    client = _client(store)
    for source in ["/etc", "./repo", "~/private.git", "file:///srv/private.git", "/tmp/x.bundle",
                   "http://127.0.0.1:5432/x.git", "git://localhost/x", "https://93.184.215.14/org/x.git"]:
        r = client.post("/api/v1/repos", json={"source": source, "id": "evil/x"}, headers=AUTH)
        assert r.status_code == 403 and "only Hub repo ids" in r.json()["message"], source
    assert store.list_repos() == []


def test_allowed_git_sources_still_refuse_paths_and_private_addresses(store: Store) -> None:
    client = TestClient(create_app(store, Settings(server=settings().server, api=ApiSettings(allow_git_sources=True))))
    for source in ["/etc", "file:///srv/private.git", "/tmp/x.bundle", "fd::3", "ext::sh -c id",
                   "http://127.0.0.1:5432/x.git", "https://localhost/x.git", "ssh://10.0.0.7/x.git",
                   "git@[::1]:org/x.git", "http://169.254.169.254/x", "https://[::ffff:127.0.0.1]/x.git",
                   "https://0.0.0.0/x.git", "git@127.0.0.1:org/x.git"]:
        r = client.post("/api/v1/repos", json={"source": source, "id": "evil/x"}, headers=AUTH)
        assert r.status_code in (400, 403), (source, r.text)
    assert store.list_repos() == []


def test_an_allowed_public_git_url_is_stored_without_its_credentials(store: Store) -> None:
    client = TestClient(create_app(store, Settings(server=settings().server, api=ApiSettings(allow_git_sources=True))))
    r = client.post("/api/v1/repos", json={"source": "https://bob:hf_SECRET@93.184.215.14/org/x.git"},
                    headers=AUTH)
    assert r.status_code == 201, r.text
    assert r.json()["source"] == "https://93.184.215.14/org/x.git"
    assert "hf_SECRET" not in client.get("/api/v1/repos").text + client.get("/").text
    (repo,) = store.list_repos()
    assert "hf_SECRET" not in repo.source


def test_last_error_in_public_is_our_own_words(store: Store) -> None:
    store.add_repo("org/x", source="org/x", source_kind="hub")
    raw = "org/x: git fetch failed (128): fatal: unable to access 'http://127.0.0.1:9/x/': Empty reply from server"
    with store.session() as s:  # what a failed check leaves on the row
        from storage.tables import RepoRow

        row = s.get(RepoRow, "org/x")
        assert row is not None
        row.last_error, row.last_error_kind = raw, "unavailable"
        s.add(row)
        s.commit()
    client = _client(store)
    for text in (client.get("/api/v1/repos").text, client.get("/api/v1/repos/org/x").text, client.get("/").text):
        assert "Empty reply" not in text and "127.0.0.1" not in text
        assert "could not be reached" in text


@pytest.fixture(scope="module")
def slow_body_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, list[int]]]:
    """The real app under uvicorn, on its own SQLite store."""
    import uvicorn

    from storage import open_store

    store = open_store(f"sqlite:///{tmp_path_factory.mktemp('bodies') / 'hw.db'}")

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(store, settings()), log_level="warning")
    server = uvicorn.Server(config)
    t = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    t.start()
    while not server.started:
        threading.Event().wait(0.02)
    yield port, []
    server.should_exit = True
    t.join(5)
    store.close()


def _raw_post(port: int, path: str, headers: dict[str, str], body_bytes: int, chunked: bool = False) -> tuple[int, int]:
    """(status, bytes sent before the answer) for a POST that offers ``body_bytes`` of body."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        head = [f"POST {path} HTTP/1.1", "Host: x", "Content-Type: application/json"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        head.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {body_bytes}")
        s.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        sent = 0
        s.settimeout(0.05)
        answer = b""
        chunk = b"[" * 65536
        while sent < body_bytes:
            try:
                answer += s.recv(4096)
                if answer:
                    break
            except TimeoutError:
                pass
            try:
                s.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n" if chunked else chunk)
            except OSError:
                break
            sent += len(chunk)
        s.settimeout(10)
        while b"\r\n" not in answer:
            more = s.recv(4096)
            if not more:
                break
            answer += more
        return int(answer.split(b" ", 2)[1]), sent


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
@pytest.mark.parametrize(("path", "headers", "status"), [
    ("/api/v1/repos", {}, 401),
    ("/api/v1/subscriptions", {"Authorization": "Bearer wrong"}, 401),
    ("/api/v1/repos", AUTH, 413),
    ("/api/v1/plan", {}, 413),
])
def test_huge_bodies_are_refused_before_they_are_read(slow_body_server: tuple[int, list[int]], path: str,
                                                      headers: dict[str, str], status: int, chunked: bool) -> None:
    port, _ = slow_body_server
    code, sent = _raw_post(port, path, headers, 300_000_000, chunked=chunked)
    assert code == status
    assert sent < 20_000_000  # answered long before the 300 MB were pushed


def test_hostile_cursors_never_500(store: Store) -> None:
    seed_history(store, "org/model", n=3)
    client = _client(store)
    for cursor in ["²", "9" * 18, str(2**63), str(2**31), "-1", "1e3", "٣"]:
        api = client.get("/api/v1/repos/org/model/revisions", params={"cursor": cursor})
        assert api.status_code == 400, (cursor, api.text)
        page = client.get("/repos/org/model", params={"cursor": cursor})
        assert page.status_code == 200, cursor
    assert client.get("/api/v1/repos/org/model/revisions", params={"cursor": str(2**31 - 1)}).status_code == 200


def test_like_wildcards_match_no_revision(store: Store) -> None:
    seed_history(store, "org/model", n=3)
    client = _client(store)
    for rev in ["%%%%", "____", "%", "a%", "0000%", "%25%25%25%25"]:
        assert store.get_revision("org/model", rev) is None, rev
        assert client.get(f"/repos/org/model/{rev}").status_code == 404, rev


def test_links_do_not_follow_the_clients_host(store: Store) -> None:
    seed_history(store, "org/model", n=3)
    client = _client(store, public_url="https://hubwatch.example")
    feed = client.get("/feeds/all.atom", headers={"Host": "evil.example"}).text
    assert "evil.example" not in feed and "https://hubwatch.example/advisories/" in feed
    unconfigured = _client(store).get("/feeds/org/model.atom", headers={"Host": "evil.example"}).text
    assert "evil.example" not in unconfigured
    slash = client.get("/api/v1/repos/", headers={"Host": "evil.example"}, follow_redirects=False)
    assert "evil.example" not in slash.headers.get("location", "")


def test_pages_carry_security_headers(store: Store) -> None:
    seed_history(store, "org/model", n=2)
    client = _client(store)
    for path in ("/", "/repos/org/model", "/repos/org/nothing"):
        r = client.get(path)
        assert r.headers["x-content-type-options"] == "nosniff"
        assert "default-src 'none'" in r.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
        assert r.headers["x-frame-options"] == "DENY"
    assert client.get("/api/v1/repos").headers["x-content-type-options"] == "nosniff"


def test_querybatch_work_is_budgeted(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from storage.commit_answers import CommitAnswers, KeptQueries
    from tracker.api import osv_routes

    seed_history(store, "org/model", n=3)
    real = osv_routes.commit_answers

    def slow(*a: Any, **kw: Any) -> Any:  # one look-up answers the batch's commits: past the budget
        time.sleep(0.06)
        return real(*a, **kw)

    monkeypatch.setattr(osv_routes, "commit_answers", slow)
    kept = KeptQueries.batch_json  # and the one pass over kept chains, which answers first

    def slow_kept(*a: Any, **kw: Any) -> Any:
        time.sleep(0.06)
        return kept(*a, **kw)

    monkeypatch.setattr(KeptQueries, "batch_json", slow_kept)
    at_stamp = CommitAnswers.batch_at  # (PostgreSQL: the label map's pass, on the loop after a stamp read)

    def slow_at(*a: Any, **kw: Any) -> Any:
        time.sleep(0.06)
        return at_stamp(*a, **kw)

    monkeypatch.setattr(CommitAnswers, "batch_at", slow_at)
    monkeypatch.setattr(osv_routes, "BATCH_SECONDS", 0.05)
    client = TestClient(create_app(store, settings()))
    queries = [{"commit": f"{i:040x}"} for i in range(1000)]
    started = time.monotonic()
    r = client.post("/v1/querybatch", json={"queries": queries})
    assert r.status_code == 429 and r.json()["code"] == 8
    assert time.monotonic() - started < 5


def test_a_compare_is_computed_once_however_often_it_is_asked(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 16, point 4: the compare route re-rendered both sides on every request."""
    from storage import open_store
    from tests.daemon.helpers import tiny_repo
    from tests.e2e.cli_helpers import Cli
    from tracker.api import compute

    b = tiny_repo(tmp_path / "r.git", commits=3)
    db = f"sqlite:///{tmp_path / 'hw.db'}"
    Cli(tmp_path / "cli", db).ok("track", str(b.path), "--as", "org/model")
    store = open_store(db)
    shas = [r.sha for r in store.history("org/model")]
    calls: list[str] = []
    real = compute._compare

    def counting(*a: Any) -> Any:
        calls.append(a[3].sha)
        return real(*a)

    monkeypatch.setattr(compute, "_compare", counting)
    client = _client(store)
    url = f"/api/v1/repos/org/model/compare/{shas[-1]}...{shas[0]}"
    answers = [client.get(url) for _ in range(5)]
    assert {r.status_code for r in answers} == {200} and len({r.text for r in answers}) == 1
    assert len(calls) == 1 and answers[0].json()["changes"]
    store.close()


@pytest.mark.parametrize("path", ["/v1/query", "/v1/querybatch", "/api/v1/plan", "/hooks/huggingface"])
def test_a_client_that_leaves_mid_body_is_not_an_error(slow_body_server: tuple[int, list[int]], path: str,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    """Every route that reads a body: the client's leaving is not logged as the app's failure."""
    port, _ = slow_body_server
    with caplog.at_level(logging.ERROR):
        for _ in range(5):
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          f"Content-Length: 100000\r\n\r\n{{\"commit\": \"".encode() + b"a" * 5000)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:  # served after them
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert s.recv(64).startswith(b"HTTP/1.1 200")
        time.sleep(0.5)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
