"""A webhook receiver on 127.0.0.1: records every POST and answers as a test scripts it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """``answer(received, n_seen_for_this_id) -> status | (status, headers)`` decides each
    response (default 204)."""

    answer: Callable[[Received, int], int | tuple[int, dict[str, str]]] = lambda _r, _n: 204
    requests: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                got = Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with receiver.lock:
                    seen = sum(1 for r in receiver.requests if r.headers.get("webhook-id") == got.headers.get("webhook-id"))
                    receiver.requests.append(got)
                answered = receiver.answer(got, seen)
                status, extra = answered if isinstance(answered, tuple) else (answered, {})
                self.send_response(status)
                for k, v in extra.items():
                    self.send_header(k, v)
                if 300 <= status < 400:
                    self.send_header("Location", "/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def ids(self) -> list[str]:
        return [r.headers["webhook-id"] for r in self.requests]

    def verified(self, secret: str) -> list[Any]:
        """Every request checked by the standardwebhooks library; raises on a bad one."""
        return [Webhook(secret).verify(r.body, r.headers) for r in self.requests]
