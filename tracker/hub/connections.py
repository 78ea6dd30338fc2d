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
    """One pooled, deadline-bound httpx client shared by the sources of many repos (thread-safe).

    Connections and TLS sessions outlive a repo's check: a daemon's unchanged cycle costs one
    request per repo and no connection setup. No cookies are kept (the token travels in a
    header, and one repo's answer must not shape the next repo's request). Built on first use.
    """

    def __init__(self, *, max_connections: int = 10) -> None:
        self.max_connections = max_connections
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    @property
    def client(self) -> httpx.Client:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = new_client(self.max_connections)
        return self._client

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()


def new_client(max_connections: int = 10) -> httpx.Client:
    """A client over the deadline transport: redirects followed, no proxy from the environment,
    no retries, no cookies."""
    # one TLS context for every client (tracker.netio.ssl_context): building one costs ~20 ms
    return httpx.Client(
        follow_redirects=True, verify=ssl_context(), transport=DeadlineTransport(max_connections=max_connections),
        cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])),
    )
