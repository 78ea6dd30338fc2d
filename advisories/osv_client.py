"""Stage 7 (emit): look up the libraries a revision names in an OSV API, for ``related``.

A revision's config.json and generation_config.json name the ``transformers_version`` that
wrote them; the advisories of PyPI ``transformers`` at that version are ``related`` to ours.
The client speaks osv.dev's ``POST /v1/querybatch`` (chunks of ``batch_size``, following
per-query ``next_page_token``), with a timeout on every call, a capped response size and a
small TTL cache per (ecosystem, name, version). The API's answers are untrusted like repo
content: ids are checked before use. :meth:`OsvClient.related_ids` never raises: errors
give an empty list and a warning. An empty ``base_url`` turns look-ups off.

Imports: stdlib, httpx, tracker.errors.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import httpx

from tracker.errors import HubwatchError

log = logging.getLogger(__name__)

MAX_RESPONSE_BYTES = 16 * 1024 * 1024
MAX_PAGES = 10
_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_VERSION_RE = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+!_-]{0,63}")


class PackageVersion(NamedTuple):
    """One OSV package query: ecosystem, package name, version."""

    ecosystem: str
    name: str
    version: str


class OsvUnavailable(HubwatchError):
    """The OSV API could not be asked or gave an answer we cannot use."""


#: After a failed look-up, the API is left alone for this long.
DOWN_SECONDS = 300.0


class OsvClient:
    """An httpx client of an OSV API (osv.dev or anything that speaks its v1 API)."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 10,
        batch_size: int = 1000,
        client: httpx.Client | None = None,
        cache_size: int = 1024,
        cache_ttl: float = 3600.0,
    ) -> None:
        if not 1 <= batch_size <= 1000:
            raise ValueError("batch_size must be within 1..1000 (osv.dev's limit)")
        self.base_url = base_url.rstrip("/")
        self.timeout = httpx.Timeout(timeout)
        self.batch_size = batch_size
        self._own = client is None
        self._client = client if client is not None else httpx.Client(timeout=self.timeout)
        self._cache: OrderedDict[PackageVersion, tuple[float, list[str]]] = OrderedDict()
        self._cache_size = cache_size
        self._cache_ttl = cache_ttl
        self._lock = threading.Lock()  # one client serves the pipeline's worker threads

    @property
    def enabled(self) -> bool:
        return bool(self.base_url)

    def close(self) -> None:
        if self._own:
            self._client.close()

    def __enter__(self) -> OsvClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def query_batch(self, queries: Sequence[tuple[str, str, str]]) -> list[list[str]]:
        """The vulnerability ids of each (ecosystem, name, version), in order.

        Raises :class:`OsvUnavailable` on a transport error, a non-200 answer or a
        malformed body; nothing is cached then.
        """
        keys = [PackageVersion(*q) for q in queries]
        if not self.enabled:
            return [[] for _ in keys]
        found: dict[PackageVersion, list[str]] = {}
        missing: list[PackageVersion] = []
        for key in keys:
            cached = self._cached(key)
            if cached is not None:
                found[key] = cached
            elif key not in missing:
                missing.append(key)
        for start in range(0, len(missing), self.batch_size):
            chunk = missing[start : start + self.batch_size]
            for key, ids in zip(chunk, self._ask(chunk), strict=True):
                found[key] = ids
                self._store(key, ids)
        return [list(found[key]) for key in keys]

    def related_ids(
        self, config: Mapping[str, Any] | None, generation_config: Mapping[str, Any] | None
    ) -> list[str]:
        """Ids of the advisories of the ``transformers`` versions a revision names; never raises."""
        versions: list[str] = []
        for doc in (config, generation_config):
            value = doc.get("transformers_version") if isinstance(doc, Mapping) else None
            if isinstance(value, str) and _VERSION_RE.fullmatch(value) and value not in versions:
                versions.append(value)
        if not versions or not self.enabled:
            return []
        if time.monotonic() < getattr(self, "_down_until", 0.0):
            return []  # the API failed recently: don't make every revision wait on it
        try:
            results = self.query_batch([("PyPI", "transformers", v) for v in versions])
        except Exception as exc:  # the pipeline must go on without related ids
            log.warning("OSV look-up of transformers %s failed: %s", ", ".join(versions), exc)
            self._down_until = time.monotonic() + DOWN_SECONDS
            return []
        return sorted({i for ids in results for i in ids})

    # --- internals ---------------------------------------------------------------------------

    def _ask(self, chunk: Sequence[PackageVersion]) -> list[list[str]]:
        queries = [_query(k) for k in chunk]
        results = self._post(queries)
        ids = [_ids(r) for r in results]
        tokens = {i: r.get("next_page_token") for i, r in enumerate(results)}
        for _ in range(MAX_PAGES):
            pending = {i: t for i, t in tokens.items() if isinstance(t, str) and t}
            if not pending:
                break
            order = sorted(pending)
            more = self._post([{**queries[i], "page_token": pending[i]} for i in order])
            tokens = {}
            for i, result in zip(order, more, strict=True):
                ids[i] += _ids(result)
                tokens[i] = result.get("next_page_token")
        return [sorted(set(i)) for i in ids]

    def _post(self, queries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        url = f"{self.base_url}/v1/querybatch"
        try:
            with self._client.stream(
                "POST", url, json={"queries": queries}, timeout=self.timeout
            ) as response:
                if response.status_code != 200:
                    raise OsvUnavailable(f"{url} answered HTTP {response.status_code}")
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > MAX_RESPONSE_BYTES:
                        raise OsvUnavailable(f"{url} answered more than {MAX_RESPONSE_BYTES} bytes")
        except httpx.HTTPError as exc:
            raise OsvUnavailable(f"{url}: {type(exc).__name__}: {exc}") from exc
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise OsvUnavailable(f"{url} answered invalid JSON") from exc
        results = data.get("results") if isinstance(data, dict) else None
        if not isinstance(results, list) or len(results) != len(queries):
            raise OsvUnavailable(f"{url} answered {len(queries)} queries with another shape")
        if not all(isinstance(r, dict) for r in results):
            raise OsvUnavailable(f"{url} answered results that are not objects")
        return results

    def _cached(self, key: PackageVersion) -> list[str] | None:
        with self._lock:
            entry = self._cache.get(key)
            if entry is None:
                return None
            stamp, ids = entry
            if time.monotonic() - stamp > self._cache_ttl:
                del self._cache[key]
                return None
            self._cache.move_to_end(key)
            return ids

    def _store(self, key: PackageVersion, ids: list[str]) -> None:
        with self._lock:
            self._cache[key] = (time.monotonic(), ids)
            self._cache.move_to_end(key)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)


def _query(key: PackageVersion) -> dict[str, Any]:
    return {"package": {"ecosystem": key.ecosystem, "name": key.name}, "version": key.version}


def _ids(result: Mapping[str, Any]) -> list[str]:
    vulns = result.get("vulns") or []
    if not isinstance(vulns, list):
        raise OsvUnavailable("a querybatch result's vulns is not a list")
    return [
        v["id"]
        for v in vulns
        if isinstance(v, dict) and isinstance(v.get("id"), str) and _ID_RE.fullmatch(v["id"])
    ]
