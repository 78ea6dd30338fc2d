"""Stage 8 (read): which OSV records affect a commit, a purl or a package version.

Pure: the commit graph comes in as ``ancestors_of(sha) -> set[str]`` (the commits reachable
from ``sha`` in the stored graph; with or without ``sha`` itself), so the store decides how
to walk it and this module decides what OSV's ranges mean.

GIT ranges follow the spec's evaluation (docs/schema.md, "Evaluation"): ``u < v`` when ``u``
is an ancestor of ``v``. Over a DAG the sorted walk becomes: the events at or before the
commit (``last_affected`` only strictly before) that no other such event descends from
decide it; affected when one of them is ``introduced`` and none is ``fixed`` or
``last_affected``. With limits, the commit must also be a strict ancestor of a limit. On the
spec's example graph that gives: ``introduced X, fixed Y`` affects X, A, B, C, D, E, F (every
descendant of X not containing Y); ``introduced X, limit Y`` affects X, A, B, C.

ECOSYSTEM and SEMVER ranges are evaluated for PyPI (PEP 440) and SemVer orderings; other
ecosystems match their explicit ``versions`` list only.

Imports: stdlib, packaging, tracker.model.git_range (the evaluation itself).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from packaging.version import InvalidVersion, Version

from tracker.model.git_range import range_holds

AncestorsOf = Callable[[str], Iterable[str]]


def range_contains(
    events: Sequence[Mapping[str, str]], commit: str, ancestors_of: AncestorsOf
) -> bool:
    """Whether the GIT range with ``events`` holds ``commit`` (walking ``ancestors_of``)."""
    memo: dict[str, set[str]] = {}

    def reach(sha: str) -> set[str]:
        if sha not in memo:
            memo[sha] = {s.lower() for s in ancestors_of(sha)} | {sha}
        return memo[sha]

    def le(a: Hashable, b: Hashable) -> bool:
        return a == b or (isinstance(b, str) and a in reach(b))

    parsed = [(kind, str(value).lower()) for e in events for kind, value in e.items()]
    return range_holds(parsed, commit.lower(), le)


def record_contains_commit(
    record: Mapping[str, Any], commit: str, ancestors_of: AncestorsOf
) -> bool:
    """Whether any GIT range of ``record`` holds ``commit``."""
    return any(
        range_contains(rng.get("events") or [], commit, ancestors_of)
        for rng in _ranges(record, {"GIT"})
    )


# --- purls and packages ----------------------------------------------------------------------


HF_DEFAULT_REPOSITORY = "https://huggingface.co"


@dataclass(frozen=True, slots=True)
class Purl:
    """The parts of a Package URL that identify a package (subpath and other qualifiers dropped).

    ``repository``: for ``huggingface`` purls, the Hub the model lives on (the
    ``repository_url`` qualifier, huggingface.co when absent): a mirror's ``org/name`` is
    another package than huggingface.co's.
    """

    type: str
    namespace: str
    name: str
    version: str | None = None
    repository: str = ""

    @property
    def package(self) -> tuple[str, str, str, str]:
        return (self.type, self.namespace, self.name, self.repository)


def parse_purl(text: str) -> Purl | None:
    """Parse ``pkg:type/namespace/name@version?qualifiers#subpath``; None when malformed."""
    if not isinstance(text, str) or len(text) > 2048 or text[:4].lower() != "pkg:":
        return None
    rest, _, qualifiers = text[4:].lstrip("/").split("#", 1)[0].partition("?")
    version = None
    if "@" in rest:
        rest, version = rest.rsplit("@", 1)
        version = unquote(version) or None
    segments = [unquote(s) for s in rest.split("/") if s]
    if len(segments) < 2 or not re.fullmatch(r"[A-Za-z][A-Za-z0-9.+-]*", segments[0]):
        return None
    kind = segments[0].lower()
    namespace, name = "/".join(segments[1:-1]), segments[-1]
    if kind == "pypi":
        name = normalize_name("PyPI", name)
    repository = ""
    if kind == "huggingface":
        version = version.lower() if version else None
        repository = _hub_repository(qualifiers)
    return Purl(kind, namespace, name, version, repository)


def _hub_repository(qualifiers: str) -> str:
    """The ``repository_url`` qualifier, normalised (scheme and host lowercase, no final /)."""
    value = HF_DEFAULT_REPOSITORY
    for pair in qualifiers.split("&"):
        key, _, raw = pair.partition("=")
        if key.lower() == "repository_url" and raw:
            value = unquote(raw)
    scheme, sep, rest = value.rstrip("/").partition("://")
    host, slash, path = rest.partition("/")
    return f"{scheme.lower()}{sep}{host.lower()}{slash}{path}"


def matches_purl(
    record: Mapping[str, Any], purl: str, ancestors_of: AncestorsOf | None = None
) -> bool:
    """Whether ``record`` concerns the package of ``purl`` (and its version, when given).

    Our records carry their purl in ``affected[].database_specific.purl``; other databases'
    in ``affected[].package.purl``. With a version: a huggingface purl's version is a commit,
    contained in the GIT range when ``ancestors_of`` is given, else equal to the advisory's
    own revision; other purls are checked against the entry's ECOSYSTEM/SEMVER ranges.
    """
    query = parse_purl(purl)
    if query is None:
        return False
    for affected in record.get("affected") or []:
        if not isinstance(affected, Mapping):
            continue
        own = [
            parse_purl(str((affected.get("database_specific") or {}).get("purl", ""))),
            parse_purl(str((affected.get("package") or {}).get("purl", ""))),
        ]
        for candidate in own:
            if candidate is None or candidate.package != query.package:
                continue
            if query.version is None:
                return True
            if _version_matches(affected, candidate, query.version, ancestors_of):
                return True
    return False


def _version_matches(
    affected: Mapping[str, Any], candidate: Purl, version: str, ancestors_of: AncestorsOf | None
) -> bool:
    if candidate.type == "huggingface":
        if ancestors_of is None:
            return candidate.version == version
        return any(
            range_contains(r.get("events") or [], version, ancestors_of)
            for r in affected.get("ranges") or []
            if isinstance(r, Mapping) and r.get("type") == "GIT"
        )
    ecosystem = str((affected.get("package") or {}).get("ecosystem", ""))
    return affected_version(affected, ecosystem or candidate.type, version)


def matches_package(record: Mapping[str, Any], ecosystem: str, name: str) -> bool:
    """Whether an ``affected`` entry of ``record`` names ``ecosystem``/``name``."""
    return bool(_entries(record, ecosystem, name))


def affects_version(record: Mapping[str, Any], ecosystem: str, name: str, version: str) -> bool:
    """Whether ``version`` of ``ecosystem``/``name`` is affected (ranges or ``versions``)."""
    return any(affected_version(a, ecosystem, version) for a in _entries(record, ecosystem, name))


def affected_version(affected: Mapping[str, Any], ecosystem: str, version: str) -> bool:
    """One ``affected`` entry: ``version`` listed, or inside an ECOSYSTEM/SEMVER range."""
    if version in (affected.get("versions") or []):
        return True
    for rng in affected.get("ranges") or []:
        kind = rng.get("type") if isinstance(rng, Mapping) else None
        key = _semver_key if kind == "SEMVER" else _ecosystem_key(ecosystem)
        if (
            kind in ("SEMVER", "ECOSYSTEM")
            and key is not None
            and _linear_contains(rng.get("events") or [], version, key)
        ):
            return True
    return False


def normalize_name(ecosystem: str, name: str) -> str:
    """Package names as the ecosystem compares them (PyPI: PEP 503)."""
    if ecosystem.split(":", 1)[0].lower() == "pypi":
        return re.sub(r"[-_.]+", "-", name).lower()
    return name


def _entries(record: Mapping[str, Any], ecosystem: str, name: str) -> list[Mapping[str, Any]]:
    base = ecosystem.split(":", 1)[0]
    wanted = normalize_name(base, name)
    out = []
    for affected in record.get("affected") or []:
        package = affected.get("package") if isinstance(affected, Mapping) else None
        if not isinstance(package, Mapping):
            continue
        theirs = str(package.get("ecosystem", "")).split(":", 1)[0]
        if theirs == base and normalize_name(base, str(package.get("name", ""))) == wanted:
            out.append(affected)
    return out


def _ranges(record: Mapping[str, Any], types: set[str]) -> list[Mapping[str, Any]]:
    return [
        rng
        for affected in record.get("affected") or []
        if isinstance(affected, Mapping)
        for rng in affected.get("ranges") or []
        if isinstance(rng, Mapping) and rng.get("type") in types
    ]


# --- linear orderings ------------------------------------------------------------------------

Key = Callable[[str], Any]


def _linear_contains(events: Sequence[Mapping[str, str]], version: str, key: Key) -> bool:
    """The spec's pseudocode for ordered versions (``0`` is before everything)."""
    try:
        v = key(version)
        parsed = [
            (kind, value, None if value in ("0", "*") else key(value))
            for e in events
            for kind, value in e.items()
        ]
    except (InvalidVersion, ValueError, TypeError):
        return False
    limits = [k for kind, value, k in parsed if kind == "limit"]
    if limits and not any(k is None or v < k for k in limits):
        return False
    ordered = sorted(
        (p for p in parsed if p[0] != "limit"),
        key=lambda p: (p[2] is not None, p[2] if p[2] is not None else 0),
    )
    affected = False
    for kind, _value, k in ordered:
        if kind == "introduced" and (k is None or v >= k):
            affected = True
        elif k is not None and (
            (kind == "fixed" and v >= k) or (kind == "last_affected" and v > k)
        ):
            affected = False
    return affected


def _ecosystem_key(ecosystem: str) -> Key | None:
    if ecosystem.split(":", 1)[0].lower() == "pypi":
        return Version
    return None


_SEMVER = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?")


def _semver_key(text: str) -> tuple[int, int, int, int, tuple[tuple[int, int, str], ...]]:
    match = _SEMVER.fullmatch(text.strip())
    if not match:
        raise ValueError(f"not SemVer: {text!r}")
    major, minor, patch, pre = match.groups()
    parts = tuple(
        (0, int(p), "") if p.isdigit() else (1, 0, p) for p in (pre.split(".") if pre else [])
    )
    return (int(major), int(minor), int(patch), 0 if pre else 1, parts)
