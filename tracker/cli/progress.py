"""A progress bar on a terminal (stderr), silence elsewhere."""

from __future__ import annotations

import sys
from collections.abc import Callable

from tracker.cli.safe_output import escape_controls


def progress_bar(label: str) -> Callable[[int, int, str], None] | None:
    if not sys.stderr.isatty():
        return None
    label = escape_controls(label)

    def show(done: int, total: int, sha: str) -> None:
        width = 30
        filled = int(width * done / total) if total else width
        bar = "#" * filled + "-" * (width - filled)
        end = "\n" if done >= total else ""
        # the carriage return past the CLI's escaping (TerminalSafe), which would print it as \u000d
        write = getattr(sys.stderr, "write_controls", sys.stderr.write)
        write(f"\r{label} [{bar}] {done}/{total} {escape_controls(sha[:8])}{end}")
        sys.stderr.flush()

    return show
