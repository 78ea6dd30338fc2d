"""The commit index: which advisories' GIT ranges hold a commit, answered without a graph walk.

Each repo's stored commits are split into *chains*: a commit continues its first parent's
chain when it is that chain's newest commit, else it starts a new one (a branch, a rewrite,
a history whose parent was never stored). A commit is labelled ``(chain, pos)``; every
commit of a chain descends from the earlier ones. What else a commit reaches is a map
``chain -> newest reachable pos``, written only where it changes (*chain points*: a chain's
first commit and merges). ``a`` is an ancestor-or-self of ``b`` when ``a`` is at or before
``b`` on its chain, or ``b``'s map reaches ``a``'s position.

Along one chain, whether a range holds a commit only changes where a new event becomes an
ancestor, so an advisory's affected commits are a few *spans* ``[start, end)`` per chain,
the last one open (``end = OPEN``: every later commit of the chain). Spans are computed by
:func:`tracker.model.git_range.range_holds` itself, at one commit per switch point, when a
range is written or edited, and again for the repo's advisories when a commit starts a chain
or merges one (rare on the Hub). A query looks up each commit's label, then the spans that
contain it: spans are filed under ``(level, bucket)``, level ``L`` holding spans no longer
than ``8**L`` in buckets of that size (one or two per span), so a probe is one bucket per
level and what it reads is about what it answers, however long the history.

Imports: stdlib, tracker.model.git_range.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from tracker.model.git_range import ANY, ZERO, range_holds

OPEN = 2**62  # the end of a span that runs on through every later commit of its chain
LEVELS = 8  # closed spans up to 8**7 (2,097,152) commits are bucketed ...
LONG = 99  # ... longer and open ones share one level, scanned per chain

Label = tuple[int, int]  # (chain, pos)
Reach = dict[int, int]  # chain -> newest reachable pos on it (own chain left out)


@dataclass
class Chains:
    """One repo's chain points: ``chain -> [(pos, reach)]`` in position order."""

    points: dict[int, list[tuple[int, Reach]]] = field(default_factory=dict)

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[int, int, Mapping[str, int] | None]]) -> Chains:
        out = cls()
        for chain, pos, reach in sorted(rows, key=lambda r: (r[0], r[1])):
            out.points.setdefault(chain, []).append((pos, {int(k): int(v) for k, v in (reach or {}).items()}))
        return out

    def reach_at(self, chain: int, pos: int) -> Reach:
        """What the commit at ``(chain, pos)`` reaches on other chains."""
        points = self.points.get(chain) or []
        i = bisect.bisect_right(points, pos, key=lambda p: p[0]) - 1
        return points[i][1] if i >= 0 else {}

    def le(self, a: Hashable, b: Hashable) -> bool:
        """``a`` is ``b`` or an ancestor of ``b`` (labels; anything else reaches nothing)."""
        if not (isinstance(a, tuple) and isinstance(b, tuple)):
            return False
        if a[0] == b[0]:
            return bool(a[1] <= b[1])
        return bool(self.reach_at(b[0], b[1]).get(a[0], -1) >= a[1])

    def next_chain(self) -> int:
        return max(self.points, default=-1) + 1

    def first_reaching(self, chain: int, target: Label) -> int | None:
        """The first position of ``chain`` that has ``target`` as an ancestor-or-self."""
        if target[0] == chain:
            return target[1]
        for pos, reach in self.points.get(chain) or []:
            if reach.get(target[0], -1) >= target[1]:
                return pos
        return None


def label_new(
    parents: Sequence[Label | None], *, first_is_tip: bool, chains: Chains
) -> tuple[Label, Reach, bool]:
    """Label a new commit from its parents' labels (None: not stored).

    Returns the label, its reach, and whether it is a chain point (a new chain, or a merge
    that reaches more than its first parent did): then the repo's spans must be recomputed.
    """
    first = parents[0] if parents else None
    reach: Reach = {}
    for parent in parents:
        if parent is None:
            continue
        for chain, pos in [*chains.reach_at(*parent).items(), parent]:
            reach[chain] = max(reach.get(chain, -1), pos)
    if first is not None and first_is_tip:
        label = (first[0], first[1] + 1)
        reach.pop(label[0], None)
        return label, reach, reach != chains.reach_at(*first)
    return (chains.next_chain(), 0), reach, True


def compute_spans(
    events: Sequence[tuple[str, str]], labels: Mapping[str, Label], chains: Chains
) -> list[tuple[int, int, int]]:
    """``(chain, start, end)`` spans of the commits the range of ``events`` holds."""
    keyed: list[tuple[str, Hashable]] = [
        (kind, value if value in (ZERO, ANY) else labels.get(value, f"unstored:{value}"))
        for kind, value in events
    ]
    known = [(kind, v) for kind, v in keyed if isinstance(v, tuple)]
    everywhere = any(kind == "introduced" and v == ZERO for kind, v in keyed)
    out: list[tuple[int, int, int]] = []
    for chain in sorted(chains.points):
        switches = {0} if everywhere else set()
        for kind, label in known:
            assert isinstance(label, tuple)
            first = chains.first_reaching(chain, label)
            if kind == "limit":  # holds strictly before the limit: flips where that ends
                if label[0] == chain:
                    switches.add(label[1])
                elif chain in chains.reach_at(*label):
                    switches.add(chains.reach_at(*label)[chain] + 1)
            elif first is not None:
                switches.add(first)
                if kind == "last_affected" and label[0] == chain:
                    switches.add(first + 1)
        start: int | None = None
        for pos in sorted(switches):
            held = range_holds(keyed, (chain, pos), chains.le)
            if held and start is None:
                start = pos
            elif not held and start is not None:
                out.append((chain, start, pos))
                start = None
        if start is not None:
            out.append((chain, start, OPEN))
    return out


def span_keys(start: int, end: int) -> list[tuple[int, int]]:
    """The ``(level, bucket)`` keys a span is filed under."""
    length = end - start
    level = 0
    while 8**level < length:
        level += 1
    if end >= OPEN or level >= LEVELS:
        return [(LONG, 0)]
    size = 8**level
    return [(level, b) for b in range(start // size, (end - 1) // size + 1)]


def probe_keys(pos: int) -> list[tuple[int, int]]:
    """The ``(level, bucket)`` keys whose spans may hold position ``pos``."""
    return [(level, pos // 8**level) for level in range(LEVELS)] + [(LONG, 0)]


def git_events(record: Mapping[str, object]) -> list[list[tuple[str, str]]]:
    """Each GIT range of an OSV record as ``(kind, lowercased commit)`` events."""
    out = []
    for affected in record.get("affected") or []:  # type: ignore[attr-defined]
        if not isinstance(affected, Mapping):
            continue
        for rng in affected.get("ranges") or []:
            if isinstance(rng, Mapping) and rng.get("type") == "GIT":
                out.append([
                    (str(kind), str(value).lower())
                    for e in rng.get("events") or [] if isinstance(e, Mapping)
                    for kind, value in e.items()
                ])
    return out


def record_spans(
    record: Mapping[str, object], labels: Mapping[str, Label], chains: Chains
) -> set[tuple[int, int, int]]:
    """Spans of every GIT range of ``record`` (their union, as spans may overlap)."""
    return {span for events in git_events(record) for span in compute_spans(events, labels, chains)}


def event_shas(record: Mapping[str, object]) -> set[str]:
    return {v for events in git_events(record) for _k, v in events if v not in (ZERO, ANY)}
