"""Layer 0: frozen value types that cross a stage or package boundary.

Nothing here does I/O. Plan types live in :mod:`tracker.model.plan` (owned by the planner),
everything else about revisions, files and changes lives in :mod:`tracker.model.core`.
"""

from tracker.model.core import (
    BLOB_ID_EMPTY,
    Artifacts,
    Change,
    ChangeKind,
    CommitInfo,
    FileEntry,
    ParseIssue,
    RevisionDiff,
    Severity,
    Snapshot,
    TensorInfo,
    TokenizerSummary,
    WeightFile,
    WeightManifest,
    max_severity,
)

__all__ = [
    "BLOB_ID_EMPTY",
    "Artifacts",
    "Change",
    "ChangeKind",
    "CommitInfo",
    "FileEntry",
    "ParseIssue",
    "RevisionDiff",
    "Severity",
    "Snapshot",
    "TensorInfo",
    "TokenizerSummary",
    "WeightFile",
    "WeightManifest",
    "max_severity",
]
