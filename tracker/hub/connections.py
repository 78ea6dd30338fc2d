"""Stage 1 (source) helper: the Hub connections a daemon's checks share.

A check used to open a client of its own: a new TCP (and TLS) connection for an unchanged
repo's one request. Here one pooled client serves every repo, with the wall-clock deadline
of ``tracker.netio`` on every request (issue 10) and no cookies kept.

Imports: httpx, ``tracker.netio``.
"""

from __future__ import annotations

import threading
from http.cookiejar import CookieJar, DefaultCookiePolicy

import httpx

from tracker.netio import DeadlineTransport, ssl_context


class HubConnections:
    """One pool of deadline-bound connections shared by the sources of many repos (thread-safe).

    Connections and TLS sessions outlive a repo's check: a daemon's unchanged cycle costs one
    request per repo and no connection setup. ``client`` (redirects followed, no cookies kept:
    the token travels in a header, and one repo's answer must not shape the next repo's
    request) and ``transport`` (the bare pool under it, for the head check) are built on
    first use.
    """

    def __init__(self, *, max_connections: int = 10) -> None:
        self.max_connections = max_connections
        self._pair: tuple[httpx.Client, DeadlineTransport] | None = None
        self._lock = threading.Lock()

    def _built(self) -> tuple[httpx.Client, DeadlineTransport]:
        pair = self._pair
        if pair is None:
            with self._lock:
                if self._pair is None:
                    transport = DeadlineTransport(max_connections=self.max_connections)
                    client = httpx.Client(
                        follow_redirects=True, verify=ssl_context(), transport=transport,
                        cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])),
                    )
                    self._pair = (client, transport)
                pair = self._pair
        return pair

    @property
    def client(self) -> httpx.Client:
        return self._built()[0]

    @property
    def transport(self) -> DeadlineTransport:
        return self._built()[1]

    def close(self) -> None:
        with self._lock:
            pair, self._pair = self._pair, None
        if pair is not None:
            pair[0].close()
