"""Layer 4: the ``hubwatch`` command line. ``main(argv) -> exit code``; errors mapped in one place.

Exit codes: 0 ok, 1 error (one line on stderr; traceback only with --debug), 2 usage,
3 ``audit`` findings at or above ``--fail-on``.
``--json`` prints exactly one JSON document on stdout and nothing else there.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Sequence

from tracker import __version__
from tracker.cli import commands
from tracker.cli.safe_output import TerminalSafe, escape_controls
from tracker.errors import HubwatchError, NotTrackedError, RevisionUnknownError, UsageError

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return n


def _workers(text: str) -> int:
    n = _positive_int(text)
    if n > 64:
        raise argparse.ArgumentTypeError(f"{text!r}: at most 64 workers")
    return n


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hubwatch", description="Track Hugging Face model repos and advise on every change.")
    p.add_argument("--config", metavar="PATH", help="config file (default: HUBWATCH_CONFIG or ./config.toml)")
    p.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    p.add_argument("--version", action="version", version=f"hubwatch {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    anywhere = argparse.ArgumentParser(add_help=False)  # --debug after the command works too
    anywhere.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)

    def cmd(name: str, help: str, *, json: bool = False) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help, description=help, parents=[anywhere])
        if json:
            sp.add_argument("--json", action="store_true", help="print one JSON document")
        return sp

    t = cmd("track", "start tracking a Hub repo (org/name) or a git repository", json=True)
    t.add_argument("source", metavar="SOURCE")
    t.add_argument("--as", dest="as_id", metavar="ORG/NAME", help="the id a git source is tracked under")
    t.add_argument("--branch", default="main")
    t.add_argument("--backfill", default="all", help="all | none | N (how much history to read first)")
    t.add_argument("--no-read", action="store_true", help="only register; the next poll reads the history")
    t.add_argument("--replace", action="store_true",
                   help="re-point an id tracked from another source to this one (what it lacks turns unreachable)")
    t.add_argument("--repo-url", metavar="URL", help="the public URL advisories name (default: the Hub page, or the git remote)")

    u = cmd("untrack", "stop tracking a repo; its history is kept", json=True)
    u.add_argument("source", metavar="SOURCE")

    cmd("repos", "tracked repos with head, last poll, status and last error", json=True)

    po = cmd("poll", "one pass now over the named (or all) repos, then deliver pending webhooks", json=True)
    po.add_argument("sources", nargs="*", metavar="SOURCE")
    po.add_argument("--strict", action="store_true", help="exit 1 when any repo failed (for cron and CI)")

    h = cmd("history", "a repo's revisions, newest first", json=True)
    h.add_argument("source", metavar="SOURCE")
    h.add_argument("--limit", type=int, default=None)
    h.add_argument("--why", action="store_true", help="say why each change has its severity (the rule's reason)")

    s = cmd("show", "one revision: its changes, plan and advisory", json=True)
    s.add_argument("source", metavar="SOURCE")
    s.add_argument("rev", metavar="REV")

    d = cmd("diff", "changes between any two stored revisions", json=True)
    d.add_argument("source", metavar="SOURCE")
    d.add_argument("rev_a", metavar="REV_A")
    d.add_argument("rev_b", metavar="REV_B")

    pl = cmd("plan", "the GPU-memory plan of config files or of a stored revision", json=True)
    pl.add_argument("targets", nargs="+", metavar="CONFIG_JSON|SOURCE[@REV]")
    pl.add_argument("--method", choices=["traced", "seed"], default="traced",
                    help="memory method: traced (default, calibrated on a traced step) or seed")
    pl.add_argument("--tokens", type=_positive_int, metavar="N",
                    help="tokens per training sample and served sequence")

    a = cmd("advisories", "OSV advisories, of one repo or all", json=True)
    a.add_argument("source", nargs="?", metavar="SOURCE")

    one = cmd("advisory", "one OSV record as JSON")
    one.add_argument("id", metavar="ID")

    ex = cmd("export", "write the advisories as static files")
    ex.add_argument("format", choices=["osv"])
    ex.add_argument("directory", metavar="DIR")

    cmd("run", "scheduler + HTTP API in one process, until SIGINT/SIGTERM")
    sv = cmd("serve", "the HTTP API alone")
    sv.add_argument("--workers", type=_workers, metavar="N",
                    help="API processes sharing the listening socket (default: [server] workers, 1)")

    sb = cmd("subscribe", "add an outbound webhook subscription", json=True)
    sb.add_argument("url", metavar="URL")
    sb.add_argument("--repo", action="append", dest="repos", metavar="ORG/NAME", help="only these repos (repeatable)")
    sb.add_argument("--secret", help="a whsec_ secret (default: a new one)")
    ss = cmd("subscriptions", "list webhook subscriptions, or enable / disable / rotate-secret ID", json=True)
    ss.add_argument("action", nargs="?", choices=["enable", "disable", "rotate-secret"],
                    help="enable resumes the queue; disable keeps it; rotate-secret signs with both for a while")
    ss.add_argument("id", nargs="?", metavar="ID")
    ss.add_argument("--secret", help="rotate-secret: the new whsec_ secret (default: a new one)")
    us = cmd("unsubscribe", "remove a webhook subscription", json=True)
    us.add_argument("id", metavar="ID")
    us.add_argument("--discard-pending", action="store_true", help="drop the events still queued for it")

    au = cmd("audit", "check pinned model revisions (SBOMs, HF cache, models.lock, Python) against the advisories")
    au.add_argument("inputs", nargs="*", metavar="INPUT", help="files or directories (default: the HF cache); - is stdin")
    au.add_argument("--server", metavar="URL", help="ask this hubwatch or OSV API instead of the local store")
    au.add_argument("--format", choices=["text", "json", "sarif", "cyclonedx"], default="text")
    au.add_argument("--fail-on", default="HIGH", metavar="SEVERITY",
                    help="exit 3 on a finding at or above: unknown|LOW|MODERATE|HIGH|CRITICAL|none (default HIGH)")
    au.add_argument("--output", metavar="FILE", help="write the report here instead of stdout")
    au.add_argument("--offline", action="store_true", help="do not read untracked repos from the Hub (they are unknown)")
    lk = cmd("lock", "print a models.lock of the tracked heads (like pip freeze)")
    lk.add_argument("repos", nargs="*", metavar="ORG/NAME")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2)
        return int(e.code or 0)
    logging.basicConfig(
        level=logging.DEBUG if args.debug else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )
    try:
        with contextlib.redirect_stdout(TerminalSafe(sys.stdout)), \
                contextlib.redirect_stderr(TerminalSafe(sys.stderr)):  # type: ignore[type-var]
            code = commands.dispatch(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below, not at exit
        return code
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_OK  # `hubwatch history X | head`: the reader had enough
    except UsageError as e:
        _fail(args, e)
        return EXIT_USAGE
    except (HubwatchError, NotTrackedError, RevisionUnknownError, OSError, ValueError) as e:
        _fail(args, e)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # the one catch-all of the CLI: one line, no traceback unless --debug
        _fail(args, e)
        return EXIT_ERROR


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's final flush cannot raise again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real file descriptor (captured output in tests)
        pass


def _fail(args: argparse.Namespace, e: BaseException) -> None:
    if getattr(args, "debug", False):
        import traceback

        traceback.print_exc()
    message = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    print(f"hubwatch: error: {escape_controls(message)}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
