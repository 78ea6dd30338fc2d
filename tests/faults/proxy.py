"""A fault proxy on 127.0.0.1: real TCP between a client and a server, faults on the wire.

``HttpFaultProxy(upstream_url)`` sits between huggingface_hub (or httpx, or a deliverer) and
an HTTP server (the Hub emulator, a webhook receiver). It parses each request with h11, passes
it on, reads the whole answer, and hands it back as it is, or broken as a rule says::

    with HttpFaultProxy(hub.url) as proxy:
        HfSource(repo, endpoint=proxy.url)
        proxy.add("status", path=r"/resolve/", status=404, headers={"X-Error-Code": "EntryNotFound"}, times=1)
        proxy.add("reset", path=r"\\.safetensors$", range=True, after=20)   # RST 20 bytes into the body
        proxy.add("reset")                                # RST before a byte of the answer
        proxy.add("trickle", path=r"/tree/", every=0.5)                      # one byte each 0.5 s
        proxy.add("short", path=r"/resolve/", keep=8)     # a well-formed answer, 8 bytes of the body
        proxy.add("truncate", keep=8)                     # the full Content-Length, 8 bytes, close
        proxy.add("hang", seconds=60)                     # the request read, never an answer
        proxy.add("slow", seconds=2.0)                    # the whole answer, late
        proxy.add("status", status=503, headers={"Retry-After": "1"}, skip=2, times=5)  # by schedule

Rules match on ``method``, a ``path`` regular expression (searched in the request target),
``range`` (the request has a Range header or not) and a schedule: the first ``skip`` matches
pass, then ``times`` are broken (None: all), optionally only within ``window`` seconds of the
rule being added. The first rule that matches wins. Absolute URLs of the upstream in answer
headers (Link pagination, Location) are rewritten to the proxy, so a client stays behind it.

``TcpFaultProxy(host, port)`` passes raw bytes (a database connection): ``cut(seconds)`` resets
every open connection and refuses new ones for that long, as a server restart does;
``partition()`` kills the clients' side only and leaves the server's open and silent, until
``heal()``.
"""

from __future__ import annotations

import contextlib
import re
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import h11

KINDS = ("status", "reset", "trickle", "short", "truncate", "hang", "slow")


@dataclass
class Rule:
    kind: str
    method: str | None = None
    path: str | None = None
    range: bool | None = None
    skip: int = 0
    times: int | None = None
    window: float | None = None
    params: dict[str, Any] = field(default_factory=dict)
    added: float = field(default_factory=time.monotonic)
    seen: int = 0
    hits: int = 0

    def take(self, method: str, target: str, has_range: bool) -> bool:
        """Whether this request is broken by this rule (counts it either way when it matches)."""
        if self.method is not None and self.method != method:
            return False
        if self.path is not None and not re.search(self.path, target):
            return False
        if self.range is not None and self.range != has_range:
            return False
        if self.window is not None and time.monotonic() - self.added > self.window:
            return False
        self.seen += 1
        if self.seen <= self.skip or (self.times is not None and self.hits >= self.times):
            return False
        self.hits += 1
        return True


@dataclass
class Passed:
    """One request through the proxy: what was asked, what the client got."""

    method: str
    target: str
    status: int = 0  # 0: no answer reached the client (reset, hang)
    fault: str | None = None
    at: float = field(default_factory=time.time)


class _Stopped(Exception):
    pass


def _reset(sock: socket.socket, *, wake: bool = False) -> None:
    """Close with RST (SO_LINGER 0), not FIN: the peer sees 'connection reset'. ``wake``: another
    thread may be blocked reading it, which a bare close() would leave connected (on Linux the
    kernel keeps the socket while a recv() holds it), so shut it down first."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    if wake:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
    sock.close()


class _Listener:
    """Accept loop on 127.0.0.1:0, a daemon thread per connection; stop() ends them all."""

    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._server.getsockname()[1])
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._thread = threading.Thread(target=self._accept, daemon=True, name=f"fault-proxy-{self.port}")

    def start(self) -> Any:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        with contextlib.suppress(OSError):  # wakes the accept() (a bare close() does not, on Linux, and
            self._server.shutdown(socket.SHUT_RDWR)  # its fd number may then serve someone else's socket)
        self._thread.join(5)
        self._server.close()
        with self._lock:
            conns, self._open = list(self._open), set()
        for c in conns:
            _reset(c, wake=True)

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _track(self, sock: socket.socket, add: bool) -> None:
        with self._lock:
            (self._open.add if add else self._open.discard)(sock)

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if self.stopping.is_set():
                _reset(client)
                return
            if not self.admit():
                _reset(client)
                continue
            self._track(client, True)
            threading.Thread(target=self._serve_and_close, args=(client,), daemon=True).start()

    def _serve_and_close(self, client: socket.socket) -> None:
        try:
            self.serve(client)
        except (OSError, h11.ProtocolError, _Stopped):
            pass
        finally:
            self._track(client, False)
            with contextlib.suppress(OSError):
                client.close()

    def admit(self) -> bool:
        return True

    def serve(self, client: socket.socket) -> None:
        raise NotImplementedError


class HttpFaultProxy(_Listener):
    """HTTP/1.1 in front of ``upstream`` (``http://host:port``), faults by rule."""

    def __init__(self, upstream: str) -> None:
        super().__init__()
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.upstream_base = f"{parts.scheme}://{parts.netloc}"
        self.url = f"http://127.0.0.1:{self.port}"
        self.rules: list[Rule] = []
        self.passed: list[Passed] = []
        self._rules_lock = threading.Lock()

    def add(self, kind: str, *, method: str | None = None, path: str | None = None, range: bool | None = None,
            skip: int = 0, times: int | None = None, window: float | None = None, **params: Any) -> Rule:
        if kind not in KINDS:
            raise ValueError(f"unknown fault {kind!r}; one of {KINDS}")
        rule = Rule(kind, method, path, range, skip, times, window, dict(params))
        with self._rules_lock:
            self.rules.append(rule)
        return rule

    def remove(self, rule: Rule) -> None:
        with self._rules_lock:
            self.rules.remove(rule)

    def faults(self, kind: str | None = None) -> list[Passed]:
        """Requests that were broken (of ``kind``)."""
        return [p for p in self.passed if p.fault is not None and (kind is None or p.fault == kind)]

    def _match(self, method: str, target: str, has_range: bool) -> Rule | None:
        with self._rules_lock:
            return next((r for r in self.rules if r.take(method, target, has_range)), None)

    # ---------------------------------------------------------------- one client connection
    def serve(self, client: socket.socket) -> None:
        conn = h11.Connection(h11.SERVER)
        while not self.stopping.is_set():
            request, body = self._read_request(client, conn)
            if request is None:
                return
            method, target = request.method.decode(), request.target.decode()
            headers = [(k.decode().lower(), v.decode()) for k, v in request.headers]
            rec = Passed(method, target)
            self.passed.append(rec)
            rule = self._match(method, target, any(k == "range" for k, _ in headers))
            rec.fault = rule.kind if rule else None
            if rule is not None and rule.kind == "hang":
                self.stopping.wait(float(rule.params.get("seconds", 60)))
                _reset(client)
                return
            if rule is not None and rule.kind == "status":
                status = int(rule.params.get("status", 503))
                extra = [(str(k), str(v)) for k, v in dict(rule.params.get("headers", {})).items()]
                payload = str(rule.params.get("body", "")).encode()
                answer = (status, [*extra, ("content-type", "text/plain")], payload)
            else:
                answer = self._forward(method, target, headers, body)
            if rule is not None and rule.kind == "slow":
                self.stopping.wait(float(rule.params.get("seconds", 1.0)))
            status, resp_headers, payload = answer
            rec.status = status
            if not self._answer(client, conn, method, status, resp_headers, payload, rule):
                return
            if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()

    def _read_request(self, client: socket.socket, conn: h11.Connection) -> tuple[h11.Request | None, bytes]:
        request: h11.Request | None = None
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = client.recv(65536)
                conn.receive_data(data)
                if not data and request is None:
                    return None, b""
                continue
            if isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                return request, bytes(body)
            elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                return None, b""

    def _forward(self, method: str, target: str, headers: list[tuple[str, str]],
                 body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        """The request as it came (body re-framed by Content-Length), the answer read whole."""
        keep = [(k, v) for k, v in headers if k not in ("connection", "transfer-encoding", "content-length",
                                                        "keep-alive")]
        keep += [("connection", "close"), ("content-length", str(len(body)))]
        up = h11.Connection(h11.CLIENT)
        with socket.create_connection(self.upstream, timeout=120) as sock:
            sock.sendall(up.send(h11.Request(method=method, target=target, headers=keep)) or b"")
            sock.sendall((up.send(h11.Data(data=body)) or b"") if body else b"")
            sock.sendall(up.send(h11.EndOfMessage()) or b"")
            response: h11.Response | None = None
            payload = bytearray()
            while True:
                event = up.next_event()
                if event is h11.NEED_DATA:
                    up.receive_data(sock.recv(65536))
                elif isinstance(event, h11.Response):
                    response = event
                elif isinstance(event, h11.Data):
                    payload += event.data
                elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                    break
        assert response is not None
        out = [(k.decode().lower(), v.decode().replace(self.upstream_base, self.url)) for k, v in response.headers
               if k.decode().lower() not in ("connection", "transfer-encoding", "keep-alive", "content-length")]
        if method == "HEAD":  # no body: the upstream's length stands
            out += [(k.decode().lower(), v.decode()) for k, v in response.headers if k.decode().lower() == "content-length"]
        return response.status_code, out, bytes(payload)

    def _answer(self, client: socket.socket, conn: h11.Connection, method: str, status: int,
                headers: list[tuple[str, str]], payload: bytes, rule: Rule | None) -> bool:
        """Write the answer, broken as ``rule`` says; False when the connection is finished."""
        kind = rule.kind if rule else None
        p = rule.params if rule else {}
        if kind == "short":
            payload = payload[: int(p.get("keep", 0))]
        if method != "HEAD":
            headers = [*headers, ("content-length", str(len(payload)))]
        head = conn.send(h11.Response(status_code=status, headers=headers)) or b""
        if kind == "reset" and p.get("after") is None:  # before a byte of the answer
            _reset(client)
            return False
        if kind in ("reset", "truncate"):
            cut = int(p.get("after" if kind == "reset" else "keep", 0))
            client.sendall(head + payload[:cut])
            if kind == "reset":
                _reset(client)
            return False
        if kind == "trickle":
            every, size = float(p.get("every", 0.5)), int(p.get("size", 1))
            wire = head + (conn.send(h11.Data(data=payload)) or b"" if payload and method != "HEAD" else b"")
            for i in range(0, len(wire), size):
                client.sendall(wire[i:i + size])
                if self.stopping.wait(every):
                    raise _Stopped
            client.sendall(conn.send(h11.EndOfMessage()) or b"")
            return True
        client.sendall(head)
        if payload and method != "HEAD":
            client.sendall(conn.send(h11.Data(data=payload)) or b"")
        client.sendall(conn.send(h11.EndOfMessage()) or b"")
        return True


class TcpFaultProxy(_Listener):
    """Raw bytes to ``(host, port)`` and back; ``cut()`` is an outage of the server behind it."""

    def __init__(self, host: str, port: int) -> None:
        super().__init__()
        self.upstream = (host, port)
        self._down_until = 0.0
        self.connections = 0
        self.refused = 0
        self._partitioned = False
        self._upstreams: set[socket.socket] = set()
        self._stranded: list[socket.socket] = []

    def cut(self, seconds: float) -> None:
        """Reset every open connection now and refuse new ones for ``seconds``."""
        self._down_until = time.monotonic() + seconds
        with self._lock:
            conns, self._open = list(self._open), set()
        for c in conns:
            _reset(c, wake=True)

    def partition(self) -> None:
        """A network partition: the clients' connections die, while the server's side of each
        stays open and silent, as when a client host vanishes (the server's session lives on,
        its open transaction and locks with it, until something ends it)."""
        self._partitioned = True
        self._down_until = float("inf")
        with self._lock:
            conns, self._open = list(self._open), set()
        for c in conns:
            if c in self._upstreams:
                self._stranded.append(c)  # kept open: no FIN, no RST reaches the server
            else:
                _reset(c, wake=True)

    def heal(self) -> None:
        """New connections are admitted again; the stranded ones are finally closed."""
        self._down_until = 0.0
        self._partitioned = False
        for c in self._stranded:
            _reset(c, wake=True)
        self._stranded.clear()

    def down(self) -> bool:
        return time.monotonic() < self._down_until

    def admit(self) -> bool:
        if self.down():
            self.refused += 1
            return False
        self.connections += 1
        return True

    def serve(self, client: socket.socket) -> None:
        upstream = socket.create_connection(self.upstream, timeout=30)
        upstream.settimeout(None)
        self._upstreams.add(upstream)
        self._track(upstream, True)
        try:
            pump = threading.Thread(target=self._pipe, args=(upstream, client), daemon=True)
            pump.start()
            self._pipe(client, upstream)
            if not self._partitioned:
                pump.join(5)
        finally:
            self._track(upstream, False)
            if upstream not in self._stranded:
                upstream.close()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            if not (self._partitioned and dst in self._upstreams):  # a partition sends the server nothing
                with contextlib.suppress(OSError):
                    dst.shutdown(socket.SHUT_WR)


