"""A git URL an API client added is held to public addresses at every fetch, not only when it
was added (issue 16, point 2): a rebinding resolver answers a public address to the check at
add time and 127.0.0.1 later; the fetch is refused and nothing reaches the loopback server.
Every fetch goes to the addresses its check passed: git resolves nothing itself."""

from __future__ import annotations

import socket
import subprocess
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from storage import open_store
from tests.api.data import TOKEN
from tests.daemon.helpers import config_bytes
from tests.e2e.cli_helpers import Cli
from tests.hubemu import RepoBuilder
from tracker.api.app import create_app
from tracker.config import ApiSettings, ServerSettings, Settings
from tracker.errors import SourceRefused
from tracker.hub._gitnet import PublicFetchPolicy
from tracker.hub.localgit import GitSource
from tracker.pipeline.sources import SourceFactory

PUBLIC = "93.184.215.14"


class _GitHttp:
    """git's dumb HTTP protocol on 127.0.0.1, serving ``root``; ``hosts`` lists each request's
    Host header. ``redirect_to``: every request answered 301 to that base instead."""

    def __init__(self, root: Path, redirect_to: str | None = None):
        self.hosts: list[str] = []
        hosts, target = self.hosts, redirect_to

        class Handler(SimpleHTTPRequestHandler):
            def do_GET(self) -> None:
                hosts.append(self.headers.get("host", ""))
                if target is not None:
                    self.send_response(301)
                    self.send_header("Location", target + self.path)
                    self.end_headers()
                    return
                super().do_GET()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(root)))
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _served_repo(tmp_path: Path) -> RepoBuilder:
    b = RepoBuilder.init(tmp_path / "www" / "evil.git")
    b.commit({"config.json": config_bytes(), "secret.txt": b"internal only"}, title="internal")
    subprocess.run(["git", "-C", str(b.path), "update-server-info"], check=True)
    return b


@pytest.fixture
def git_http(tmp_path: Path) -> Iterator[_GitHttp]:
    _served_repo(tmp_path)
    server = _GitHttp(tmp_path / "www")
    yield server
    server.close()


def test_a_url_that_rebinds_to_loopback_after_it_was_added_is_never_fetched(
        tmp_path: Path, git_http: _GitHttp, monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.getaddrinfo
    answers: list[str] = []

    def rebinding(host: Any, port: Any, *args: Any, **kw: Any) -> Any:
        if host != "rebind.example":
            return real(host, port, *args, **kw)
        address = PUBLIC if not answers else "127.0.0.1"  # public to the first question only
        answers.append(address)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port or 0))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    db = f"sqlite:///{tmp_path / 'hw.db'}"
    store = open_store(db)
    app = create_app(store, Settings(server=ServerSettings(api_token=TOKEN), api=ApiSettings(allow_git_sources=True)))
    url = f"http://rebind.example:{git_http.port}/evil.git"
    r = TestClient(app).post("/api/v1/repos", json={"source": url, "id": "evil/rebind"},
                             headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 201, r.text
    assert answers == [PUBLIC]  # the add-time check passed on the public answer

    polled = Cli(tmp_path / "cli", db).ok("poll", "--json").json()
    assert [(p["repo"], p["status"]) for p in polled] == [("evil/rebind", "error")]
    assert answers[1:] == ["127.0.0.1"]  # asked again at fetch time, and refused
    assert git_http.hosts == []  # not one request reached the loopback server
    repo = store.get_repo("evil/rebind")
    assert repo is not None and repo.added_by == "api" and repo.last_error_kind == "refused"
    assert repo.head_sha is None and store.history("evil/rebind") == []
    shown = TestClient(app).get("/api/v1/repos").json()[0]["last_error"]
    assert shown == "the repository's address is not a public one; it is not fetched"
    store.close()


def test_every_fetch_goes_to_the_address_its_check_passed(tmp_path: Path, git_http: _GitHttp) -> None:
    """The name does not resolve at all: git can only reach the server by the pinned address.
    (The policy here lets loopback pass, since no public server is at hand in a test.)"""
    asked: list[str] = []

    def resolve(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["127.0.0.1"]

    policy = PublicFetchPolicy(resolve, refuse_reason=lambda address: None)
    url = f"http://pinned.invalid:{git_http.port}/evil.git"
    with GitSource(url, "evil/pinned", work_dir=tmp_path / "work", network=policy) as src:
        head = src.resolve_head("main")
        listing = src.list_commits("main")
        assert [c.sha for c in listing.commits] == [head]
        b = RepoBuilder(tmp_path / "www" / "evil.git")
        newer = b.commit({"config.json": config_bytes(eos_token_id=7)}, title="newer")
        subprocess.run(["git", "-C", str(b.path), "update-server-info"], check=True)
        assert src.resolve_head("main") == newer
        assert src.list_commits("main", stop_at=[head]).commits[0].sha == newer  # fetched, pinned
    assert len(asked) >= 3 and set(asked) == {"pinned.invalid"}  # every network call checked again
    assert git_http.hosts and set(git_http.hosts) == {f"pinned.invalid:{git_http.port}"}
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo("pinned.invalid", git_http.port)  # so git could not have resolved it


def test_a_pinned_fetch_never_follows_a_redirect(tmp_path: Path, git_http: _GitHttp) -> None:
    """A checked server answering 301 to an internal one would otherwise be an SSRF hop."""
    front = _GitHttp(tmp_path, redirect_to=f"http://127.0.0.1:{git_http.port}")
    try:
        policy = PublicFetchPolicy(lambda host, port: ["127.0.0.1"], refuse_reason=lambda a: None)
        src = GitSource(f"http://front.invalid:{front.port}/evil.git", "evil/hop", work_dir=tmp_path / "w",
                        network=policy)
        with pytest.raises(Exception) as raised:
            src.list_commits("main")
        assert not isinstance(raised.value, AssertionError)
        assert front.hosts and git_http.hosts == []
    finally:
        front.close()


@pytest.mark.parametrize("location", ["/srv/private.git", "file:///srv/private.git", "./x.bundle",
                                      "http://127.0.0.1/x.git", "https://[::ffff:10.0.0.1]/x.git",
                                      "git@169.254.169.254:org/x.git"])
def test_a_source_an_api_client_added_never_reaches_a_local_or_private_place(location: str,
                                                                            tmp_path: Path) -> None:
    src = SourceFactory(cache_dir=tmp_path).open("evil/x", location, "git", added_by="api")
    with pytest.raises(SourceRefused):
        src.resolve_head("main")
    with pytest.raises(SourceRefused):
        src.list_commits("main")


def test_git_and_ssh_fetches_are_pinned_too() -> None:
    policy = PublicFetchPolicy(lambda host, port: [PUBLIC, "2606:2800:220:1::1"])
    git = policy.pin("git://code.example:9419/org/x.git", "o/x")
    assert git.location == f"git://{PUBLIC}:9419/org/x.git" and git.addresses == (PUBLIC,)
    for location in ("ssh://git@code.example/org/x.git", "git@code.example:org/x.git"):
        ssh = policy.pin(location, "o/x")
        assert ssh.location == location and ssh.ssh_command is not None
        assert f"-oHostName={PUBLIC}" in ssh.ssh_command and "-oHostKeyAlias=code.example" in ssh.ssh_command
    http = policy.pin("https://code.example/org/x.git", "o/x")
    assert f"http.curloptResolve=code.example:443:{PUBLIC},[2606:2800:220:1::1]" in http.config
    assert "http.followRedirects=false" in http.config and "https_proxy" in http.drop_env
    rebound = PublicFetchPolicy(lambda host, port: [PUBLIC, "10.1.2.3"])  # one private answer is enough
    with pytest.raises(SourceRefused, match="private address"):
        rebound.pin("https://code.example/org/x.git", "o/x")
