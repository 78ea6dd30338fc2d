"""The progress bar of a first track: drawn on a terminal past the CLI's escaping of control
characters (its carriage return printed as ``\\u000d`` had made it one long line), and the
repo's own text in it still escaped."""

from __future__ import annotations

import contextlib
import io

from tracker.cli.progress import progress_bar
from tracker.cli.safe_output import TerminalSafe


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bar_redraws_in_place_on_a_terminal() -> None:
    screen = Terminal()
    with contextlib.redirect_stderr(TerminalSafe(screen)):  # type: ignore[type-var]
        show = progress_bar("org/evil\x1b[2J")
        assert show is not None
        show(0, 2, "a" * 40)
        show(2, 2, "b" * 40)
    text = screen.getvalue()
    assert text.count("\r") == 2 and "\\u000d" not in text
    assert "\x1b" not in text and "org/evil\\u001b[2J [" in text
    assert text.endswith("] 2/2 bbbbbbbb\n")


def test_no_bar_off_a_terminal() -> None:
    with contextlib.redirect_stderr(TerminalSafe(io.StringIO())):  # type: ignore[type-var]
        assert progress_bar("org/name") is None
