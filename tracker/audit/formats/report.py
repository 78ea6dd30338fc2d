"""What every audit format needs besides the verdicts: who answered, when, and where from."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from advisories.osv import purl
from tracker.audit.pins import Pin


@dataclass(frozen=True, slots=True)
class Report:
    """The context of one audit run."""

    now: datetime
    answered_by: str  # "local store" or the server URL
    fail_on: str
    version: str = "0.1.0"
    base_dir: Path | None = None  # SARIF locations are relative to it when inside it

    def location(self, pin: Pin) -> str:
        """The input as a URI reference: relative (posix) under ``base_dir``, else absolute."""
        path = Path(pin.source)
        if pin.source == "-":
            return "stdin"
        resolved = path.resolve() if not path.is_absolute() else path
        if self.base_dir is not None:
            try:
                return resolved.relative_to(self.base_dir.resolve()).as_posix()
            except ValueError:
                pass
        return resolved.as_uri()


def model_purl(repo: str, revision: str | None) -> str:
    """The component purl of a (repo, revision)."""
    return purl(repo, revision) if revision else purl(repo)
