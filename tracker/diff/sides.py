"""The two revisions being compared, with the lookups every diff module needs.

Layer 1 (stage 4, diff), pure. Whether a file changed is decided by its content id (the LFS
sha256, else the git blob id), never by parsing: a file whose bytes changed is reported even
when nothing hubwatch parses out of it did.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tracker.model import Artifacts, FileEntry


@dataclass(frozen=True)
class Sides:
    """``base`` (empty Artifacts for a root commit) and ``head``."""

    base: Artifacts
    head: Artifacts
    base_files: dict[str, FileEntry] = field(init=False)
    head_files: dict[str, FileEntry] = field(init=False)
    _changed: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_files", {f.path: f for f in self.base.files})
        object.__setattr__(self, "head_files", {f.path: f for f in self.head.files})
        changed: dict[str, str] = {}
        for path in sorted(self.base_files.keys() | self.head_files.keys()):
            op = self.file_op(path)
            if op is not None:
                changed[path] = op
        object.__setattr__(self, "_changed", changed)

    def file_op(self, path: str) -> str | None:
        """``added`` / ``removed`` / ``changed`` by content id, or None when the same."""
        old, new = self.base_files.get(path), self.head_files.get(path)
        if old is None and new is None:
            return None
        if old is None:
            return "added"
        if new is None:
            return "removed"
        return None if old.content_id == new.content_id else "changed"

    def changed_paths(self) -> dict[str, str]:
        """Every path whose content differs, with its operation, sorted by path."""
        return dict(self._changed)

    def issue(self, side: str, path: str) -> str | None:
        """Why ``path`` could not be parsed on ``side`` (``base`` / ``head``), if it could not."""
        arts = self.base if side == "base" else self.head
        msgs = [i.message for i in arts.issues if i.path == path]
        return "; ".join(msgs) if msgs else None
