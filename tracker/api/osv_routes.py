"""Stage 8 (read): the osv.dev-compatible API and the static export, served.

Routes (osv.dev's shapes, docs/api of google/osv.dev):

- ``GET /v1/vulns/{id}``: the record itself (withdrawn ones too); 404 ``{"code": 5, ...}``.
- ``POST /v1/query``: ``{"commit"}`` (every advisory whose GIT range holds the commit, on
  the stored commit graph, answered from the store's commit index; with a ``package`` too,
  only that package's) or ``{"package": {"purl"} | {"ecosystem", "name"}, "version"?}``;
  answers ``{"vulns": [record, ...]}``, or ``{}`` when nothing matched. Withdrawn records
  are left out. ``page_token`` is accepted and ignored: every match comes in one page.
- ``POST /v1/querybatch``: ``{"queries": [...]}`` (at most 1,000) answers
  ``{"results": [{"vulns": [{"id", "modified"}]} | {}, ...]}`` in query order. A batch has a
  time budget (``BATCH_SECONDS``); batches run while their queries fit ``QUERIES_IN_FLIGHT``
  and wait on the event loop (no worker thread held) for room; a batch still waiting, or
  still working, past its budget is answered 429 (code 8).

Commit-only queries are answered by splicing the store's pre-encoded JSON (the records as
stored; for a batch, each record's ``{"id","modified"}`` written beside it): one indexed
statement per few hundred commits, nothing decoded or encoded per record (issue 17).
- ``GET|HEAD /osv/all.json``, ``/osv/{id}.json``, ``/osv/all.zip``: the export of
  :mod:`advisories.export`, byte for byte, with ``Last-Modified``.

Errors are ``{"code": <gRPC status>, "message": ...}`` (3 invalid argument, 5 not found,
8 too large or too much work). Request bodies are parsed as JSON whatever the Content-Type (pip-audit sends
none). The reader is called in a worker thread; the app (tracker.api) mounts this router.

Imports: stdlib, fastapi/starlette, advisories.{export,osv,query,schema}, tracker.api.{readers,work_limiter}.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from email.utils import format_datetime
from typing import Any, Protocol

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from advisories.export import index_bytes, record_bytes, safe_id, zip_bytes
from advisories.osv import parse_timestamp, purl
from advisories.query import (
    Purl,
    affects_version,
    matches_package,
    matches_purl,
    parse_purl,
)
from advisories.schema import is_valid_ecosystem
from tracker.api.conditional import not_modified
from tracker.api.readers import AdvisoryReader
from tracker.api.work_limiter import WorkLimiter

MAX_BODY_BYTES = 4 * 1024 * 1024
MAX_BATCH = 1000
BATCH_SECONDS = 5.0  # the work one querybatch may do, checked between its queries
# Queries of all batches being answered at once: 16 full batches, so honest scanners on 16
# connections never wait, while a flood waits on the event loop instead of holding the
# worker threads every other route needs (anyio's pool has 40).
QUERIES_IN_FLIGHT = 16 * MAX_BATCH
_BATCH_STEP = 250  # queries answered per index look-up, the budget checked between them
_HEX = re.compile(r"[0-9a-fA-F]{4,64}")
# purl types whose packages live in an OSV ecosystem: type -> (ecosystem, name joiner)
_PURL_ECOSYSTEMS = {
    "pypi": ("PyPI", None),
    "npm": ("npm", "/"),
    "maven": ("Maven", ":"),
    "golang": ("Go", "/"),
    "cargo": ("crates.io", None),
    "gem": ("RubyGems", None),
    "nuget": ("NuGet", None),
    "composer": ("Packagist", "/"),
    "hex": ("Hex", None),
    "pub": ("Pub", None),
}


class QueryError(ValueError):
    """A query osv.dev would answer with 400 INVALID_ARGUMENT."""


@dataclass(frozen=True, slots=True)
class Query:
    """One parsed query: a commit, a purl, or an ecosystem package, with an optional version."""

    commit: str | None = None
    purl: Purl | None = None
    purl_text: str | None = None
    ecosystem: str | None = None
    name: str | None = None
    version: str | None = None


class KeptCommits(Protocol):
    """Commit answers kept in memory beside the reader (:class:`storage.commit_answers.KeptQueries`)."""

    async def kept_soon(self, shas: Sequence[str], *, brief: bool) -> dict[str, Sequence[str]] | None:
        """The reader's ``affecting_json`` from what is kept, awaited on the event loop (SQLite:
        inline; PostgreSQL: from memory at a label stamp read after the call, shared by
        concurrent queries, or in a worker thread); None when it would need more (the route
        then asks the reader in a worker thread)."""
        ...

    async def batch_soon(self, shas: Sequence[str]) -> bytes | None:
        """:func:`commit_batch_json`'s bytes from what is kept, awaited on the event loop as
        :meth:`kept_soon` answers; None when it would need more."""
        ...

    def warm_soon(self) -> None:
        """Start reading what commit queries need ahead, in the background (once)."""
        ...


def osv_router(reader: AdvisoryReader, *, max_body_bytes: int = MAX_BODY_BYTES,
               batch_seconds: float | None = None, kept: KeptCommits | None = None) -> APIRouter:
    """The router of the OSV routes over ``reader``; ``kept``: commit-only queries are
    answered on the event loop when it has all they need, and it is warmed on first use."""
    router = APIRouter(tags=["osv"])
    budget = BATCH_SECONDS if batch_seconds is None else batch_seconds
    in_flight = WorkLimiter(QUERIES_IN_FLIGHT)

    @router.get("/v1/vulns/{vuln_id}")
    def get_vuln(vuln_id: str) -> Response:
        record = reader.get(vuln_id) if len(vuln_id) <= 256 else None
        if record is None:
            return error(404, 5, "Vulnerability not found")
        return _json(record)

    @router.post("/v1/query")
    async def query(request: Request) -> Response:
        body = await _read_json(request, max_body_bytes)
        if isinstance(body, Response):
            return body
        try:
            parsed = parse_query(body)
        except QueryError as exc:
            return error(400, 3, str(exc))
        if _commit_only(parsed):
            assert parsed.commit is not None
            held = None
            if kept is not None:
                kept.warm_soon()
                held = await kept.kept_soon([parsed.commit], brief=False)
            if held is None:
                held = await run_in_threadpool(commit_answers, reader, [parsed.commit], False)
            assert held is not None  # no deadline
            return _raw_json(vulns_json(held[parsed.commit]))
        vulns = (await run_in_threadpool(run_queries, reader, [parsed]))[0]
        return _json({"vulns": vulns} if vulns else {})

    @router.post("/v1/querybatch")
    async def querybatch(request: Request) -> Response:
        body = await _read_json(request, max_body_bytes)
        if isinstance(body, Response):
            return body
        queries = body.get("queries")
        if not isinstance(queries, list):
            return error(400, 3, "queries must be a list")
        if len(queries) > MAX_BATCH:
            return error(400, 3, "Too many queries.")
        shas = plain_commits(queries)  # a scanner's batch: commits only, answered in one pass
        parsed: list[Query] = []
        if shas is None:
            try:
                parsed = [parse_query(q) for q in queries]
            except QueryError as exc:
                return error(400, 3, str(exc))
        if kept is not None:
            kept.warm_soon()
        deadline = time.monotonic() + budget
        weight = max(1, len(queries))
        if not await in_flight.acquire(weight, budget):
            return error(429, 8, f"The batch waited over {budget:g} s for room; retry later.")
        text: str | bytes | None
        try:
            if shas is not None:
                # all kept: answered here on the loop, no worker-thread hop (issue 17; PostgreSQL:
                # after a label stamp read shared by the batches in flight)
                text = await kept.batch_soon(shas) if kept is not None else None
                if text is None:
                    text = await run_in_threadpool(commit_batch_json, reader, shas, deadline)
                elif time.monotonic() > deadline:
                    text = None
            else:
                results = await run_in_threadpool(answer_batch, reader, parsed, deadline)
                text = None if results is None else _results_json(results)
        finally:
            in_flight.release(weight)
        if text is None:
            return error(429, 8, f"The batch took over {budget:g} s; send fewer queries per batch.")
        return _raw_json(text)

    @router.head("/osv/all.json", include_in_schema=False)
    @router.get("/osv/all.json")
    def export_index(request: Request) -> Response:
        records = list(reader.all_records())
        return _static(request, index_bytes(records), "application/json", records)

    @router.head("/osv/all.zip", include_in_schema=False)
    @router.get("/osv/all.zip")
    def export_zip(request: Request) -> Response:
        records = list(reader.all_records())
        return _static(request, zip_bytes(records), "application/zip", records)

    @router.head("/osv/{vuln_id}.json", include_in_schema=False)
    @router.get("/osv/{vuln_id}.json")
    def export_record(vuln_id: str, request: Request) -> Response:
        record = reader.get(vuln_id) if safe_id(vuln_id) else None
        if record is None:
            return error(404, 5, "Vulnerability not found")
        return _static(request, record_bytes(record), "application/json", [record])

    return router


def error(status: int, code: int, message: str) -> Response:
    """osv.dev's error body: ``{"code": <gRPC status>, "message": ...}``."""
    return _json({"code": code, "message": message}, status)


def parse_query(obj: Any) -> Query:
    """Check one query as osv.dev does; :class:`QueryError` says what is wrong."""
    if not isinstance(obj, dict):
        raise QueryError("Invalid query.")
    commit, version = _opt_str(obj, "commit"), _opt_str(obj, "version")
    package = obj.get("package")
    if package is not None and not isinstance(package, dict):
        raise QueryError("package must be an object")
    if commit and version:
        raise QueryError("Only one of commit or version may be specified.")
    if commit is not None and not _HEX.fullmatch(commit):
        raise QueryError("Invalid hash.")
    commit = commit.lower() if commit else None
    purl_text = _opt_str(package or {}, "purl")
    name, ecosystem = _opt_str(package or {}, "name"), _opt_str(package or {}, "ecosystem")
    if purl_text:
        if name or ecosystem:
            raise QueryError("name or ecosystem specified in a PURL query")
        purl = parse_purl(purl_text)
        if purl is None:
            raise QueryError("Invalid Package URL.")
        if purl.version and version:
            raise QueryError("version specified in params and PURL query")
        if purl.version and commit:
            raise QueryError("Only one of commit or version may be specified.")
        return Query(commit=commit, purl=purl, purl_text=purl_text, version=version or purl.version)
    if ecosystem and not is_valid_ecosystem(ecosystem):
        raise QueryError("Invalid ecosystem.")
    if (name or ecosystem) and not (name and ecosystem):
        raise QueryError("A package needs both a name and an ecosystem.")
    if commit and not name:
        return Query(commit=commit)
    if not name:
        raise QueryError("Invalid query.")
    return Query(commit=commit, ecosystem=ecosystem, name=name, version=version)


def plain_commits(queries: list[Any]) -> list[str] | None:
    """The lowercased commits of a batch whose every query is ``{"commit": "<hex>"}`` (what
    :func:`parse_query` accepts as a commit-only query); None when any is anything else."""
    out = []
    match = _HEX.fullmatch
    for q in queries:
        if type(q) is not dict or len(q) != 1:
            return None
        commit = q.get("commit")
        if type(commit) is not str or not match(commit):
            return None
        out.append(commit.lower())
    return out


def commit_batch_json(reader: AdvisoryReader, commits: Sequence[str], deadline: float) -> bytes | None:
    """``{"results":[...]}`` of a batch of commit-only queries (in order) from one look-up,
    encoded; each distinct commit's answer joined once. None once past ``deadline``."""
    held = commit_answers(reader, commits, True, deadline)
    if held is None or time.monotonic() > deadline:
        return None
    pieces = ['{"results":[']
    for sha in commits:  # one big copy at the end: the answer is ~3 MB for 1,000 commits
        found = held.get(sha)
        if found:
            pieces += ('{"vulns":[', ",".join(found), "]},")
        else:
            pieces.append("{},")
    pieces[-1] = pieces[-1][:-1] if commits else pieces[-1]
    pieces.append("]}")
    return "".join(pieces).encode()


def run_queries(
    reader: AdvisoryReader, queries: Sequence[Query], *, full: bool = True
) -> list[list[dict[str, Any]]]:
    """The live records matching each query, sorted by id; every commit in one index look-up.

    A commit query answers the records whose GIT range holds the commit; with a package too,
    that answer restricted to the package (osv.dev intersects). A huggingface purl's version
    is a commit of that repo: the same look-up, restricted to the package. ``full=False``
    (querybatch): records may come as ``{"id", "modified"}`` when no query names a package.
    """
    commits = {c for q in queries if (c := _commit_of(q))}
    full = full or any(q.purl is not None or q.ecosystem is not None for q in queries)
    held = reader.affecting(sorted(commits), full=full) if commits else {}
    return [_live_unique(_matches(reader, q, held)) for q in queries]


def answer_batch(reader: AdvisoryReader, queries: Sequence[Query], deadline: float) -> list[str] | None:
    """Each query's answer as JSON text, in order; None once past ``deadline`` (commit-only
    queries in one look-up that checks it between its steps, others in steps of
    ``_BATCH_STEP`` queries; issue 16, point 9)."""
    out: list[str] = ["{}"] * len(queries)
    commits = [i for i, q in enumerate(queries) if _commit_only(q)]
    others = [i for i, q in enumerate(queries) if not _commit_only(q)]
    if commits:  # one look-up; the reader checks the deadline between its own steps
        held = commit_answers(reader, [str(queries[i].commit) for i in commits], True, deadline)
        if held is None or time.monotonic() > deadline:
            return None
        for i in commits:
            out[i] = vulns_json(held.get(str(queries[i].commit), ()))
    for lo in range(0, len(others), _BATCH_STEP):
        if time.monotonic() > deadline:
            return None
        step = others[lo : lo + _BATCH_STEP]
        for i, vulns in zip(step, run_queries(reader, [queries[i] for i in step], full=False), strict=True):
            short = [{"id": v["id"], "modified": v["modified"]} for v in vulns]
            out[i] = _dumps({"vulns": short} if short else {})
    return out


def commit_answers(reader: AdvisoryReader, commits: Sequence[str], brief: bool,
                   deadline: float | None = None) -> dict[str, Sequence[str]] | None:
    """``commit -> JSON texts`` of the live records holding it (one index look-up); None
    once past ``deadline``."""
    return reader.affecting_json(commits, brief=brief, deadline=deadline)


def _commit_only(query: Query) -> bool:
    return query.commit is not None and query.purl is None and query.ecosystem is None


def vulns_json(texts: Sequence[str]) -> str:
    return '{"vulns":[' + ",".join(texts) + "]}" if texts else "{}"


def _results_json(results: Sequence[str]) -> str:
    """``{"results":[...]}`` in one join: a 1,000-commit answer is ~3 MB, copied once."""
    pieces = ['{"results":[']
    for text in results:
        pieces += (text, ",")
    if results:
        pieces.pop()
    pieces.append("]}")
    return "".join(pieces)


def _commit_of(query: Query) -> str | None:
    if query.commit:
        return query.commit
    if query.purl is not None and query.purl.type == "huggingface" and query.version:
        return query.version.lower()
    return None


def _matches(
    reader: AdvisoryReader, query: Query, held: Mapping[str, list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    commit = _commit_of(query)
    found = held.get(commit, []) if commit else None
    if query.purl is None and query.ecosystem is None:
        return found or []
    if query.purl is not None and query.purl.type == "huggingface":
        repo_id, hub = f"{query.purl.namespace}/{query.purl.name}", query.purl.repository
        bare = purl(repo_id, repository_url=hub)  # the Hub qualifier kept: a mirror is apart
        if found is None:
            found = reader.for_purl(bare)
        return [r for r in found if matches_purl(r, bare)]
    ecosystem, name = query.ecosystem, query.name
    if query.purl is not None:
        mapped = _purl_package(query.purl)
        if mapped is None:
            return []  # osv.dev: unknown purl types answer nothing, not an error
        ecosystem, name = mapped
    if ecosystem is None or name is None:
        return []
    if found is not None:
        return [r for r in found if matches_package(r, ecosystem, name)]
    found = reader.for_package(ecosystem, name)
    if query.version:
        found = [r for r in found if affects_version(r, ecosystem, name, query.version)]
    return found


def _purl_package(purl: Purl) -> tuple[str, str] | None:
    entry = _PURL_ECOSYSTEMS.get(purl.type)
    if entry is None:
        return None
    ecosystem, joiner = entry
    if purl.namespace and joiner:
        return ecosystem, f"{purl.namespace}{joiner}{purl.name}"
    return ecosystem, purl.name


def _live_unique(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    by_id = {str(r["id"]): r for r in records if not r.get("withdrawn")}
    return [by_id[k] for k in sorted(by_id)]


def _opt_str(obj: Mapping[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > 2048:
        raise QueryError(f"{key} must be a string")
    if "\x00" in value:  # no id has one, and PostgreSQL refuses such a string outright (a 500)
        raise QueryError(f"{key} may not contain NUL characters")
    return value


async def _read_json(request: Request, limit: int) -> dict[str, Any] | Response:
    """The body as a JSON object, whatever the Content-Type; an error response otherwise."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return error(413, 8, "Request body too large.")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return error(413, 8, "Request body too large.")
    try:
        data = json.loads(body) if body.strip() else {}
    except (ValueError, RecursionError):
        return error(400, 3, "Invalid JSON body.")
    if not isinstance(data, dict):
        return error(400, 3, "The body must be a JSON object.")
    return data


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _json(obj: Any, status: int = 200) -> Response:
    return _raw_json(_dumps(obj), status)


def _raw_json(text: str | bytes, status: int = 200) -> Response:
    body = text if isinstance(text, bytes) else text.encode()
    return Response(content=body, status_code=status, media_type="application/json")


def _static(request: Request, body: bytes, media_type: str, records: list[dict[str, Any]]) -> Response:
    """The exported bytes with a strong ``ETag`` (their sha256) and ``Last-Modified`` (the
    newest ``modified``); 304 when the client's copy is current."""
    headers = {"ETag": f'"{hashlib.sha256(body).hexdigest()[:32]}"'}
    last = None
    stamps = [str(r.get("modified", "")) for r in records if r.get("modified")]
    if stamps:
        with contextlib.suppress(ValueError):
            last = parse_timestamp(max(stamps))
            headers["Last-Modified"] = format_datetime(last, usegmt=True)
    if not_modified(request, headers["ETag"], last):
        return Response(status_code=304, headers=headers)
    return Response(content=body, media_type=media_type, headers=headers)
