"""Stage 7 (emit): deterministic advisory ids.

An advisory id is ``<prefix>-xxxx-xxxx-xxxx``: the configured database prefix (default
``x_HUBWATCH``; ``x_`` is OSV's prefix for local databases) and 60 bits of the SHA-256 of
``repo_id@sha`` written in 12 symbols of Crockford's base32 alphabet (lowercase; no i, l, o,
u), in three groups of four like GHSA ids. The same revision always gets the same id: a
re-run, a crash and retry, a second daemon or a fresh database all agree.

Collision odds: with n advisories in one database the chance that any two share an id is
about n² / 2⁶¹, i.e. 4·10⁻¹³ for 1,000, 4·10⁻⁹ for 100,000 and 4·10⁻⁷ for a million
revisions. The store keeps ids unique and must treat a clash (same id, other repo or sha)
as an error rather than overwrite.

Imports: stdlib only.
"""

from __future__ import annotations

import hashlib
import re

ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lowercase
DEFAULT_PREFIX = "x_HUBWATCH"
_PREFIX_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
_SHA_RE = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
ID_RE = re.compile(
    r"(?P<prefix>[A-Za-z][A-Za-z0-9_]{0,63})-[0-9a-hjkmnp-tv-z]{4}(?:-[0-9a-hjkmnp-tv-z]{4}){2}"
)


def digest(repo_id: str, sha: str) -> str:
    """The 12-symbol digest of ``repo_id@sha`` as ``xxxx-xxxx-xxxx``."""
    raw = hashlib.sha256(f"{repo_id}@{sha}".encode()).digest()
    value = int.from_bytes(raw[:8], "big") >> 4  # the first 60 bits
    symbols = "".join(ALPHABET[(value >> shift) & 31] for shift in range(55, -1, -5))
    return f"{symbols[0:4]}-{symbols[4:8]}-{symbols[8:12]}"


def advisory_id(prefix: str, repo_id: str, sha: str) -> str:
    """The id of the advisory of revision ``sha`` of ``repo_id``.

    ``repo_id`` is taken as given (the canonical ``org/name``); ``sha`` must be a full commit
    hash and is lowercased, so ``ABC…`` and ``abc…`` name the same revision.
    """
    if not _PREFIX_RE.fullmatch(prefix):
        raise ValueError(f"advisory id prefix must be letters, digits and _: {prefix!r}")
    if not repo_id or any(ch.isspace() for ch in repo_id):
        raise ValueError(f"repo id must be non-empty without whitespace: {repo_id!r}")
    sha = sha.lower()
    if not _SHA_RE.fullmatch(sha):
        raise ValueError(f"not a full commit hash: {sha!r}")
    return f"{prefix}-{digest(repo_id, sha)}"


def is_advisory_id(value: str) -> bool:
    """Whether ``value`` has the shape of an id this module makes (any prefix)."""
    return ID_RE.fullmatch(value) is not None
