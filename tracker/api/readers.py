"""Stage 8 (read): what the OSV routes need from the store, and an in-memory reference.

:class:`AdvisoryReader` is the seam between :mod:`tracker.api.osv_routes` and the store. The
store returns *candidates*; the router decides OSV semantics with :mod:`advisories.query`:

- ``affecting(shas)``: for each commit, exactly the records whose GIT range holds it on the
  stored commit graph (the store answers from its commit index, never walking history at
  query time; the in-memory reader walks, as the reference). ``full=False`` may answer each
  record as only ``{"id", "modified"}`` (and ``"withdrawn"`` when set): what a batch needs.
- ``affecting_json(shas, brief=)``: the same look-up for commit-only queries, live records
  only, each already encoded (the whole record, or ``brief``: its ``{"id","modified"}``),
  sorted by id: what the routes splice into their answers without decoding anything;
  None once past ``deadline`` (a batch's time budget), when the reader checks one.
- ``for_purl(purl)``: every record whose ``affected[].database_specific.purl`` names the
  package of ``purl`` (given without version); the router checks the version.
- ``for_package(ecosystem, name)``: records with that ``affected[].package`` (hubwatch's
  own records have none; the store may return ``[]``).

Withdrawn records are returned too; the router leaves them out of queries but serves them
by id. Readers are called from a worker thread (sync methods).

Imports: stdlib, advisories.query.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from advisories.query import matches_package, parse_purl, record_contains_commit


class AdvisoryReader(Protocol):
    """Read access to stored OSV records and the commit graph."""

    def get(self, id: str) -> dict[str, Any] | None: ...

    def all_records(self) -> Iterable[dict[str, Any]]: ...

    def for_purl(self, purl: str) -> list[dict[str, Any]]: ...

    def for_package(self, ecosystem: str, name: str) -> list[dict[str, Any]]: ...

    def affecting(self, shas: Iterable[str], *, full: bool = True) -> dict[str, list[dict[str, Any]]]: ...

    def affecting_json(self, shas: Iterable[str], *, brief: bool,
                       deadline: float | None = None) -> dict[str, Sequence[str]] | None: ...


class MemoryAdvisoryReader:
    """An :class:`AdvisoryReader` over records and a parent map held in memory.

    Used by tests, by the test OSV server and as the reference for the store's semantics.
    ``parents`` maps each known commit to its parents.
    """

    def __init__(
        self,
        records: Iterable[Mapping[str, Any]],
        parents: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self._records = {str(r["id"]): dict(r) for r in records}
        self._parents = {k.lower(): [p.lower() for p in v] for k, v in (parents or {}).items()}

    def put(self, record: Mapping[str, Any]) -> None:
        """Insert or replace a record (a lifecycle edit keeps the id)."""
        self._records[str(record["id"])] = dict(record)

    def get(self, id: str) -> dict[str, Any] | None:
        return self._records.get(id)

    def all_records(self) -> Iterable[dict[str, Any]]:
        return list(self._records.values())

    def for_purl(self, purl: str) -> list[dict[str, Any]]:
        query = parse_purl(purl)
        if query is None:
            return []
        out = []
        for record in self._records.values():
            for affected in record.get("affected") or []:
                own = parse_purl(str((affected.get("database_specific") or {}).get("purl", "")))
                if own is not None and own.package == query.package:
                    out.append(record)
                    break
        return out

    def for_package(self, ecosystem: str, name: str) -> list[dict[str, Any]]:
        return [r for r in self._records.values() if matches_package(r, ecosystem, name)]

    def affecting(self, shas: Iterable[str], *, full: bool = True) -> dict[str, list[dict[str, Any]]]:
        out = {}
        for sha in {s.lower() for s in shas}:
            out[sha] = [
                r for r in self._records.values() if record_contains_commit(r, sha, self.ancestors_of)
            ]
        return out

    def affecting_json(self, shas: Iterable[str], *, brief: bool,
                       deadline: float | None = None) -> dict[str, Sequence[str]] | None:
        out: dict[str, Sequence[str]] = {}
        for sha, records in self.affecting(shas).items():
            live = {str(r["id"]): r for r in records if not r.get("withdrawn")}
            out[sha] = [
                _compact({"id": r["id"], "modified": r["modified"]} if brief else r)
                for r in (live[k] for k in sorted(live))
            ]
        return out

    def ancestors_of(self, sha: str) -> set[str]:
        seen: set[str] = set()
        stack = list(self._parents.get(sha.lower(), []))
        while stack:
            current = stack.pop()
            if current not in seen:
                seen.add(current)
                stack.extend(self._parents.get(current, []))
        return seen


def _compact(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
