"""Hub emulator: HTTP plumbing (one handler per connection), fault injection and accounting."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from tests.hubemu.gitproto import GIT_ALLOWED, GIT_HANDLERS
from tests.hubemu.routes import ALLOWED, HANDLERS, HubError, Request, Response, parse_route

_HANDLERS = {**HANDLERS, **GIT_HANDLERS}
_ALLOWED = {**ALLOWED, **GIT_ALLOWED}

if TYPE_CHECKING:
    from tests.hubemu.faults import Fault
    from tests.hubemu.server import HubEmulator


def _renamed_path(path: str, old: str, new: str) -> str:
    """``path`` with the repo's two segments (``org/name``, maybe ``name.git``) renamed."""
    parts = path.split("/")
    o_ns, o_name = old.split("/")
    n_ns, n_name = (quote(p, safe="") for p in new.split("/"))
    for i in range(len(parts) - 1):
        if unquote(parts[i]) == o_ns and unquote(parts[i + 1]).removesuffix(".git") == o_name:
            suffix = ".git" if parts[i + 1].endswith(".git") else ""
            parts[i : i + 2] = [n_ns, n_name + suffix]
            break
    return "/".join(parts)


class _CountingWriter:
    """Wraps the socket writer so every byte sent (headers included) is counted."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.count = 0

    def write(self, data: bytes) -> int:
        n = self.inner.write(data)
        self.count += len(data)
        return n

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "hubemu/1"
    sys_version = ""

    def setup(self) -> None:
        super().setup()
        self.wfile = _CountingWriter(self.wfile)  # type: ignore[assignment]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_POST(self) -> None:
        self._dispatch("POST")

    @property
    def hub(self) -> HubEmulator:
        return self.server.hub  # type: ignore[attr-defined,no-any-return]

    def _dispatch(self, method: str) -> None:
        from tests.hubemu.server import RequestRecord

        hub = self.hub
        url = urlsplit(self.path)
        route, repo, args = parse_route(url.path)
        body = b""
        if method == "POST":
            body = self.rfile.read(min(int(self.headers.get("Content-Length") or 0), 10_000_000))
        rec = RequestRecord(
            method, route, repo, self.path, headers={k.lower(): v for k, v in self.headers.items()}, body=body
        )
        hub.begin(rec)
        start = self.wfile.count  # type: ignore[attr-defined]
        try:
            fault = hub.faults.take(route, repo, method)
            rec.fault = fault.kind if fault else None
            resp = self._answer(method, route, repo, args, url.query, body, fault)
            if resp is not None:
                # recorded before the answer goes out: a client that has read it may look at
                # the request log at once (the send can still fail: the status is what was sent)
                rec.status = resp.status
                self._send(method, resp, fault)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            rec.bytes_sent = self.wfile.count - start  # type: ignore[attr-defined]
            hub.end()

    def _answer(
        self,
        method: str,
        route: str,
        repo: str | None,
        args: dict[str, str],
        query: str,
        body: bytes,
        fault: Fault | None,
    ) -> Response | None:
        hub = self.hub
        if fault is not None:
            p = fault.params
            if fault.kind in ("hang", "slow"):
                hub.stopping.wait(float(p.get("seconds", 60 if fault.kind == "hang" else 0.5)))
                if fault.kind == "hang":
                    self.close_connection = True
                    return None
            elif fault.kind == "reset":
                self.close_connection = True
                return None
            elif fault.kind == "status":
                code = p.get("error_code")
                err = HubError(
                    int(p.get("status", 500)), code or "", p.get("message", "injected failure")
                )
                resp = err.response()
                if not code:
                    resp.headers = [h for h in resp.headers if h[0] != "X-Error-Code"]
                resp.headers += list(p.get("headers", {}).items())
                if "body" in p:
                    resp.body = p["body"]
                return resp
            elif fault.kind == "rate_limit":
                after = p.get("retry_after", 5)  # None: no Retry-After header
                reset = p.get("reset", after)  # RateLimit's t=; None: no RateLimit header
                headers = [("Content-Type", "application/json")]
                if after is not None:
                    headers.append(("Retry-After", str(after)))
                if reset is not None:
                    headers.append(("RateLimit", f'"api";r=0;t={reset}'))
                    headers.append(("RateLimit-Policy", '"fixed window";"api";q=1000;w=300'))
                body = json.dumps({"error": "Too Many Requests"}).encode()
                return Response(429, headers, body)
            elif fault.kind == "gated":
                return HubError(
                    403, "GatedRepo", f"Access to model {repo} is restricted."
                ).response()
            elif fault.kind == "not_found":
                return HubError(
                    401, "RepoNotFound", f"Repository Not Found for url: {repo}"
                ).response()
        moved = hub.moved_to(repo)
        if moved is not None and repo is not None:  # renamed: 307 to the same path, new id
            host = self.headers.get("Host") or f"127.0.0.1:{hub.port}"
            return Response(307, [("Location", f"http://{host}{_renamed_path(self.path, repo, moved)}")])
        handler = _HANDLERS.get(route)
        if handler is None or method not in _ALLOWED.get(route, ("GET",)):
            return HubError(
                404,
                "EntryNotFound" if route == "unknown" else "MethodNotAllowed",
                f"no route for {method} {self.path}",
            ).response()
        host = self.headers.get("Host") or f"127.0.0.1:{hub.port}"
        req = Request(
            method,
            route,
            repo,
            args,
            parse_qs(query, keep_blank_values=True),
            f"http://{host}",
            urlsplit(self.path).path,
            body,
            {k.lower(): v for k, v in self.headers.items()},
            hub.honour_range,
        )
        try:
            return handler(hub, req)
        except HubError as e:
            return e.response()
        except Exception as e:  # an emulator bug: answer 500 and keep it for the test to see
            hub.internal_errors.append(f"{method} {self.path}: {type(e).__name__}: {e}")
            return HubError(500, "InternalError", "emulator error").response()

    def _send(self, method: str, resp: Response, fault: Fault | None) -> None:
        if fault is not None and fault.kind == "short":  # fewer bytes, and a Content-Length that says so
            resp.body = resp.body[: int(fault.params.get("keep", len(resp.body) // 2))]
            resp.headers = [(k, v) for k, v in resp.headers if k.lower() != "content-length"]
        self.send_response(resp.status)
        names = {k.lower() for k, _ in resp.headers}
        for k, v in resp.headers:
            self.send_header(k, v)
        if "content-length" not in names:
            self.send_header("Content-Length", str(len(resp.body)))
        self.end_headers()
        if method == "HEAD":
            return
        body = resp.body
        if fault is not None and fault.kind == "truncate":
            body = body[: int(fault.params.get("keep", len(body) // 2))]
            self.close_connection = True
        if fault is not None and fault.kind == "trickle":
            every = float(fault.params.get("every", 0.5))
            for i in range(len(body)):
                if self.hub.stopping.wait(every):
                    return
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
            return
        self.wfile.write(body)
