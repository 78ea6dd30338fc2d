"""Revisions rebuilt from the store: parsed artifacts without any source access."""

from __future__ import annotations

from storage.store import Store
from storage.trees import parse_tree, serialise_tree
from tracker.extract import extract_artifacts
from tracker.model import Artifacts

__all__ = ["parse_tree", "serialise_tree", "stored_artifacts"]


def stored_artifacts(store: Store, repo_id: str, sha: str) -> Artifacts | None:
    """The parsed artifacts of a stored revision (for ``diff`` between any two revisions)."""
    snap = store.snapshot(repo_id, sha)
    return None if snap is None else extract_artifacts(snap)
