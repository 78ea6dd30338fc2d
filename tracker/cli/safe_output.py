"""The CLI's stdout and stderr with terminal control characters escaped (issue 16, point 13).

Titles, commit messages, code and template diffs come from hostile repos; printed raw, their
escape sequences cleared the operator's screen and set the window title. Every C0 control
but tab and newline, DEL, the C1 controls and the bidirectional overrides are written as
``\\uXXXX``: readable as text, and a valid escape inside a JSON string, so ``--json`` output
stays the same JSON document.
"""

from __future__ import annotations

import re
from typing import Any, TextIO

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def escape_controls(text: str) -> str:
    """``text`` with every character a terminal would act on written as ``\\uXXXX``."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class TerminalSafe:
    """A text stream that escapes control characters before they reach ``stream``."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(escape_controls(text))
        return len(text)

    def write_controls(self, text: str) -> int:
        """``text`` as is: the CLI's own controls (the progress bar's carriage return); whatever
        in it came from a repo the caller escaped first."""
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, encoding, fileno, ...
        return getattr(self._stream, name)
