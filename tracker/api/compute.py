"""Stage 8 (read): what the API computes on request from stored data: compares and plans.

A compare rebuilds both stored snapshots (no source access), extracts, diffs and applies the
severity rules, exactly as ``hubwatch diff`` does. Every diff and render is bounded (the
sandbox's fuel, the bounded text diff); on top, a compare is computed at most twice at once
and its answer kept (stored revisions never change), so repeating a request costs nothing
(issue 16, point 4: the compare route re-rendered both sides on every request). Plans come from the pure planner. The
pure layers are imported lazily, so the read API still serves everything else in a build
without them (the routes answer 501).
"""

from __future__ import annotations

import json
import threading
import weakref
from collections import OrderedDict
from dataclasses import asdict, replace
from typing import Any

from fastapi import HTTPException

from storage.records import RevisionRecord
from storage.store import Store
from tracker.api.views import change_json
from tracker.config import Settings

MAX_CONFIG_BYTES = 1_000_000
MAX_CONFIGS = 16


class Unavailable(HTTPException):
    def __init__(self, what: str):
        super().__init__(501, f"{what} is not available in this build")


COMPARE_CACHE = 128  # answers kept
COMPARE_WAIT = 30.0  # seconds a request waits for a compare slot before 503
_COMPARE_SLOTS = threading.BoundedSemaphore(2)
_compared: weakref.WeakKeyDictionary[Store, OrderedDict[tuple[str, str, str], dict[str, Any]]] = (
    weakref.WeakKeyDictionary())
_compared_lock = threading.Lock()


def compare_revisions(store: Store, settings: Settings, repo_id: str, base: RevisionRecord,
                      head: RevisionRecord) -> dict[str, Any]:
    """The changes between any two stored revisions, with the plan delta between them."""
    key = (repo_id, base.sha, head.sha)
    with _compared_lock:
        kept = _compared.setdefault(store, OrderedDict())
        if key in kept:
            kept.move_to_end(key)
            return kept[key]
    if not _COMPARE_SLOTS.acquire(timeout=COMPARE_WAIT):
        raise HTTPException(503, "too many compares at once; retry shortly", headers={"Retry-After": "5"})
    try:
        answer = _compare(store, settings, repo_id, base, head)
    finally:
        _COMPARE_SLOTS.release()
    with _compared_lock:
        kept[key] = answer
        while len(kept) > COMPARE_CACHE:
            kept.popitem(last=False)
    return answer


def _compare(store: Store, settings: Settings, repo_id: str, base: RevisionRecord,
             head: RevisionRecord) -> dict[str, Any]:
    try:
        from advisories.rules import apply_rules
        from tracker.diff import diff_artifacts
        from tracker.extract import extract_artifacts
    except ImportError as e:
        raise Unavailable("compare") from e
    snaps = store.snapshot(repo_id, base.sha), store.snapshot(repo_id, head.sha)
    if snaps[0] is None or snaps[1] is None:
        raise HTTPException(404, "the stored tree of one of the revisions is missing")
    art_a, art_b = extract_artifacts(snaps[0]), extract_artifacts(snaps[1])
    result = apply_rules(diff_artifacts(art_a, art_b, base_sha=base.sha, head_sha=head.sha))
    return {
        "repo": repo_id, "base": base.sha, "head": head.sha,
        "severity": result.severity.value if result.severity else None,
        "changes": [change_json(c, detail=True) for c in result.changes],
        "plan_delta": _plan_delta(settings, art_a.config, art_b.config),
    }


def plan_config(settings: Settings, config: Any) -> dict[str, Any]:
    """``plan --json`` of one config.json document."""
    try:
        from tracker.extract.model_config import parse_model_config
        from tracker.planner import plan, plan_to_json
    except ImportError as e:
        raise Unavailable("planning") from e
    if not isinstance(config, dict):
        raise HTTPException(400, "a config.json must be a JSON object")
    try:
        parsed = parse_model_config(config)
        if parsed.model_type is None and parsed.architecture is None:
            raise HTTPException(422, "not a config.json: it names no model_type and no architectures")
        return dict(plan_to_json(plan(parsed, assumptions=cost_assumptions(settings))))
    except (ValueError, TypeError, KeyError, ArithmeticError, RecursionError) as e:
        raise HTTPException(422, f"cannot plan this config: {type(e).__name__}: {e}"[:500]) from e


def parse_config_body(body: bytes) -> Any:
    """A config.json (object) or several (array) from a request body, capped and checked."""
    if len(body) > MAX_CONFIG_BYTES:
        raise HTTPException(413, f"a config body is at most {MAX_CONFIG_BYTES} bytes")
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise HTTPException(400, f"the body is not JSON: {e}"[:300]) from e
    if isinstance(doc, list):
        if not doc or len(doc) > MAX_CONFIGS or not all(isinstance(d, dict) for d in doc):
            raise HTTPException(400, f"an array body holds 1 to {MAX_CONFIGS} config.json objects")
        return doc
    if not isinstance(doc, dict):
        raise HTTPException(400, "a config.json must be a JSON object")
    return doc


def cost_assumptions(settings: Settings) -> Any:
    """``[planner]`` keys onto the planner's CostAssumptions, as the CLI maps them (unset keys: defaults)."""
    from tracker.planner import CostAssumptions

    updates = {k: v for k, v in asdict(settings.planner).items() if v is not None}
    return replace(CostAssumptions(), **updates)


def _plan_delta(settings: Settings, old: Any, new: Any) -> dict[str, Any] | None:
    if not isinstance(old, dict) or not isinstance(new, dict):
        return None
    try:
        from tracker.extract.model_config import parse_model_config
        from tracker.planner import compare, delta_to_json, plan
    except ImportError:
        return None
    try:
        assumptions = cost_assumptions(settings)
        a = plan(parse_model_config(old), assumptions=assumptions)
        b = plan(parse_model_config(new), assumptions=assumptions)
        return dict(delta_to_json(compare(a, b)))
    except (ValueError, TypeError, KeyError, ArithmeticError, RecursionError):
        return None
