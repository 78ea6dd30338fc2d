"""One webhook POST: a total deadline a trickling receiver cannot stretch, the connection pinned
to the address the destination check passed (DNS rebinding), Retry-After read."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from advisories.webhooks import new_secret, parse_retry_after, post
from tests.webhooks.receiver import Receiver


@contextmanager
def trickler(payload: bytes, every: float) -> Iterator[int]:
    """A server that answers each connection ``payload`` one byte every ``every`` seconds."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                for b in payload:
                    if stop.wait(every):
                        return
                    try:
                        conn.sendall(bytes([b]))
                    except OSError:
                        break

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield int(srv.getsockname()[1])
    finally:
        stop.set()
        srv.close()


def _post(url: str, **kw):  # type: ignore[no-untyped-def]
    return post(url, secrets=[new_secret()], msg_id="x_HUBWATCH-a.1", timestamp=int(time.time()), body=b"{}", **kw)


@pytest.mark.parametrize("payload", [b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n",
                                     b"HTTP/1.1 200 OK\r\nX-Padding: " + b"a" * 200 + b"\r\n\r\n"])
def test_a_trickling_receiver_cannot_stretch_the_deadline(payload: bytes) -> None:
    with trickler(payload, every=0.2) as port:  # each byte well inside any per-read timeout
        started = time.monotonic()
        outcome = _post(f"http://127.0.0.1:{port}/hook", deadline_seconds=1.0)
        took = time.monotonic() - started
    assert not outcome.ok and "Timeout" in (outcome.error or "")
    assert took < 1.6  # the whole answer would take 9 s or more


def test_the_connection_goes_to_the_checked_address_not_a_new_lookup() -> None:
    with Receiver() as rx:
        port = rx.server.server_address[1]
        # a name that does not resolve at all: only the pinned address can reach the receiver
        outcome = _post(f"http://rebinding.invalid:{port}/hook", addresses=["127.0.0.1"])
        assert outcome.ok and outcome.status_code == 204
        assert rx.requests[0].headers["host"] == f"rebinding.invalid:{port}"  # the name is still the Host


def test_retry_after() -> None:
    assert parse_retry_after("120") == 120
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412480 - 30) == 30
    assert parse_retry_after("999999999") == 24 * 3600  # capped at a day
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None
    with Receiver(answer=lambda _r, _n: (503, {"Retry-After": "7"})) as rx:
        outcome = _post(rx.url)
    assert not outcome.ok and outcome.busy and outcome.retry_after == 7
