"""Stage 4 entry point: every change of a revision against its base, none left out.

Layer 1 (stage 4, diff), pure. ``diff_artifacts`` runs one module per row of DESIGN.md's
"What is diffed" table, then a coverage pass: every path whose content id differs and that
no module reported becomes a change of its own (a re-serialised config, a moved template
file, a README), so each changed file of a commit shows up exactly where a reader looks.
Severity is left unset; ``advisories.rules.apply_rules`` fills it in from the topics.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from tracker.diff import topics as t
from tracker.diff.code import diff_code
from tracker.diff.documents import diff_documents
from tracker.diff.gguf import diff_gguf
from tracker.diff.hub_scan import diff_hub_scans
from tracker.diff.sides import Sides
from tracker.diff.templates import diff_templates, is_template_file
from tracker.diff.tokenizer import diff_tokenizer_files
from tracker.diff.weights import diff_weights, is_weight_index
from tracker.model import Artifacts, Change, ChangeKind, RevisionDiff

_KIND_ORDER = {k: i for i, k in enumerate(ChangeKind)}
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")
MAX_SUMMARY = 300
_FORMAT_ONLY = {
    "config.json": (ChangeKind.CONFIG, t.CONFIG_FORMAT),
    "generation_config.json": (ChangeKind.GENERATION_CONFIG, t.GENERATION_FORMAT),
    "tokenizer_config.json": (ChangeKind.TOKENIZER, t.TOKENIZER_FORMAT),
    "special_tokens_map.json": (ChangeKind.TOKENIZER, t.TOKENIZER_FORMAT),
    "tokenizer.json": (ChangeKind.TOKENIZER, t.TOKENIZER_FORMAT),
}


def _uncovered(path: str, op: str, sides: Sides) -> Change:
    """A changed path no artifact module reported: its content changed, its meaning did not."""
    entry = sides.head_files.get(path) or sides.base_files.get(path)
    detail = {
        "op": op,
        "old": sides.base_files[path].content_id if path in sides.base_files else None,
        "new": sides.head_files[path].content_id if path in sides.head_files else None,
        "size": entry.size if entry else None,
    }
    if path in _FORMAT_ONLY:
        kind, topic = _FORMAT_ONLY[path]
        what = "re-serialised, no field changed" if op == "changed" else f"{op} (no fields)"
        return Change(kind, path, f"{path} {what}", (topic,), detail=detail)
    if is_template_file(path):
        summary = f"{path} {op}; the chat templates are unchanged"
        return Change(
            ChangeKind.CHAT_TEMPLATE, path, summary, (t.CHAT_TEMPLATE_SOURCE,), detail=detail
        )
    if is_weight_index(path):
        summary = f"{path} re-serialised, same weight map"
        return Change(ChangeKind.WEIGHTS, path, summary, (t.WEIGHTS_INDEX_FORMAT,), detail=detail)
    topic = t.by_op(op, t.OTHER_ADDED, t.OTHER_CHANGED, t.OTHER_REMOVED)
    return Change(ChangeKind.OTHER, path, f"{path} {op}", (topic,), detail=detail)


def _covered(changes: list[Change]) -> set[str]:
    paths = {c.path for c in changes}
    for c in changes:
        sources = c.detail.get("sources")
        if isinstance(sources, dict):
            paths.update(p for p in sources.values() if isinstance(p, str))
    return paths


def diff_artifacts(
    base: Artifacts | None, head: Artifacts, *, base_sha: str | None, head_sha: str,
    text_diffs: bool = True,
) -> RevisionDiff:
    """All changes from ``base`` (None: a root commit, everything is added) to ``head``.

    ``text_diffs=False``: code changes name the file, its operation and what loads it, without
    the unified diff (the reduced analysis of a revision over its budget)."""
    sides = Sides(base if base is not None else Artifacts(), head)
    changes: list[Change] = []
    changes += diff_documents(sides)
    changes += diff_tokenizer_files(sides)
    changes += diff_templates(sides)
    changes += diff_weights(sides)
    changes += diff_gguf(sides)
    changes += diff_hub_scans(sides)
    changes += diff_code(sides, text_diffs=text_diffs)
    covered = _covered(changes)
    for path, op in sides.changed_paths().items():
        if path not in covered:
            changes.append(_uncovered(path, op, sides))
    changes = [replace(c, summary=one_line(c.summary)) for c in changes]
    changes.sort(key=lambda c: (_KIND_ORDER[c.kind], c.path, c.topics))
    return RevisionDiff(base=base_sha, head=head_sha, changes=tuple(changes))


def one_line(text: str) -> str:
    """Summaries are one human line: repo-controlled names may hold newlines or escapes."""
    text = _CONTROL.sub("?", text)
    return text if len(text) <= MAX_SUMMARY else text[: MAX_SUMMARY - 3] + "..."


def history_rewrite_change(old_head: str, new_head: str, lost: Sequence[str]) -> Change:
    """The branch no longer descends from the last known head: a force-push or squash."""
    lost = list(lost)
    if lost:
        summary = (
            f"history rewritten: {len(lost)} known commit(s) vanished "
            f"(head {old_head[:7]} -> {new_head[:7]})"
        )
        topic = t.HISTORY_REWRITTEN
    else:
        summary = f"branch moved off {old_head[:7]} to {new_head[:7]} (no known commit lost)"
        topic = t.HISTORY_MOVED
    return Change(
        ChangeKind.HISTORY,
        "",
        summary,
        (topic,),
        detail={"old_head": old_head, "new_head": new_head, "lost": lost},
    )


def namespace_reuse_change(old_head: str, new_head: str, lost: Sequence[str], created_at: str) -> Change:
    """The repo under this id is another repo (deleted and created again): never diffed."""
    lost = list(lost)
    summary = (
        f"namespace reused: the repo was deleted and created again ({created_at}); none of the "
        f"{len(lost)} commit(s) held is in its history (old head {old_head[:7]}, new {new_head[:7]}): "
        "recorded from scratch, not diffed against the old repo"
    )
    return Change(
        ChangeKind.NAMESPACE_REUSE, "", summary, (t.REPO_NAMESPACE_REUSED,),
        detail={"old_head": old_head, "new_head": new_head, "lost": lost, "created_at": created_at},
    )


def rename_change(old_id: str, new_id: str) -> Change:
    """The Hub serves the repo under another id now (a 307 from the old one)."""
    return Change(
        ChangeKind.RENAME, "", f"repo renamed on the Hub: {old_id} -> {new_id}", (t.REPO_RENAMED,),
        detail={"old_id": old_id, "new_id": new_id},
    )
