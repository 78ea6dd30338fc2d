"""Stage 1 (source) helper: the HTTP client HfSource sends every request through.

huggingface_hub's paginated calls pass ``timeout=None`` and retry 429/5xx with sleeps of up to
8 s (hub-api.md §3), which a daemon must not sit through, and its session bounds each read,
not a call. So the head check, pages and file reads go through this httpx client instead: one
wall-clock deadline per request that a trickling server cannot stretch (every connect and read
gets at most the time left: ``tracker.netio``), no retries, body size caps, and ``Link:
rel="next"`` followed only on the endpoint's own origin (the Authorization header must not
travel elsewhere). :class:`HubConnections` shares one connection pool among every repo a
daemon checks, so an unchanged repo's one request needs no new connection (issue 17).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx

from tracker.errors import RepoNotFound, SourceError, SourceUnavailable
from tracker.hub._hferrors import clean, from_status
from tracker.hub.connections import HubConnections
from tracker.netio import deadline

MAX_JSON_BYTES = 64 * 1024 * 1024
MAX_REDIRECTS = 10
_CHUNK = 64 * 1024


class BodyTooLarge(Exception):
    """The body passed the caller's cap; ``declared`` is True when the headers said so up front."""

    def __init__(self, size: int | None):
        super().__init__(size)
        self.size = size


class HubHttp:
    """A deadline-bound, retry-free client for one repo on one endpoint; over ``connections``'
    pool when given, else over a client of its own (closed with it)."""

    def __init__(
        self,
        endpoint: str,
        headers: Mapping[str, str],
        *,
        timeout: float,
        repo_id: str,
        secret: str | None,
        connections: HubConnections | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.repo_id = repo_id
        self._secret = secret
        self._origin = _origin(endpoint)
        self._headers = dict(headers)  # per request: the pool may be shared with other tokens
        self._timeouts = httpx.Timeout(timeout)
        self._extensions = {"timeout": self._timeouts.as_dict()}
        self._owned = connections is None
        self._connections = connections or HubConnections()
        self._client = self._connections.client

    def close(self) -> None:
        if self._owned:
            self._connections.close()

    def get_small_json(self, url: str, *, what: str, revision: str | None) -> Any:
        """GET a small JSON answer (the head check: the request every repo costs every cycle)
        straight through the pool, without the client's cookie and URL-merging work (a quarter
        of the request's CPU; issue 17). ``url`` carries its query. Redirects (a renamed repo)
        are followed, the token only on the endpoint's origin; errors are mapped as elsewhere.
        """
        request = httpx.Request("GET", url, headers=self._headers, extensions=self._extensions)
        with self._mapped(what, revision), deadline(self.timeout):
            for _ in range(MAX_REDIRECTS + 1):
                r = self._connections.transport.handle_request(request)
                try:
                    if r.is_redirect:
                        target = request.url.join(r.headers["location"])
                        home = _origin(str(target)) == self._origin
                        headers = self._headers if home else {k: v for k, v in self._headers.items()
                                                               if k.lower() != "authorization"}
                        request = httpx.Request("GET", target, headers=headers, extensions=self._extensions)
                        continue
                    if r.status_code >= 400:
                        raise self._error(r, what, revision, RepoNotFound)
                    return self._parse(self._body(r, MAX_JSON_BYTES, None, what, revision), what, revision)
                except BodyTooLarge as e:
                    raise self._too_large(what, revision) from e
                finally:
                    r.close()
        raise SourceUnavailable(f"{what}: more than {MAX_REDIRECTS} redirects", repo_id=self.repo_id,
                                revision=revision)

    def get_bytes(
        self,
        url: str,
        *,
        what: str,
        revision: str | None = None,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        max_bytes: int,
        stop_after: int | None = None,
        not_found: type[SourceError] = RepoNotFound,
        empty_on: tuple[int, ...] = (),
    ) -> tuple[httpx.Response, bytes]:
        """GET ``url``; raise BodyTooLarge past ``max_bytes``; stop quietly after ``stop_after`` bytes.

        A status in ``empty_on`` (e.g. 416 for a Range past the end) answers an empty body.
        """
        sent = {**self._headers, **headers} if headers else self._headers
        with self._mapped(what, revision), deadline(self.timeout), self._client.stream(
            "GET", url, params=params, headers=sent, timeout=self._timeouts
        ) as r:
            if r.status_code in empty_on:
                return r, b""
            if r.status_code >= 400:
                raise self._error(r, what, revision, not_found)
            declared = r.headers.get("x-linked-size") or r.headers.get("content-length")
            if (
                r.status_code == 200
                and declared
                and declared.isdigit()
                and int(declared) > max_bytes
                and (stop_after is None or stop_after > max_bytes)
            ):
                raise BodyTooLarge(int(declared))
            return r, self._body(r, max_bytes, stop_after, what, revision)

    def git_request(
        self, method: str, url: str, *, body: bytes | None, headers: dict[str, str], max_bytes: int, what: str
    ) -> tuple[int, str, bytes, str]:
        """One request of the git protocol (``tracker.hub._gitwire``): (status, content type,
        body, the URL after redirects), under the same deadline and size cap as the API's; the
        status is the caller's to read (a 404 there means "no git here", not "no repo"). Straight
        through the pool, as the head check (no cookie or URL-merging work); a redirect of the
        advertisement (a renamed repo) is followed, the token only on the endpoint's origin."""
        sent = {**self._headers, **headers}
        request = httpx.Request(method, url, headers=sent, content=body, extensions=self._extensions)
        with self._mapped(what, None), deadline(self.timeout):
            for _ in range(MAX_REDIRECTS + 1):
                r = self._connections.transport.handle_request(request)
                try:
                    if r.is_redirect and method == "GET":
                        target = request.url.join(r.headers["location"])
                        home = _origin(str(target)) == self._origin
                        sent = sent if home else {k: v for k, v in sent.items() if k.lower() != "authorization"}
                        request = httpx.Request("GET", target, headers=sent, extensions=self._extensions)
                        continue
                    limit = max_bytes if r.status_code < 400 else 65536
                    try:
                        data = self._body(r, limit, None, what, None)
                    except BodyTooLarge as e:
                        raise SourceUnavailable(f"{what}: git answer larger than {limit} bytes",
                                                repo_id=self.repo_id) from e
                    return r.status_code, r.headers.get("content-type", ""), data, str(request.url)
                finally:
                    r.close()
        raise SourceUnavailable(f"{what}: more than {MAX_REDIRECTS} redirects", repo_id=self.repo_id)

    @contextmanager
    def _mapped(self, what: str, revision: str | None) -> Iterator[None]:
        """httpx's errors as :mod:`tracker.errors` (the token scrubbed from their messages)."""
        try:
            yield
        except httpx.TimeoutException as e:
            raise SourceUnavailable(
                f"{what}: timed out after {self.timeout:g}s",
                repo_id=self.repo_id,
                revision=revision,
            ) from e
        except httpx.HTTPError as e:  # connect errors, resets, truncated bodies, bad redirects
            raise SourceUnavailable(
                f"{what}: {type(e).__name__}: {clean(str(e), self._secret)}",
                repo_id=self.repo_id,
                revision=revision,
            ) from e

    def _body(
        self, r: httpx.Response, max_bytes: int, stop_after: int | None, what: str, revision: str | None
    ) -> bytes:
        """The body, at most ``max_bytes`` (BodyTooLarge past it), quietly cut after ``stop_after``."""
        ends = time.monotonic() + self.timeout
        chunks: list[bytes] = []
        n = 0
        for chunk in r.iter_bytes(_CHUNK):
            chunks.append(chunk)
            n += len(chunk)
            if stop_after is not None and n >= stop_after:
                break
            if n > max_bytes:
                raise BodyTooLarge(None)
            if time.monotonic() > ends:
                raise SourceUnavailable(
                    f"{what}: no complete answer within {self.timeout:g}s",
                    repo_id=self.repo_id,
                    revision=revision,
                )
        return b"".join(chunks)

    def get_pages(
        self,
        url: str,
        *,
        what: str,
        revision: str | None = None,
        params: Mapping[str, str] | None = None,
    ) -> Any:
        """Yield each page (a JSON array) of a Link-paginated listing, lazily."""
        seen: set[str] = set()
        next_url: str | None = url
        while next_url:
            r, body = self._get_json(next_url, what=what, revision=revision, params=params)
            if not isinstance(body, list):
                raise SourceUnavailable(
                    f"{what}: expected a JSON array", repo_id=self.repo_id, revision=revision
                )
            yield body
            params = None
            seen.add(next_url)
            next_url = r.links.get("next", {}).get("url")
            if next_url and (next_url in seen or _origin(next_url) != self._origin):
                raise SourceUnavailable(
                    f"{what}: bad pagination link", repo_id=self.repo_id, revision=revision
                )

    def get_json(self, url: str, *, what: str, params: Mapping[str, str] | None = None) -> Any:
        """GET one JSON document (deadline, size cap and error mapping as for pages)."""
        return self._get_json(url, what=what, revision=None, params=params)[1]

    def post_form_json(
        self, url: str, form: list[tuple[str, str]], *, what: str, revision: str | None
    ) -> Any:
        """POST a form (paths-info), answer its JSON; the same deadline and error mapping as GETs."""
        with self._mapped(what, revision), deadline(self.timeout):
            r = self._client.post(url, data=_group(form), headers=self._headers, timeout=self._timeouts)
        if r.status_code >= 400:
            raise from_status(
                r.status_code, r.headers, what=what, repo_id=self.repo_id, revision=revision,
                body_message=_message(r.content[:65536]), secret=self._secret,
            )
        if len(r.content) > MAX_JSON_BYTES:
            raise self._too_large(what, revision)
        return self._parse(r.content, what, revision)

    def _get_json(
        self, url: str, *, what: str, revision: str | None, params: Mapping[str, str] | None = None
    ) -> tuple[httpx.Response, Any]:
        """GET ``url`` and parse its JSON body (at most ``MAX_JSON_BYTES``)."""
        try:
            r, raw = self.get_bytes(url, what=what, revision=revision, params=params, max_bytes=MAX_JSON_BYTES)
        except BodyTooLarge as e:
            raise self._too_large(what, revision) from e
        return r, self._parse(raw, what, revision)

    def _too_large(self, what: str, revision: str | None) -> SourceError:
        return SourceError(f"{what}: answer larger than {MAX_JSON_BYTES} bytes", repo_id=self.repo_id,
                           revision=revision)

    def _parse(self, raw: bytes, what: str, revision: str | None) -> Any:
        try:
            return json.loads(raw)
        except ValueError as e:
            raise SourceUnavailable(
                f"{what}: answer is not JSON", repo_id=self.repo_id, revision=revision
            ) from e

    def _error(
        self, r: httpx.Response, what: str, revision: str | None, not_found: type[SourceError]
    ) -> SourceError:
        body = b""
        try:
            for chunk in r.iter_bytes(_CHUNK):
                body += chunk
                if len(body) > 65536:
                    break
        except httpx.HTTPError:
            pass
        return from_status(
            r.status_code,
            r.headers,
            what=what,
            repo_id=self.repo_id,
            revision=revision,
            body_message=_message(body),
            secret=self._secret,
            not_found=not_found,
        )


def _group(form: list[tuple[str, str]]) -> dict[str, list[str]]:
    """Repeated form keys (``paths=a&paths=b``) as httpx sends them: a list per key."""
    out: dict[str, list[str]] = {}
    for k, v in form:
        out.setdefault(k, []).append(v)
    return out


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


def _message(body: bytes) -> str:
    """The ``error`` of a JSON error body, else a short text body (HTML is ignored)."""
    text = body[:4096].decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        return "" if text.lstrip().startswith("<") else text
    if isinstance(data, dict):
        err = data.get("error") or data.get("error_description") or ""
        return "; ".join(map(str, err)) if isinstance(err, list) else str(err)
    return ""
