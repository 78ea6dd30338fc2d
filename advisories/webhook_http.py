"""Stage 7 (emit) helper: the connection a webhook POST goes over (issue 10, shared with 16).

Two properties httpx does not give by itself:

- **Pinned addresses.** The destination check resolves the host and refuses private
  addresses; a second lookup at connect time could answer differently (DNS rebinding). The
  connection goes to the addresses that passed the check, while TLS still verifies the
  certificate against the host name (SNI), as httpcore starts TLS with the request's host.
- **A total wall-clock deadline.** httpx's timeouts bound each read; a receiver trickling one
  byte per read would hold a delivery for ever. Every connect, read and write here gets at
  most the time left until the deadline, so one delivery never outlives it.

Imports: stdlib, httpx, httpcore.
"""

from __future__ import annotations

import functools
import ssl
import time
from collections.abc import Iterable, Sequence
from typing import Any

import httpcore
import httpx

_WRITE_CHUNK = 16 * 1024


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, deadline: float) -> None:
        self._inner, self._deadline = inner, deadline

    def _left(self, timeout: float | None, exc: type[Exception]) -> float:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise exc("the delivery's deadline passed")
        return left if timeout is None else min(timeout, left)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        # in chunks: a receiver that reads slowly cannot stretch one large send
        for i in range(0, len(buffer), _WRITE_CHUNK):
            self._inner.write(buffer[i : i + _WRITE_CHUNK], self._left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        left = self._left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, left), self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class PinnedBackend(httpcore.NetworkBackend):
    """Connects to ``addresses`` (in order) instead of resolving the host; all I/O by ``deadline``."""

    def __init__(self, addresses: Sequence[str], deadline: float) -> None:
        self.addresses, self.deadline = list(addresses), deadline
        self._inner = httpcore.SyncBackend()
        self.connected_to: str | None = None

    def connect_tcp(
        self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        last: Exception | None = None
        for address in self.addresses or [host]:
            left = self.deadline - time.monotonic()
            if left <= 0:
                break
            try:
                stream = self._inner.connect_tcp(address, port, left if timeout is None else min(timeout, left),
                                                 local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as e:
                last = e
                continue
            self.connected_to = address
            return _DeadlineStream(stream, self.deadline)
        if last is not None:
            raise last
        raise httpcore.ConnectTimeout("the delivery's deadline passed")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class PinnedTransport(httpx.HTTPTransport):
    """An httpx transport over :class:`PinnedBackend`: one connection, no retries, no proxy."""

    def __init__(self, backend: PinnedBackend) -> None:
        super().__init__(verify=_ssl_context(), trust_env=False, retries=0)
        # httpx builds its pool without a network_backend parameter: swap in one that has it
        self._pool = httpcore.ConnectionPool(
            ssl_context=_ssl_context(), max_connections=1, retries=0, network_backend=backend,
        )


def pinned_client(addresses: Sequence[str], *, deadline_seconds: float) -> tuple[httpx.Client, PinnedBackend]:
    """A client for one delivery: connects only to ``addresses`` (none: the host, resolved as usual)
    and gives up ``deadline_seconds`` after this call, however the receiver trickles."""
    backend = PinnedBackend(addresses, time.monotonic() + deadline_seconds)
    timeout = httpx.Timeout(deadline_seconds)
    return httpx.Client(transport=PinnedTransport(backend), timeout=timeout, follow_redirects=False,
                        trust_env=False), backend
