"""track, untrack, poll: the commands that read sources."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

from tracker.cli.context import Context
from tracker.cli.progress import progress_bar
from tracker.errors import AlreadyTracked, SourceError, UsageError
from tracker.pipeline import CheckResult, check_repo
from tracker.pipeline.sources import is_git_location, shadowing_directory


def _validate_backfill(value: str) -> str:
    if value in ("all", "none"):
        return value
    if value.isdigit() and int(value) > 0:
        return value
    raise UsageError(f"--backfill must be all, none or a positive number, not {value!r}")


def _repo_url(value: str | None) -> str | None:
    """``--repo-url``: an http(s) URL others can open, without credentials."""
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
        raise UsageError(f"--repo-url must be a public http(s) URL without credentials, not {value!r}")
    return value.rstrip("/")


def track(ctx: Context) -> int:
    args = ctx.args
    backfill = _validate_backfill(args.backfill)
    source = args.source
    if is_git_location(source):
        from tracker.hub.localgit import default_repo_id

        p = Path(source).expanduser()
        location = str(p.resolve()) if p.exists() else source
        repo_id = args.as_id or default_repo_id(source)
        kind = "git"
    else:
        location, repo_id, kind = source, args.as_id or source, "hub"
        if shadowing_directory(source):
            print(f"hubwatch: {source} is tracked from the Hub; a directory of that name is here too: "
                  f"track ./{source} to read that instead", file=sys.stderr)
        if args.as_id and args.as_id != source:
            raise UsageError("--as names git sources; a Hub repo is tracked under its own id")
    if "/" not in repo_id or repo_id.count("/") != 1:
        raise UsageError(f"a tracked repo needs an org/name id, not {repo_id!r} (use --as ORG/NAME)")
    repo_url = _repo_url(args.repo_url)
    known = ctx.store.get_repo(repo_id)
    if known is not None and (known.source, known.source_kind) != (location, kind):
        if not args.replace:
            raise AlreadyTracked(repo_id, f"{known.source} ({known.source_kind})", location)
        print(f"hubwatch: replacing the source of {repo_id}: {known.source} -> {location}; revisions "
              "the new source does not hold will be marked unreachable and their advisories noted "
              "as history rewritten", file=sys.stderr)
    src = ctx.sources.open(repo_id, location, kind)
    try:
        src.resolve_head(args.branch)  # refuse to track what cannot be read
        repo, _created = ctx.store.add_repo(
            repo_id, source=location, source_kind=kind, branch=args.branch, backfill=backfill,
            repo_url=repo_url, replace=args.replace,
        )
        result = None
        if not args.no_read:
            result = _check(ctx, repo.id, src, show_progress=not ctx.json)
    finally:
        src.close()
    repo = ctx.store.get_repo(repo_id) or repo
    if ctx.json:
        from tracker.api.views import repo_json

        doc = repo_json(repo, public=False)
        if result is not None:
            doc["poll"] = _result_json(result)
        ctx.emit(doc)
    else:
        n = result.new_revisions if result else 0
        print(f"tracking {repo.id} ({kind}: {location}, branch {repo.branch}); {n} revision(s) read")
    if result is not None and result.status == "error":
        print(f"hubwatch: error: {repo.id}: {result.error}", file=sys.stderr)
        return 1
    return 0


def untrack(ctx: Context) -> int:
    repo = ctx.resolve_repo(ctx.args.source)
    changed = ctx.store.untrack(repo.id)
    if ctx.json:
        ctx.emit({"id": repo.id, "untracked": changed})
    else:
        print(f"untracked {repo.id}; its history is kept" if changed else f"{repo.id} was not tracked")
    return 0


def _check(ctx: Context, repo_id: str, src: object, *, show_progress: bool) -> CheckResult:
    """Check one repo and record the outcome on its row; source errors become a result."""
    settings = ctx.settings
    repo = ctx.store.get_repo(repo_id)
    assert repo is not None
    now = datetime.now(UTC)
    interval = timedelta(seconds=settings.schedule.interval_seconds)
    try:
        result = check_repo(
            ctx.store, src, repo, ctx.pipeline_options,  # type: ignore[arg-type]
            progress=progress_bar(repo_id) if show_progress else None,
        )
    except SourceError as e:
        ctx.store.record_poll(repo_id, now=now, error=str(e), error_kind=e.kind, next_check_at=now + interval)
        return CheckResult(repo_id, "error", error=str(e), error_kind=e.kind)
    ctx.store.record_poll(repo_id, now=now, next_check_at=now + interval, changed=result.new_revisions > 0)
    return result


def poll(ctx: Context) -> int:
    """One pass over the named (or all tracked) repos, then deliver pending webhooks."""
    if ctx.args.sources:
        repos = [ctx.resolve_repo(s) for s in ctx.args.sources]
    else:
        repos = ctx.store.list_repos()
    results: list[CheckResult] = []
    for repo in repos:
        try:
            src = ctx.sources.open(repo.id, repo.source, repo.source_kind, added_by=repo.added_by)
        except SourceError as e:
            results.append(CheckResult(repo.id, "error", error=str(e), error_kind=e.kind))
            continue
        try:
            results.append(_check(ctx, repo.id, src, show_progress=not ctx.json))
        except Exception as e:  # one broken repo never stops the pass
            now = datetime.now(UTC)
            ctx.store.record_poll(repo.id, now=now, error=f"{type(e).__name__}: {e}", error_kind="internal")
            results.append(CheckResult(repo.id, "error", error=f"{type(e).__name__}: {e}", error_kind="internal"))
        finally:
            src.close()
    _deliver(ctx)
    if ctx.json:
        ctx.emit([_result_json(r) for r in results])
    else:
        for r in results:
            line = f"{r.repo}: {r.status}"
            if r.new_revisions:
                line += f", {r.new_revisions} new revision(s)"
            if r.repaired:
                line += f", {r.repaired} revision(s) repaired"
            if r.error:
                line += f" ({r.error})"
            print(line)
    failed = [r.repo for r in results if r.status == "error"]
    if failed and ctx.args.strict:
        print(f"hubwatch: error: {len(failed)} of {len(results)} repo(s) failed: {', '.join(failed)}",
              file=sys.stderr)
        return 1
    return 0


def _deliver(ctx: Context) -> None:
    """Deliver pending webhooks after a pass (no-op until subscriptions exist); prune old ones."""
    from tracker.delivery import deliver_pending, prune

    deliver_pending(ctx.store, ctx.settings)
    prune(ctx.store, ctx.settings)


def _result_json(r: CheckResult) -> dict[str, object]:
    return {"repo": r.repo, "status": r.status, "new_revisions": r.new_revisions, "repaired": r.repaired,
            "error": r.error}
