"""Layer 0: what an OSV GIT range holds, over any ordering of commits. Pure.

Commits are opaque hashable values; ``le(a, b)`` answers whether ``a`` is ``b`` or one of
its ancestors. The schema's evaluation (docs/schema.md, "Evaluation", ``u < v`` when ``u``
is an ancestor of ``v``) becomes, over a DAG: the events at or before the commit
(``last_affected`` only strictly before) that no other such event descends from decide it;
affected when one of them is ``introduced`` and none is ``fixed`` or ``last_affected``.
With limits, the commit must also be a strict ancestor of a limit.

One function serves both sides (issue 17): :mod:`advisories.query` evaluates it with an
ancestor walk (the reference), :mod:`storage.commit_index` with chain labels, to write down
which commits a range holds when the range is written instead of walking at query time.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

ZERO = "0"  # introduced "0": from the first commit on
ANY = "*"  # limit "*": no limit
STOP = ("fixed", "last_affected")

Le = Callable[[Hashable, Hashable], bool]


def range_holds(events: Sequence[tuple[str, Hashable]], commit: Hashable, le: Le) -> bool:
    """Whether the range of ``(kind, commit)`` events holds ``commit`` under ``le``."""

    def before(a: Hashable, b: Hashable) -> bool:  # a is a strict ancestor of b
        return a != b and (a == ZERO or (b != ZERO and le(a, b)))

    limits = [v for k, v in events if k == "limit"]
    if limits and ANY not in limits and not any(before(commit, v) for v in limits):
        return False
    relevant = [
        (kind, value)
        for kind, value in events
        if (kind == "introduced" and (value == ZERO or le(value, commit)))
        or (kind == "fixed" and value != ZERO and le(value, commit))
        or (kind == "last_affected" and value not in (ZERO, commit) and le(value, commit))
    ]
    latest = [e for e in relevant if not any(before(e[1], o[1]) for o in relevant)]
    kinds = {kind for kind, _ in latest}
    return "introduced" in kinds and not kinds.intersection(STOP)
