"""The head check's own path (issue 17): one request per repo over connections the repos share,
and what it keeps of the full client: redirects followed, the token kept on its origin.

A small HTTP/1.1 server on loopback counts the connections it accepts and answers a rename
(307 to the new name, on its own origin or on the emulator's) the way the Hub does.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.hub.conftest import REPO, Tiny
from tests.hubemu import HubEmulator
from tracker.errors import RepoNotFound, SourceUnavailable
from tracker.hub.connections import HubConnections
from tracker.hub.hf import HfSource

SHA = "0123456789abcdef0123456789abcdef01234567"
TOKEN = "hf_SECRETtoken123"


class _Hub(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.connections = 0
        self.seen: list[tuple[str, str | None]] = []  # (path, authorization)
        self.redirect_to: str | None = None  # where a rename points (another origin: the emulator)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def process_request(self, request: Any, client_address: Any) -> None:
        self.connections += 1
        super().process_request(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a shared pool reuses the connection
    server: _Hub

    def do_GET(self) -> None:
        self.server.seen.append((self.path, self.headers.get("authorization")))
        if self.path.startswith("/api/models/org/old/"):  # renamed: to org/new here, or to the emulator's repo
            elsewhere = self.server.redirect_to
            new = self.path.replace("/org/old/", f"/{REPO}/" if elsewhere else "/org/new/")
            self._send(307, b"", [("Location", (elsewhere or self.server.url) + new)])
        elif self.path.startswith("/api/models/org/loop/"):  # a redirect loop
            self._send(307, b"", [("Location", self.path)])
        elif self.path.startswith("/api/models/org/"):
            self._send(200, json.dumps({"_id": "x", "id": "org/new", "sha": SHA}).encode(),
                       [("Content-Type", "application/json")])
        else:
            self._send(401, b'{"error": "Repository not found"}', [("X-Error-Code", "RepoNotFound")])

    def _send(self, status: int, body: bytes, headers: list[tuple[str, str]]) -> None:
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.fixture
def local() -> Iterator[_Hub]:
    server = _Hub()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_repos_sharing_connections_cost_one_connection_not_one_each(local: _Hub) -> None:
    pool = HubConnections()
    for i in range(20):
        src = HfSource(f"org/m{i}", endpoint=local.url, timeout=5, connections=pool)
        assert src.resolve_head("main") == SHA
        src.close()  # a shared pool outlives the source
    assert len(local.seen) == 20 and local.connections == 1
    pool.close()
    for i in range(3):  # a source of its own opens (and closes) its own connection
        with HfSource(f"org/m{i}", endpoint=local.url, timeout=5) as src:
            src.resolve_head("main")
    assert local.connections == 4
    assert all(path.endswith("/revision/main?expand=sha") for path, _ in local.seen)


def test_a_renamed_repo_is_followed_on_its_origin_with_the_token(local: _Hub) -> None:
    with HfSource("org/old", endpoint=local.url, timeout=5, token=TOKEN, connections=HubConnections()) as src:
        assert src.resolve_head("main") == SHA
    assert [p for p, _ in local.seen] == ["/api/models/org/old/revision/main?expand=sha",
                                          "/api/models/org/new/revision/main?expand=sha"]
    assert all(auth == f"Bearer {TOKEN}" for _, auth in local.seen)


def test_a_redirect_to_another_origin_does_not_carry_the_token(
    local: _Hub, hub: HubEmulator, tiny: Tiny
) -> None:
    local.redirect_to = hub.url
    with HfSource("org/old", endpoint=local.url, timeout=5, token=TOKEN, connections=HubConnections()) as src:
        assert src.resolve_head("main") == tiny.head
    assert local.seen[0][1] == f"Bearer {TOKEN}"
    assert [r.route for r in hub.requests] == ["model_info"]
    assert "authorization" not in hub.requests[0].headers


def test_errors_on_the_shared_path_are_the_hubs(local: _Hub) -> None:
    with HfSource("acme/gone", endpoint=local.url, timeout=5, token=TOKEN, connections=HubConnections()) as src, \
            pytest.raises(RepoNotFound, match="401 RepoNotFound: Repository not found"):
        src.resolve_head("main")


def test_a_redirect_loop_ends(local: _Hub) -> None:
    with HfSource("org/loop", endpoint=local.url, timeout=5, connections=HubConnections()) as src, \
            pytest.raises(SourceUnavailable, match="more than 10 redirects"):
        src.resolve_head("main")
    assert len(local.seen) == 11
