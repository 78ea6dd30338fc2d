"""Weight manifest changes: files added, removed or replaced, tensors, sharding indexes.

Layer 1 (stage 4, diff), pure. A weight file is identified by its content id (LFS sha256),
so "replaced" means new bytes under the same name. Files of one format removed and added in
the same revision are a re-upload (a re-shard, or new weights under new names) and carry
``weights.reupload`` on both sides. When every safetensors header is known on both sides,
one more change compares the tensors themselves (dtype, shape, totals per dtype).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from tracker.diff import topics as t
from tracker.diff.sides import Sides
from tracker.model import Change, ChangeKind, WeightFile, WeightManifest
from tracker.model.inside import PickleScan

MAX_TENSORS_SHOWN = 200
_INDEX_SUFFIXES = (
    ".safetensors.index.json",
    ".bin.index.json",
    ".h5.index.json",
    ".msgpack.index.json",
)
Table = dict[str, tuple[str, tuple[int, ...], str]]


def is_weight_index(path: str) -> bool:
    return path.endswith(_INDEX_SUFFIXES)


def gb(n: int | None) -> str:
    return "?" if n is None else f"{n / 1e9:.2f} GB"


def _side(f: WeightFile | None) -> dict[str, Any] | None:
    if f is None:
        return None
    return {
        "size": f.size,
        "content_id": f.content_id,
        "tensors": None if f.tensors is None else len(f.tensors),
    }


def _file_change(
    path: str, old: WeightFile | None, new: WeightFile | None, reup: set[str]
) -> Change:
    f = new or old
    assert f is not None
    op = "added" if old is None else "removed" if new is None else "changed"
    if f.format == "pickle":
        topic = t.by_op(
            op, t.WEIGHTS_PICKLE_ADDED, t.WEIGHTS_PICKLE_REPLACED, t.WEIGHTS_PICKLE_REMOVED
        )
    else:
        topic = t.by_op(op, t.WEIGHTS_ADDED, t.WEIGHTS_REPLACED, t.WEIGHTS_REMOVED)
    topics = [topic]
    if op != "changed" and f.format in reup:
        topics.append(t.WEIGHTS_REUPLOAD)
    label = "pickle weights" if f.format == "pickle" else "weights"
    if op == "changed":
        assert old is not None and new is not None
        summary = f"{label} replaced: {path} ({gb(old.size)} -> {gb(new.size)})"
    else:
        summary = f"{label} {op}: {path} ({f.format}, {gb(f.size)})"
    detail: dict[str, Any] = {"op": op, "format": f.format, "old": _side(old), "new": _side(new)}
    if f.format == "pickle" and new is not None and new.pickle is not None:
        words, extra = pickle_words(new.pickle)
        summary += f"; {words}"
        topics += extra
        detail["pickle_imports"] = pickle_detail(new.pickle)
    if old is not None and new is not None and old.tensors is not None and new.tensors is not None:
        detail["tensors"] = compare_tables(
            {x.name: (x.dtype, x.shape, path) for x in old.tensors},
            {x.name: (x.dtype, x.shape, path) for x in new.tensors},
        )
    return Change(ChangeKind.WEIGHTS, path, summary, tuple(sorted(set(topics))), detail=detail)


def pickle_words(scan: PickleScan) -> tuple[str, list[str]]:
    """What a pickle's imports say, and their topics: dangerous ones named first."""
    if scan.error is not None:
        return f"imports not listed ({scan.error})", []
    dangerous = [i.qualname for i in scan.by_verdict("dangerous")]
    unknown = [i.qualname for i in scan.by_verdict("unknown")]
    cut = "" if scan.complete else " (in the part read)"
    if dangerous:
        words = f"DANGEROUS imports{cut}: {', '.join(dangerous[:5])}"
        if unknown:
            words += f"; unknown imports: {', '.join(unknown[:3])}"
        return words, [t.WEIGHTS_PICKLE_DANGEROUS]
    if unknown:
        return f"unknown imports{cut}: {', '.join(unknown[:5])}", [t.WEIGHTS_PICKLE_UNKNOWN]
    if not scan.complete:
        return "imports only tensor-rebuild globals in the part read", [t.WEIGHTS_PICKLE_BENIGN]
    return "imports only tensor-rebuild globals", [t.WEIGHTS_PICKLE_BENIGN]


def pickle_detail(scan: PickleScan) -> dict[str, Any]:
    return {
        "container": scan.container,
        "members": list(scan.members),
        "complete": scan.complete,
        "error": scan.error,
        "imports": [{"global": i.qualname, "verdict": i.verdict} for i in scan.imports[:200]],
        "dangerous": [i.qualname for i in scan.by_verdict("dangerous")],
        "unknown": [i.qualname for i in scan.by_verdict("unknown")],
    }


def tensor_table(manifest: WeightManifest) -> Table | None:
    """name -> (dtype, shape, file) over all safetensors files; None if any header is unknown."""
    st = [f for f in manifest.files if f.format == "safetensors"]
    if not st or any(f.tensors is None for f in st):
        return None
    return {x.name: (x.dtype, x.shape, f.path) for f in st for x in f.tensors or ()}


def _totals(table: Table) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for dtype, shape, _ in table.values():
        n = 1
        for d in shape:
            n *= d
        out[dtype] += n
    return dict(out)


def compare_tables(old: Table, new: Table) -> dict[str, Any]:
    """Tensors added / removed / with another dtype or shape, and parameters per dtype."""
    rows: list[dict[str, Any]] = []
    for name in sorted(old.keys() | new.keys()):
        o, n = old.get(name), new.get(name)
        if o is not None and n is not None and o[:2] == n[:2]:
            continue
        op = "added" if o is None else "removed" if n is None else "changed"
        row: dict[str, Any] = {"name": name, "op": op}
        if o is not None:
            row["old"] = {"dtype": o[0], "shape": list(o[1])}
        if n is not None:
            row["new"] = {"dtype": n[0], "shape": list(n[1])}
        rows.append(row)
    to, tn = _totals(old), _totals(new)
    return {
        "changes": rows[:MAX_TENSORS_SHOWN],
        "changes_total": len(rows),
        "params_by_dtype": {
            d: {"old": to.get(d, 0), "new": tn.get(d, 0)} for d in sorted(to.keys() | tn.keys())
        },
    }


def _tensor_change(sides: Sides, changed: list[str]) -> Change | None:
    old, new = tensor_table(sides.base.weights), tensor_table(sides.head.weights)
    if old is None or new is None or not changed:
        return None
    cmp = compare_tables(old, new)
    if not cmp["changes_total"]:
        return None
    ops: dict[str, int] = defaultdict(int)
    for r in cmp["changes"]:
        if r["op"] == "changed":
            o, n = r["old"], r["new"]
            ops["dtype" if o["dtype"] != n["dtype"] else "shape"] += 1
        else:
            ops[r["op"]] += 1
    parts = [f"{v} {k}" for k, v in sorted(ops.items())]
    totals = ", ".join(
        f"{d} {v['old'] / 1e9:.2f}B -> {v['new'] / 1e9:.2f}B"
        for d, v in cmp["params_by_dtype"].items()
    )
    index = [p for p in changed if p.endswith(".safetensors.index.json")]
    path = (index or sorted(changed))[0]
    return Change(
        ChangeKind.WEIGHTS,
        path,
        f"tensors changed ({', '.join(parts)}); parameters {totals}",
        (t.WEIGHTS_TENSORS,),
        detail={"op": "changed", "tensors": cmp},
    )


def _index_change(sides: Sides, path: str, op: str) -> Change | None:
    old_map = sides.base.weights.index_weight_maps.get(path)
    new_map = sides.head.weights.index_weight_maps.get(path)
    if (op != "added" and old_map is None) or (op != "removed" and new_map is None):
        side = "base" if op != "added" and old_map is None else "head"
        reason = sides.issue(side, path) or "not parsed"
        return Change(
            ChangeKind.WEIGHTS,
            path,
            f"{path} {op} but could not be read ({side}: {reason})",
            (t.WEIGHTS_UNREADABLE,),
            detail={"op": op, "unreadable": {side: reason}},
        )
    om, nm = dict(old_map or {}), dict(new_map or {})
    ot = sides.base.weights.index_total_sizes.get(path) if op != "added" else None
    nt = sides.head.weights.index_total_sizes.get(path) if op != "removed" else None
    gone, came = sorted(om.keys() - nm.keys()), sorted(nm.keys() - om.keys())
    moved = sorted(k for k in om.keys() & nm.keys() if om[k] != nm[k])
    detail: dict[str, Any] = {
        "op": op,
        "total_size": {"old": ot, "new": nt},
        "shards": {"old": sorted(set(om.values())), "new": sorted(set(nm.values()))},
        "tensors": {"old": len(om), "new": len(nm)},
        "tensors_removed": gone[:MAX_TENSORS_SHOWN],
        "tensors_added": came[:MAX_TENSORS_SHOWN],
        "tensors_moved": len(moved),
    }
    if op != "changed":
        summary = f"{path} {op} ({len(nm or om)} tensors in {len(set((nm or om).values()))} shards)"
        return Change(ChangeKind.WEIGHTS, path, summary, (t.WEIGHTS_INDEX,), detail=detail)
    if not (gone or came or moved or ot != nt):
        return None  # re-serialised only: the coverage pass reports it
    parts = []
    if gone or came:
        parts.append(f"tensors +{len(came)}/-{len(gone)}")
    if moved:
        parts.append(
            f"{len(moved)} tensors re-mapped ({len(set(om.values()))} -> {len(set(nm.values()))} shards)"
        )
    if ot != nt:
        parts.append(f"total_size {gb(ot)} -> {gb(nt)}")
    topic = t.WEIGHTS_INDEX_TENSORS if gone or came else t.WEIGHTS_INDEX
    return Change(ChangeKind.WEIGHTS, path, f"{path}: " + ", ".join(parts), (topic,), detail=detail)


def diff_weights(sides: Sides) -> list[Change]:
    """Per-file changes, per-index changes, and one tensor-level change when comparable."""
    old, new = sides.base.weights.by_path(), sides.head.weights.by_path()
    reup = {f.format for p, f in old.items() if p not in new} & {
        f.format for p, f in new.items() if p not in old
    }
    out: list[Change] = []
    changed_files: list[str] = []
    for path in sorted(old.keys() | new.keys()):
        o, n = old.get(path), new.get(path)
        if o is not None and n is not None and o.content_id == n.content_id:
            continue
        changed_files.append(path)
        out.append(_file_change(path, o, n, reup))
    for path, op in sides.changed_paths().items():
        if is_weight_index(path):
            change = _index_change(sides, path, op)
            if change is not None:
                out.append(change)
            changed_files.append(path)
    tensors = _tensor_change(sides, changed_files)
    if tensors is not None:
        out.append(tensors)
    return out
