"""The reduced analysis of a revision whose full analysis ran over its budget (issue 16).

A hostile file that stays in the tree (a tokenizer.json or chat template whose parse or
renders blow the budget) cut every later revision, so a CRITICAL change after it (an
``auto_map`` backdoor, a dangerous pickle import) was never named. The reduced pass drops
what is costly and not where code runs at load time: the tokenizer and chat template
sources (their parse, summary and renders) and the text of code diffs. It keeps what is
cheap and security-critical: config.json and generation_config.json field by field
(``auto_map`` / ``custom_pipelines`` included), the code files that were added, removed or
changed by content id and which of them ``auto_map`` loads, the weight manifest, the pickle
and GGUF digests and the Hub's scans the snapshot already holds. Pure: it reads only the job.
"""

from __future__ import annotations

from dataclasses import replace

from tracker.diff import diff_artifacts
from tracker.diff.templates import is_template_file
from tracker.extract import extract_artifacts
from tracker.extract import paths as p
from tracker.model import Artifacts, Change, ChangeKind, RevisionDiff, Snapshot

#: What the reduced pass leaves out, in words (the ``analysis.cut`` change names it).
LEFT_OUT = ("tokenizer and chat template files (their parse, summary and renders)",
            "code text diffs", "the compatibility plan")
_TOKENIZER_FILES = frozenset({p.TOKENIZER_CONFIG, p.SPECIAL_TOKENS_MAP, p.TOKENIZER_JSON, p.ADDED_TOKENS})


def is_left_out(path: str) -> bool:
    """A tokenizer or chat template source: read, parsed and rendered only by the full pass."""
    return path in _TOKENIZER_FILES or is_template_file(path)


def reduced_snapshot(snap: Snapshot) -> Snapshot:
    """``snap`` without the bytes (or read errors) of the files the reduced pass leaves out."""
    return replace(snap, contents={k: v for k, v in snap.contents.items() if not is_left_out(k)},
                   read_errors={k: v for k, v in snap.read_errors.items() if not is_left_out(k)})


def reduced_artifacts(arts: Artifacts) -> Artifacts:
    """``arts`` as the reduced pass sees them: no tokenizer or template, no issue on those files."""
    return replace(arts, tokenizer_config=None, special_tokens_map=None, tokenizer=None,
                   chat_templates={}, chat_template_sources={},
                   issues=tuple(i for i in arts.issues if not is_left_out(i.path)))


def analyse_essentials(snap: Snapshot, base: Artifacts | None, *, base_sha: str | None, head_sha: str,
                       max_json_depth: int) -> tuple[Artifacts, RevisionDiff, tuple[str, ...]]:
    """(head artifacts, diff, left-out paths that changed) of the reduced pass.

    Both sides are reduced, so a left-out file is neither parsed nor reported as changed;
    the paths among them whose content changed are returned for the cut change to name."""
    head = reduced_artifacts(extract_artifacts(reduced_snapshot(snap), max_json_depth=max_json_depth))
    lean_base = reduced_artifacts(base) if base is not None else None
    diff = diff_artifacts(lean_base, head, base_sha=base_sha, head_sha=head_sha, text_diffs=False)
    kept = tuple(c for c in diff.changes if not is_left_out(c.path))
    before = {f.path: f.content_id for f in base.files} if base is not None else {}
    now = {f.path: f.content_id for f in head.files}
    skipped = tuple(sorted(path for path in before.keys() | now.keys()
                           if is_left_out(path) and before.get(path) != now.get(path)))
    return head, replace(diff, changes=kept), skipped


def reduced_cut_change(why: str, skipped: tuple[str, ...]) -> Change:
    """The ``analysis.cut`` change of a revision that only the reduced pass analysed."""
    names = ", ".join(skipped[:4]) + (f" and {len(skipped) - 4} more" if len(skipped) > 4 else "")
    return Change(kind=ChangeKind.OTHER, path="/", topics=("analysis.cut",),
                  summary=f"analysed in part: {why}; tokenizer, chat templates, code text diffs and "
                          "the plan left out" + (f" ({names} changed, not compared)" if skipped else ""),
                  detail={"left_out": list(LEFT_OUT), "not_compared": list(skipped)})
