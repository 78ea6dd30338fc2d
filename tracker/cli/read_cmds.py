"""repos, history, show, diff, plan: commands that only read the store (or local files)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from advisories.rules import apply_rules
from storage import repairs
from tracker.api.change_views import group_changes, quiet_count
from tracker.api.page_models import plan_line, quiet_sentence, when
from tracker.api.views import change_json, iso, repair_json, repo_json, revision_json
from tracker.cli.context import Context
from tracker.diff import diff_artifacts
from tracker.errors import InvalidContent, NotTrackedError, RevisionUnknownError, UsageError
from tracker.extract.model_config import parse_model_config
from tracker.pipeline import stored_artifacts
from tracker.pipeline.plan_step import checkpoint_params
from tracker.pipeline.sources import is_git_location
from tracker.planner import plan as make_plan
from tracker.planner import plan_to_json, render_plan_text


def repos(ctx: Context) -> int:
    rows = ctx.store.list_repos()
    if ctx.json:
        ctx.emit([repo_json(r, public=False) for r in rows])
        return 0
    if not rows:
        print("no repos tracked; start with: hubwatch track ORG/NAME")
        return 0
    for r in rows:
        head = (r.head_sha or "-")[:12]
        last = iso(r.last_poll_at) or "never"
        print(f"{r.id:50} {r.status:7} head {head:12} {r.revisions:5} rev  polled {last}")
        if r.last_error:
            print(f"    last error: {r.last_error}")
    return 0


def history(ctx: Context) -> int:
    repo = ctx.resolve_repo(ctx.args.source)
    limit = ctx.args.limit
    if limit is not None and limit < 1:
        raise UsageError("--limit must be positive")
    revs = ctx.store.history(repo.id, limit=limit)
    if ctx.json:
        ctx.emit([revision_json(r) for r in revs])
        return 0
    why = bool(getattr(ctx.args, "why", False))
    for r in revs:
        sev = r.severity or "-"
        adv = f"  {r.advisory_id}" if r.advisory_id else ""
        gone = "  (no longer on the branch)" if not r.reachable else ""
        line(f"{r.sha[:12]}  {when(r.committed_at)}  {sev:8}  {r.title}{adv}{gone}")
        for view in group_changes(c for c in r.changes if c.severity is not None):
            line(f"    {view.severity or '-':8} {view.sentence}")
            if why:
                for reason in view.reasons:
                    line(f"             why: {reason}")
        quiet = quiet_count(r.changes)
        if quiet and not r.severity:
            line(f"    {quiet} change{'s' if quiet != 1 else ''} with no severity: "
                 + " ".join(quiet_sentence(c) for c in r.changes if c.severity is None and "plan.delta" not in c.topics))
        if isinstance(r.plan_delta, dict) and r.plan_delta.get("summary"):
            line(f"    plan: {r.plan_delta['summary']}")
    return 0


def line(text: str, width: int | None = None) -> None:
    """Print one line, cut with an ellipsis to the terminal's width (120 columns off a terminal)."""
    if width is None:
        width = shutil.get_terminal_size((120, 24)).columns if sys.stdout.isatty() else 120
    width = max(40, width)
    print(text if len(text) <= width else text[: width - 1].rstrip() + "…")


def _revision(ctx: Context, repo_id: str, rev: str) -> Any:
    """A stored revision by sha or unique prefix; ``HEAD`` or the tracked branch name is its head."""
    repo = ctx.store.get_repo(repo_id)
    if repo is not None and rev in ("HEAD", repo.branch):
        if not repo.head_sha:
            raise RevisionUnknownError(f"{repo_id}: no revision stored yet")
        rev = repo.head_sha
    found = ctx.store.get_revision(repo_id, rev)
    if found is None:
        raise RevisionUnknownError(f"{repo_id}: no stored revision {rev!r} (or the prefix is ambiguous)")
    return found


def show(ctx: Context) -> int:
    repo = ctx.resolve_repo(ctx.args.source)
    rev = _revision(ctx, repo.id, ctx.args.rev)
    plan = rev.plan or ctx.store.plan_at(repo.id, rev.seq)
    repair = repair_json(repairs.state(ctx.store, repo.id, rev.sha))
    if ctx.json:
        doc = revision_json(rev, detail=True)
        doc["plan"] = plan
        if repair is not None:
            doc["repair"] = repair
        ctx.emit(doc)
        return 0
    print(f"{repo.id}@{rev.sha}")
    print(f"  {when(rev.committed_at)}  {', '.join(rev.authors)}")
    print(f"  {rev.title}")
    print(f"  severity {rev.severity or '-'}  advisory {rev.advisory_id or '-'}")
    if rev.error:
        print(f"  error: {rev.error}")
    if repair is not None:
        print(f"  repair: {repair['status']} ({', '.join(repair['paths'])}; {repair['attempts']} attempt(s))")
    for view in group_changes(c for c in rev.changes if c.severity is not None):
        line(f"  - [{view.severity}] {view.label} ({view.path}): {view.sentence}")
        for reason in view.reasons:
            line(f"      why: {reason}")
        for text in block_lines(view.blocks):
            line(f"      {text}")
    quiet = [c for c in rev.changes if c.severity is None and "plan.delta" not in c.topics]
    for c in quiet:
        line(f"  - [-] {quiet_sentence(c)}")
    if isinstance(rev.plan_delta, dict) and rev.plan_delta.get("summary"):
        line(f"  plan moved: {rev.plan_delta['summary']}")
    print(f"  plan: {plan_line(plan)}")
    return 0


def block_lines(blocks: Any, max_lines: int = 30) -> list[str]:
    """The display blocks of a change as text lines (diffs cut at ``max_lines``)."""
    out: list[str] = []
    for b in blocks:
        if b.kind == "fields":
            out += [f"{r.key}: {r.old} -> {r.new}" for r in b.rows]
            if b.more:
                out.append(f"... and {b.more} more keys")
        elif b.kind == "table":
            if b.title:
                out.append(f"{b.title}:")
            out += ["  " + "  ".join(cell for cell in row if cell) for row in b.rows[:max_lines]]
            if len(b.rows) > max_lines or b.more:
                out.append(f"  ... and {len(b.rows) - max_lines + b.more if len(b.rows) > max_lines else b.more} more")
        elif b.kind == "note":
            out.append(b.text)
        elif b.kind == "prompts":
            for p in b.prompts:
                out.append(f"prompt for {p.label}:" + (f" {p.note}" if p.note else ""))
                if p.diff is not None:
                    out += _diff_block(p.diff.lines, max_lines)
            if b.unchanged:
                out.append(f"same prompt as before for {', '.join(b.unchanged)}")
        elif b.kind == "diff":
            out.append(f"{b.title}:")
            out += _diff_block(b.lines, max_lines)
    return out


def _diff_block(lines: Any, max_lines: int) -> list[str]:
    out = [f"  {d.text}" for d in lines[:max_lines]]
    if len(lines) > max_lines:
        out.append(f"  ... {len(lines) - max_lines} more lines (show --json has them all)")
    return out


def diff(ctx: Context) -> int:
    repo = ctx.resolve_repo(ctx.args.source)
    a = _revision(ctx, repo.id, ctx.args.rev_a)
    b = _revision(ctx, repo.id, ctx.args.rev_b)
    art_a = stored_artifacts(ctx.store, repo.id, a.sha)
    art_b = stored_artifacts(ctx.store, repo.id, b.sha)
    if art_a is None or art_b is None:
        raise RevisionUnknownError("the stored tree of one of the revisions is missing")
    result = apply_rules(diff_artifacts(art_a, art_b, base_sha=a.sha, head_sha=b.sha))
    if ctx.json:
        ctx.emit({
            "repo": repo.id, "base": a.sha, "head": b.sha,
            "severity": result.severity.value if result.severity else None,
            "changes": [change_json(c, detail=True) for c in result.changes],
        })
        return 0
    print(f"{repo.id}: {a.sha[:12]}...{b.sha[:12]}  severity {result.severity.value if result.severity else '-'}")
    for c in result.changes:
        print(f"  - [{c.severity.value if c.severity else '-'}] {c.kind.value} {c.path}: {c.summary}")
    return 0


def plan(ctx: Context) -> int:
    docs: list[dict[str, Any]] = []
    texts: list[str] = []
    for target in ctx.args.targets:
        config, checkpoint = _load_target_config(ctx, target)
        p = make_plan(parse_model_config(config), checkpoint_params=checkpoint,
                      assumptions=ctx.pipeline_options.plan.assumptions, method=ctx.args.method, tokens=ctx.args.tokens)
        docs.append({"input": target, **plan_to_json(p)})
        texts.append(f"== {target}\n{render_plan_text(p)}")
    if ctx.json:
        ctx.emit(docs[0] if len(docs) == 1 else docs)
    else:
        print("\n\n".join(texts))
    return 0


def _load_target_config(ctx: Context, target: str) -> tuple[dict[str, Any], int | None]:
    """(config.json, the checkpoint's scalar count) of a file, a stored revision or an untracked Hub repo.

    A tracked repo is planned exactly as the pipeline planned it (the model page shows that
    plan); an untracked ``org/name`` is read from the Hub without tracking it.
    """
    path = Path(target).expanduser()
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise InvalidContent(f"{target}: not a JSON config: {e}") from e
        if not isinstance(data, dict):
            raise InvalidContent(f"{target}: a config.json must hold a JSON object")
        return data, None
    if target.endswith(".json") or target.startswith(("/", ".", "~")) or path.exists():
        raise InvalidContent(f"no such file: {target}")
    source, _, rev = target.partition("@")
    try:
        repo = ctx.resolve_repo(source)
    except NotTrackedError:
        if is_git_location(source):
            raise
        return _untracked_config(ctx, source, rev or None)
    sha = rev or repo.head_sha
    if not sha:
        raise RevisionUnknownError(f"{repo.id}: no revision stored yet")
    record = _revision(ctx, repo.id, sha)
    art = stored_artifacts(ctx.store, repo.id, record.sha)
    if art is None or not isinstance(art.config, dict):
        raise RevisionUnknownError(f"{repo.id}@{record.sha[:12]}: no config.json at that revision")
    return art.config, checkpoint_params(art)


def _untracked_config(ctx: Context, repo_id: str, rev: str | None) -> tuple[dict[str, Any], int | None]:
    from tracker.pipeline.untracked import read_plan_inputs

    source = ctx.sources.open(repo_id, repo_id, "hub")
    try:
        inputs = read_plan_inputs(source, rev, max_header_bytes=ctx.settings.limits.max_header_bytes)
    finally:
        source.close()
    if not isinstance(inputs.artifacts.config, dict):
        raise RevisionUnknownError(f"{repo_id}@{inputs.sha[:12]}: no readable config.json")
    return inputs.artifacts.config, checkpoint_params(inputs.artifacts)
