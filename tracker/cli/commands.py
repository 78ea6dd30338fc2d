"""Command dispatch: one function per command, each returning an exit code."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from tracker.cli import advise_cmds, audit_cmds, read_cmds, serve_cmds, subscribe_cmds, track_cmds
from tracker.cli.context import Context

Handler = Callable[[Context], int]

HANDLERS: dict[str, Handler] = {
    "track": track_cmds.track,
    "untrack": track_cmds.untrack,
    "repos": read_cmds.repos,
    "poll": track_cmds.poll,
    "history": read_cmds.history,
    "show": read_cmds.show,
    "diff": read_cmds.diff,
    "plan": read_cmds.plan,
    "advisories": advise_cmds.advisories,
    "advisory": advise_cmds.advisory,
    "export": advise_cmds.export,
    "run": serve_cmds.run,
    "serve": serve_cmds.serve,
    "subscribe": subscribe_cmds.subscribe,
    "subscriptions": subscribe_cmds.subscriptions,
    "unsubscribe": subscribe_cmds.unsubscribe,
    "audit": audit_cmds.audit,
    "lock": audit_cmds.lock,
}


#: Commands that see config.toml's [[repos]] without a daemon having run first.
SEES_CONFIG_REPOS = frozenset({"repos", "poll", "untrack"})


def dispatch(args: argparse.Namespace) -> int:
    ctx = Context(args)
    try:
        if args.command in SEES_CONFIG_REPOS:
            ctx.sync_config_repos()
        return HANDLERS[args.command](ctx)
    finally:
        if "store" in ctx.__dict__:
            ctx.store.close()
