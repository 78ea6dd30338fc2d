"""advisories, advisory, export: the OSV records as security tooling consumes them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from advisories.export import write_export
from tracker.cli.context import Context
from tracker.errors import HubwatchError


def advisories(ctx: Context) -> int:
    repo_id = ctx.resolve_repo(ctx.args.source).id if ctx.args.source else None
    rows = ctx.store.list_advisories(repo_id)
    if ctx.json:
        ctx.emit([r.record for r in rows])
        return 0
    if not rows:
        print("no advisories")
    for r in rows:
        flag = "  (withdrawn)" if r.withdrawn else ""
        print(f"{r.id}  {r.severity:8}  {r.record.get('summary', '')}{flag}")
    return 0


def advisory(ctx: Context) -> int:
    row = ctx.store.get_advisory(ctx.args.id)
    if row is None:
        raise HubwatchError(f"no advisory {ctx.args.id}")
    json.dump(row.record, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


def export(ctx: Context) -> int:
    directory = Path(ctx.args.directory)
    records = [r.record for r in ctx.store.list_advisories()]
    write_export(records, directory)
    print(f"{len(records)} advisories written to {directory}", file=sys.stderr)
    return 0
