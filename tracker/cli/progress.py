"""A progress bar on a terminal (stderr), silence elsewhere."""

from __future__ import annotations

import sys
from collections.abc import Callable


def progress_bar(label: str) -> Callable[[int, int, str], None] | None:
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int, sha: str) -> None:
        width = 30
        filled = int(width * done / total) if total else width
        bar = "#" * filled + "-" * (width - filled)
        end = "\n" if done >= total else ""
        sys.stderr.write(f"\r{label} [{bar}] {done}/{total} {sha[:8]}{end}")
        sys.stderr.flush()

    return show
