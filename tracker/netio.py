"""Layer 1½ (shared by the adapters): an httpcore network backend with a wall-clock deadline.

httpx's timeouts bound each read; a server trickling one byte per read holds a request for as
long as it likes. Under :func:`deadline`, every connect, read and write of the backend gets at
most the time left, so one call never outlives its deadline, however the peer trickles. The
backend can also connect to given addresses instead of resolving the host (a webhook goes to
the addresses its destination check passed; TLS still verifies the host name). Used by
``tracker.hub`` (every Hub call) and ``advisories.webhook_http`` (every delivery).

The address policy shared by webhooks and git sources added over the API is here too:
:func:`forbidden_reason` says why an address is not a public destination.

Imports: stdlib, httpcore, httpx. No project module.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import ipaddress
import socket
import ssl
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import httpcore
import httpx

_WRITE_CHUNK = 16 * 1024

#: ``resolve(host, port) -> addresses``: the system's resolver, or a test's.
Resolver = Callable[[str, int], list[str]]


def system_resolver(host: str, port: int) -> list[str]:
    """The addresses ``getaddrinfo`` gives for ``host`` (sorted, deduplicated)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


def forbidden_reason(address: str) -> str | None:
    """Why an IP address is no public destination, or None when it is one."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for name, flag in (
        ("loopback", ip.is_loopback),
        ("unspecified", ip.is_unspecified),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("private", ip.is_private),
        ("reserved", ip.is_reserved),
    ):
        if flag:
            return name
    if not ip.is_global:
        return "non-global"
    return None
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("hubwatch_deadline", default=None)


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every I/O of a :class:`DeadlineBackend` in this block ends ``seconds`` from now at the latest."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _left(timeout: float | None, exc: type[Exception]) -> float | None:
    end = _DEADLINE.get()
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise exc("the call's wall-clock deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        # in chunks: a peer that reads slowly cannot stretch one large send
        for i in range(0, len(buffer), _WRITE_CHUNK):
            self._inner.write(buffer[i : i + _WRITE_CHUNK], _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        left = _left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, left))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    """The sync backend under :func:`deadline`; connects to ``addresses`` (in order) when given."""

    def __init__(self, addresses: Sequence[str] = ()) -> None:
        self.addresses = list(addresses)
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        last: Exception | None = None
        for address in self.addresses or [host]:
            try:
                stream = self._inner.connect_tcp(address, port, _left(timeout, httpcore.ConnectTimeout),
                                                 local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as e:
                last = e
                continue
            return _DeadlineStream(stream)
        assert last is not None
        raise last

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.connect_unix_socket(path, _left(timeout, httpcore.ConnectTimeout),
                                                               socket_options))

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """One TLS context for every client (building one costs ~20 ms)."""
    return httpx.create_ssl_context()


class DeadlineTransport(httpx.HTTPTransport):
    """An httpx transport over :class:`DeadlineBackend`; no proxy from the environment, no retries."""

    def __init__(self, addresses: Sequence[str] = (), *, max_connections: int = 10) -> None:
        super().__init__(verify=ssl_context(), trust_env=False, retries=0)
        # httpx builds its pool without a network_backend parameter: swap in one that has it
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context(), max_connections=max_connections, retries=0,
            network_backend=DeadlineBackend(addresses),
        )
