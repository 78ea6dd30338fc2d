"""Every changed path of a revision shows up in its history entry.

The diff reports what changed in meaning; a file rewritten with the same meaning (JSON
reformatted, a template re-uploaded byte-different) or a file no artifact covers would
otherwise leave a commit that touched it without an entry for that path. This backstop adds
one informational change (no severity) for each such path.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracker.extract.paths import weight_format
from tracker.model import Change, ChangeKind, FileEntry
from tracker.model.files import VOCAB_FILES

_TOKENIZER_NAMES = VOCAB_FILES | {
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
}


def kind_for_path(path: str) -> ChangeKind:
    name = path.rsplit("/", 1)[-1]
    if name == "config.json" and "/" not in path:
        return ChangeKind.CONFIG
    if name == "generation_config.json" and "/" not in path:
        return ChangeKind.GENERATION_CONFIG
    if name.startswith("chat_template"):
        return ChangeKind.CHAT_TEMPLATE
    if name in _TOKENIZER_NAMES or name.startswith("tokenizer."):
        return ChangeKind.TOKENIZER
    if name.endswith(".py"):
        return ChangeKind.CODE
    if weight_format(path) is not None:
        return ChangeKind.WEIGHTS
    return ChangeKind.OTHER


def changed_paths(base: Sequence[FileEntry], head: Sequence[FileEntry]) -> dict[str, str]:
    """path -> "added" | "removed" | "modified" between two trees (by content id)."""
    a = {f.path: f.content_id for f in base}
    b = {f.path: f.content_id for f in head}
    out: dict[str, str] = {}
    for path in a.keys() | b.keys():
        if path not in a:
            out[path] = "added"
        elif path not in b:
            out[path] = "removed"
        elif a[path] != b[path]:
            out[path] = "modified"
    return out


def cover_every_path(
    changes: Sequence[Change], base: Sequence[FileEntry], head: Sequence[FileEntry]
) -> list[Change]:
    """``changes`` plus one informational change for each changed path they do not mention."""
    mentioned = {c.path for c in changes}
    extra = [
        Change(
            kind=kind_for_path(path), path=path,
            summary=f"{path} {how}" + (" (no difference in meaning)" if how == "modified" else ""),
            topics=("file." + how,),
        )
        for path, how in sorted(changed_paths(base, head).items())
        if path not in mentioned
    ]
    return [*changes, *extra]
