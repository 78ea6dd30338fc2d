"""repos, history, show, diff, plan: commands that only read the store (or local files)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from advisories.rules import apply_rules
from tracker.api.views import change_json, iso, repo_json, revision_json
from tracker.cli.context import Context
from tracker.diff import diff_artifacts
from tracker.errors import InvalidContent, RevisionUnknownError, UsageError
from tracker.extract.model_config import parse_model_config
from tracker.pipeline import stored_artifacts
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
    for r in revs:
        sev = r.severity or "-"
        adv = f"  {r.advisory_id}" if r.advisory_id else ""
        gone = "  (no longer on the branch)" if not r.reachable else ""
        print(f"{r.sha[:12]}  {iso(r.committed_at)}  {sev:8}  {r.title[:70]}{adv}{gone}")
        for c in r.changes:
            if c.severity is not None:
                print(f"    {c.severity.value:8} {c.kind.value:17} {c.summary[:100]}")
    return 0


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
    if ctx.json:
        doc = revision_json(rev, detail=True)
        doc["plan"] = plan
        ctx.emit(doc)
        return 0
    print(f"{repo.id}@{rev.sha}")
    print(f"  {iso(rev.committed_at)}  {', '.join(rev.authors)}")
    print(f"  {rev.title}")
    print(f"  severity {rev.severity or '-'}  advisory {rev.advisory_id or '-'}")
    if rev.error:
        print(f"  error: {rev.error}")
    for c in rev.changes:
        print(f"  - [{c.severity.value if c.severity else '-'}] {c.kind.value} {c.path}: {c.summary}")
        for label, text in _diff_texts(c.detail):
            lines = text.splitlines()
            print(f"      {label}:")
            for line in lines[:30]:
                print(f"      {line}")
            if len(lines) > 30:
                print(f"      ... {len(lines) - 30} more lines (show --json has them all)")
    if plan:
        print(f"  plan: {_plan_line(plan)}")
    return 0


def _diff_texts(detail: Any, label: str = "", depth: int = 0) -> list[tuple[str, str]]:
    """Every unified diff held in a change's detail (``diff`` keys), with where it came from."""
    found: list[tuple[str, str]] = []
    if depth > 6:
        return found
    if isinstance(detail, dict):
        for key, value in detail.items():
            if key == "diff" and isinstance(value, str) and value:
                probe = detail.get("probe")
                found.append((f"rendered prompt, probe {probe}" if probe else f"{label or 'file'} diff", value))
            else:
                found.extend(_diff_texts(value, key, depth + 1))
    elif isinstance(detail, list):
        for item in detail:
            found.extend(_diff_texts(item, label, depth + 1))
    return found


def _gb(n: Any) -> str:
    return f"{n / 1e9:.2f} GB" if isinstance(n, (int, float)) else "-"


def _plan_line(plan: dict[str, Any]) -> str:
    p, m = plan.get("params") or {}, plan.get("memory_bytes") or {}
    total = p.get("total")
    params = f"{total / 1e9:.2f}B parameters" if isinstance(total, (int, float)) else "parameters unknown"
    fits = [card for card, fit in (plan.get("cards") or {}).items() if isinstance(fit, dict) and fit.get("serve")]
    return (f"{params}; full fine-tune {_gb(m.get('full_finetune'))}, LoRA {_gb(m.get('lora'))}, "
            f"serve {_gb(m.get('serve_weights'))} + KV {_gb(m.get('kv_cache'))} per sequence; "
            f"serves on {', '.join(fits) or 'no single card'}")


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
        config = _load_target_config(ctx, target)
        p = make_plan(parse_model_config(config), assumptions=ctx.pipeline_options.plan.assumptions,
                      method=ctx.args.method, tokens=ctx.args.tokens)
        docs.append({"input": target, **plan_to_json(p)})
        texts.append(f"== {target}\n{render_plan_text(p)}")
    if ctx.json:
        ctx.emit(docs[0] if len(docs) == 1 else docs)
    else:
        print("\n\n".join(texts))
    return 0


def _load_target_config(ctx: Context, target: str) -> dict[str, Any]:
    path = Path(target).expanduser()
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise InvalidContent(f"{target}: not a JSON config: {e}") from e
        if not isinstance(data, dict):
            raise InvalidContent(f"{target}: a config.json must hold a JSON object")
        return data
    if target.endswith(".json") or target.startswith(("/", ".", "~")) or path.exists():
        raise InvalidContent(f"no such file: {target}")
    source, _, rev = target.partition("@")
    repo = ctx.resolve_repo(source)
    sha = rev or repo.head_sha
    if not sha:
        raise RevisionUnknownError(f"{repo.id}: no revision stored yet")
    record = _revision(ctx, repo.id, sha)
    art = stored_artifacts(ctx.store, repo.id, record.sha)
    if art is None or not isinstance(art.config, dict):
        raise RevisionUnknownError(f"{repo.id}@{record.sha[:12]}: no config.json at that revision")
    return art.config
