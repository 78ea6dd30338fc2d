"""Turn a revision's snapshot into parsed artifacts: the input of the diff and the planner.

Layer 1 (stage 3, extract), pure: ``extract_artifacts(snapshot)`` reads only the snapshot.
Nothing raises on bad content: a file that is missing, too large, not UTF-8, not JSON, too
deep or of the wrong shape becomes a :class:`~tracker.model.ParseIssue` and its artifact is
left empty, so one broken file never hides the rest of the revision.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracker.errors import InvalidContent
from tracker.extract import paths, templates
from tracker.extract.jsonsafe import MAX_JSON_DEPTH, load_json
from tracker.extract.tokenizer import summarise_tokenizer
from tracker.extract.weights import build_manifest
from tracker.model import Artifacts, FileEntry, ParseIssue, Snapshot, TokenizerSummary


def _readable_contents(snapshot: Snapshot, issues: list[ParseIssue]) -> dict[str, bytes]:
    """The bytes of read paths present in the tree, within their caps; the rest as issues."""
    out: dict[str, bytes] = {}
    for path in sorted({f.path for f in snapshot.files}):
        if not paths.is_content_path(path):
            continue
        if path in snapshot.read_errors:
            issues.append(ParseIssue(path, f"not read: {snapshot.read_errors[path]}"))
            continue
        raw = snapshot.contents.get(path)
        if raw is None:
            issues.append(ParseIssue(path, "content not available in the snapshot"))
        elif len(raw) > paths.max_content_bytes(path):
            issues.append(
                ParseIssue(path, f"{len(raw)} bytes, over the {paths.max_content_bytes(path)} cap")
            )
        else:
            out[path] = raw
    return out


def _json_object(
    contents: Mapping[str, bytes], path: str, issues: list[ParseIssue], max_depth: int = MAX_JSON_DEPTH
) -> Any:
    """A top-level JSON object file, or None (absent, or an issue recorded)."""
    raw = contents.get(path)
    if raw is None:
        return None
    try:
        doc = load_json(raw, max_bytes=paths.max_content_bytes(path), max_depth=max_depth)
    except InvalidContent as e:
        issues.append(ParseIssue(path, str(e)))
        return None
    if not isinstance(doc, dict):
        issues.append(ParseIssue(path, f"expected a JSON object, found {type(doc).__name__}"))
        return None
    return doc


def _same_content(files: tuple[FileEntry, ...], earlier: Artifacts | None, path: str) -> bool:
    """``path`` is in both trees with one content id (so parsing it again gives what ``earlier`` holds)."""
    if earlier is None:
        return False
    now = next((f for f in files if f.path == path), None)
    then = next((f for f in earlier.files if f.path == path), None)
    return now is not None and then is not None and now.content_id == then.content_id


def _tokenizer(
    contents: Mapping[str, bytes], issues: list[ParseIssue], max_depth: int = MAX_JSON_DEPTH
) -> TokenizerSummary | None:
    doc = _json_object(contents, paths.TOKENIZER_JSON, issues, max_depth)
    if doc is None:
        return None
    try:
        return summarise_tokenizer(doc)
    except InvalidContent as e:
        issues.append(ParseIssue(paths.TOKENIZER_JSON, str(e)))
        return None


def _code(contents: Mapping[str, bytes], issues: list[ParseIssue]) -> dict[str, str]:
    """``*.py`` text; undecodable bytes are replaced (and reported) so the diff still shows it."""
    code: dict[str, str] = {}
    for path, raw in contents.items():
        if not paths.is_custom_code(path):
            continue
        try:
            code[path] = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            issues.append(ParseIssue(path, f"not valid UTF-8 (byte {e.start}); shown with U+FFFD"))
            code[path] = raw.decode("utf-8", errors="replace")
    return code


def extract_artifacts(
    snapshot: Snapshot, *, max_json_depth: int = MAX_JSON_DEPTH, earlier: Artifacts | None = None
) -> Artifacts:
    """Parse everything hubwatch reads from one revision's snapshot.

    ``max_json_depth`` is ``[limits] max_json_depth``: deeper JSON is refused as hostile.
    ``earlier``: another revision's artifacts, extracted with the same limits (the parent's):
    the tokenizer.json summary and the tensors of safetensors headers are taken from it when
    the file's content id did not change, since parsing and hashing a multi-megabyte vocabulary
    again was most of the cost of a new revision (benchmarks/new_revision.py), and a header of
    thousands of tensors the next largest. The result is the same either way.
    """
    issues: list[ParseIssue] = []
    d = max_json_depth
    files: tuple[FileEntry, ...] = tuple(sorted(snapshot.files, key=lambda f: f.path))
    contents = _readable_contents(snapshot, issues)
    reused_tokenizer = earlier.tokenizer if earlier is not None else None
    reuse_tokenizer = (reused_tokenizer is not None and paths.TOKENIZER_JSON in contents
                       and _same_content(files, earlier, paths.TOKENIZER_JSON))
    found = templates.TemplateSet()
    tokenizer_config = templates.take_from_tokenizer_config(
        _json_object(contents, paths.TOKENIZER_CONFIG, issues, d), found
    )
    if paths.CHAT_TEMPLATE_JSON in contents:
        ct_json = _json_object(contents, paths.CHAT_TEMPLATE_JSON, issues, d)
        if ct_json is not None:
            templates.take_from_json_file(ct_json, found)
    templates.take_jinja_files(contents, found)
    issues.extend(found.issues)
    weights = build_manifest(
        files, contents, snapshot.safetensors_headers, issues, snapshot.weight_digests,
        snapshot.security, earlier=earlier.weights if earlier is not None else None,
    )
    return Artifacts(
        files=files,
        config=_json_object(contents, paths.CONFIG, issues, d),
        generation_config=_json_object(contents, paths.GENERATION_CONFIG, issues, d),
        tokenizer_config=tokenizer_config,
        special_tokens_map=_json_object(contents, paths.SPECIAL_TOKENS_MAP, issues, d),
        tokenizer=reused_tokenizer if reuse_tokenizer else _tokenizer(contents, issues, d),
        chat_templates=dict(sorted(found.templates.items())),
        chat_template_sources=dict(sorted(found.sources.items())),
        weights=weights,
        code=dict(sorted(_code(contents, issues).items())),
        issues=tuple(sorted(set(issues), key=lambda i: (i.path, i.message))),
    )
