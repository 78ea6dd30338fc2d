"""Audit: the answer from a server, so a CI job needs no database.

Any osv.dev-compatible API: per pinned revision, ``POST /v1/querybatch`` with two queries,
the purl ``pkg:huggingface/org/name@<sha>`` and the bare ``commit`` (a server indexing GIT
ranges only answers the second; its hits count when the record names this repo, by purl or
by the range's repo URL; a server that rejects the purl with 400 is asked by commit alone),
``next_page_token`` followed; then ``GET /v1/vulns/{id}`` once per
id for severity and summary. The server decides containment, with ``/v1/query``'s semantics.

A hubwatch server also answers ``POST /api/v1/drift`` (:mod:`tracker.api.drift`): known or
not, upstream head, how far behind. Elsewhere that route is missing, and ``known``,
``behind`` and ``upstream_head`` stay null ("the server cannot say").

Every failure to get an answer (connection, timeout, 5xx, a body that is not the API's) is
an :class:`AuditServerError`: one line, exit code 1.

Imports: stdlib, httpx, advisories.osv, advisories.query, tracker.audit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

import httpx

from advisories.osv import purl
from tracker.audit.pins import COMMIT, Pin
from tracker.audit.verdicts import Found, Verdict, concerns, found_of

BATCH = 1000
MAX_PAGES = 50


class AuditServerError(RuntimeError):
    """The server could not be asked, or did not answer as an OSV API does."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ServerAnswer:
    """Answers pins through the API at ``base_url``."""

    def __init__(self, base_url: str, *, timeout: float = 30.0, client: httpx.Client | None = None) -> None:
        self.base = base_url.rstrip("/")
        self.client = client or httpx.Client(timeout=timeout, headers={"User-Agent": "hubwatch-audit"})

    def close(self) -> None:
        self.client.close()

    def answer(self, pins: Sequence[Pin]) -> list[Verdict]:
        pinned = [p for p in pins if p.revision is not None]
        drifts = self._drift(pinned)
        shas = {(p.repo, p.revision): (drifts.get((p.repo, p.revision)) or {}).get("revision") or p.revision
                for p in pinned}
        wanted = sorted({(p.repo, p.repository or "", str(shas[(p.repo, p.revision)])) for p in pinned
                         if COMMIT.match(str(shas[(p.repo, p.revision)]))})
        hits = self._matches(wanted)
        records = {i: self._vuln(i) for i in sorted({i for ids in hits.values() for i in ids})}
        out = []
        for pin in pins:
            if pin.revision is None:
                out.append(Verdict(pin, None, known=None))
                continue
            sha = str(shas[(pin.repo, pin.revision)])
            d = drifts.get((pin.repo, pin.revision))
            matched = sorted(i for i in hits.get((pin.repo, pin.repository or "", sha), ()) if concerns(records[i], pin))
            found = tuple(found_of(records[i], self._url(i)) for i in matched)
            out.append(_verdict(pin, sha, found, d))
        return out

    # ---------------------------------------------------------------- requests
    def _post(self, path: str, body: Mapping[str, Any], *, optional: bool = False) -> Any:
        try:
            r = self.client.post(self.base + path, json=body)
        except httpx.HTTPError as e:
            raise AuditServerError(f"{self.base}: cannot reach the server: {e}") from e
        if optional and r.status_code in (404, 405, 501):
            return None
        return self._json(r, path)

    def _json(self, r: httpx.Response, path: str) -> Any:
        if r.status_code != 200:
            raise AuditServerError(f"{self.base}{path}: HTTP {r.status_code}: {r.text[:200]}", r.status_code)
        try:
            return r.json()
        except ValueError as e:
            raise AuditServerError(f"{self.base}{path}: the answer is not JSON") from e

    def _drift(self, pins: Sequence[Pin]) -> dict[tuple[str, str | None], dict[str, Any]]:
        keys = sorted({(p.repo, str(p.revision)) for p in pins})
        out: dict[tuple[str, str | None], dict[str, Any]] = {}
        for start in range(0, len(keys), BATCH):
            chunk = keys[start:start + BATCH]
            doc = self._post("/api/v1/drift", {"queries": [{"repo": r, "revision": v} for r, v in chunk]},
                             optional=True)
            if doc is None:
                return {}  # not a hubwatch: no drift anywhere
            results = doc.get("results") if isinstance(doc, dict) else None
            if not isinstance(results, list) or len(results) != len(chunk):
                raise AuditServerError(f"{self.base}/api/v1/drift: unexpected answer")
            out.update({k: r for k, r in zip(chunk, results, strict=True) if isinstance(r, dict)})
        return out

    def _matches(self, wanted: Sequence[tuple[str, str, str]]) -> dict[tuple[str, str, str], set[str]]:
        """(repo, hub or "", sha) -> ids the server matched, by purl or by commit.

        A server that refuses ``huggingface`` purls as invalid (400) is asked by commit only.
        """
        try:
            return self._ask(wanted, with_purls=True)
        except AuditServerError as e:
            if e.status != 400:
                raise
            return self._ask(wanted, with_purls=False)

    def _ask(self, wanted: Sequence[tuple[str, str, str]], *, with_purls: bool) -> dict[tuple[str, str, str], set[str]]:
        queries: list[tuple[tuple[str, str, str], dict[str, Any]]] = []
        for repo, hub, sha in wanted:
            key = (repo, hub, sha)
            if with_purls:
                queries.append((key, {"package": {"purl": purl(repo, sha, repository_url=hub or None)}}))
            queries.append((key, {"commit": sha}))
        out: dict[tuple[str, str, str], set[str]] = {}
        for start in range(0, len(queries), BATCH):
            chunk = queries[start:start + BATCH]
            for (key, _q), ids in zip(chunk, self._batch([q for _, q in chunk]), strict=True):
                out.setdefault(key, set()).update(ids)
        return out

    def _batch(self, queries: list[dict[str, Any]]) -> list[set[str]]:
        ids: list[set[str]] = [set() for _ in queries]
        pending = list(range(len(queries)))
        tokens: dict[int, str] = {}
        for _ in range(MAX_PAGES):
            body = {"queries": [{**queries[i], **({"page_token": tokens[i]} if i in tokens else {})} for i in pending]}
            doc = self._post("/v1/querybatch", body)
            results = doc.get("results") if isinstance(doc, dict) else None
            if not isinstance(results, list) or len(results) != len(pending):
                raise AuditServerError(f"{self.base}/v1/querybatch: unexpected answer")
            again = []
            for i, result in zip(pending, results, strict=True):
                result = result if isinstance(result, dict) else {}
                ids[i].update(str(v["id"]) for v in result.get("vulns") or [] if isinstance(v, dict) and "id" in v)
                if result.get("next_page_token"):
                    tokens[i] = str(result["next_page_token"])
                    again.append(i)
            if not again:
                return ids
            pending = again
        raise AuditServerError(f"{self.base}/v1/querybatch: more than {MAX_PAGES} pages")

    def _vuln(self, vuln_id: str) -> dict[str, Any]:
        path = f"/v1/vulns/{quote(vuln_id, safe='')}"
        try:
            r = self.client.get(self.base + path)
        except httpx.HTTPError as e:
            raise AuditServerError(f"{self.base}: cannot reach the server: {e}") from e
        doc = self._json(r, path)
        if not isinstance(doc, dict) or doc.get("id") != vuln_id:
            raise AuditServerError(f"{self.base}{path}: not the record asked for")
        return doc

    def _url(self, vuln_id: str) -> str:
        return f"{self.base}/v1/vulns/{quote(vuln_id, safe='')}"


def _verdict(pin: Pin, sha: str, found: tuple[Found, ...], d: Mapping[str, Any] | None) -> Verdict:
    if d is None:
        return Verdict(pin, sha, known=None, advisories=found)
    known = bool(d.get("known"))
    note = None if known else ("revision not in the stored history" if d.get("tracked") else "not tracked")
    since = d.get("severities_since")
    return Verdict(
        pin, sha, known=known, advisories=found, behind=_int(d.get("behind")),
        upstream_head=_str(d.get("upstream_head")),
        severities_since={str(k): int(v) for k, v in since.items()} if isinstance(since, dict) else {},
        reachable=d.get("reachable") if isinstance(d.get("reachable"), bool) else None, note=note,
    )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
