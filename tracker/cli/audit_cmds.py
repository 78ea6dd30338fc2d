"""audit, lock: check the models a project pins against the advisories; write models.lock.

Thin: reading inputs, answering and rendering live in :mod:`tracker.audit`.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path

from tracker.audit.formats import FORMATS, Report
from tracker.audit.inputs import InputError, default_cache, read_input, render_lock
from tracker.audit.local import StoreAnswer
from tracker.audit.pins import Pin
from tracker.audit.remote import ServerAnswer
from tracker.audit.untracked import ScratchReader
from tracker.audit.verdicts import fails, parse_fail_on
from tracker.cli.context import Context
from tracker.errors import RevisionUnknownError, UsageError

EXIT_FINDINGS = 3


def audit(ctx: Context) -> int:
    args = ctx.args
    try:
        threshold = parse_fail_on(args.fail_on)
    except ValueError as e:
        raise UsageError(str(e)) from e
    if args.server and not args.server.startswith(("http://", "https://")):
        raise UsageError(f"--server takes an http(s) URL, not {args.server!r}")
    pins = _pins(args.inputs)
    if args.server:
        server = ServerAnswer(args.server, timeout=ctx.settings.hub.timeout_seconds)
        try:
            verdicts = server.answer(pins)
        finally:
            server.close()
        answered_by = args.server
    else:
        scratch = None if args.offline else ScratchReader(ctx.sources, ctx.pipeline_options)
        try:
            verdicts = StoreAnswer(ctx.store, scratch).answer(pins)
        finally:
            if scratch is not None:
                scratch.close()
        answered_by = "local store"
    report = Report(now=datetime.now(UTC), answered_by=answered_by, fail_on=threshold, base_dir=Path.cwd())
    text = FORMATS[args.format](verdicts, report)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return EXIT_FINDINGS if fails(verdicts, threshold) else 0


def _pins(inputs: list[str]) -> list[Pin]:
    if not inputs:
        cache = default_cache(os.environ, Path.home())
        if not cache.is_dir():
            raise InputError(f"no input given and no Hugging Face cache at {cache}")
        inputs = [str(cache)]
    stdin = sys.stdin.read() if "-" in inputs else None
    pins: list[Pin] = []
    for item in inputs:
        pins.extend(read_input(item, stdin).pins)
    return pins


def lock(ctx: Context) -> int:
    """models.lock of the tracked heads (the named repos, or every tracked one)."""
    repos = [ctx.resolve_repo(s) for s in ctx.args.repos] if ctx.args.repos else ctx.store.list_repos()
    entries = []
    for repo in repos:
        if not repo.head_sha:
            if ctx.args.repos:
                raise RevisionUnknownError(f"{repo.id}: no revision stored yet (poll it first)")
            print(f"hubwatch: {repo.id}: no revision stored yet, left out", file=sys.stderr)
            continue
        entries.append((repo.id, repo.head_sha, repo.branch))
    sys.stdout.write(render_lock(entries))
    return 0
