"""Audit input and output: ``models.lock``, a TOML list of pinned model revisions.

```toml
[[model]]
repo = "org/name"
revision = "<40 hex>"
branch = "main"        # optional: where the revision came from
```

Like ``pip freeze``: ``hubwatch lock`` writes one from the tracked heads, ``hubwatch audit
models.lock`` checks it. Each pin's line is the line of its ``[[model]]`` header.

Imports: stdlib, tracker.audit.pins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from tracker.audit.pins import REPO_ID, Pin, revision_of

_HEADER = re.compile(r"^[ \t]*\[\[[ \t]*model[ \t]*\]\]", re.MULTILINE)


class LockError(ValueError):
    """A models.lock entry that cannot be read as one."""


def is_lockfile(doc: Any) -> bool:
    return isinstance(doc, Mapping) and isinstance(doc.get("model"), list)


def lock_pins(doc: Mapping[str, Any], text: str, source: str) -> list[Pin]:
    """The pins of a parsed models.lock (``text`` gives the lines)."""
    lines = [text.count("\n", 0, m.start()) + 1 for m in _HEADER.finditer(text)]
    out = []
    for i, entry in enumerate(doc["model"]):
        line = lines[i] if i < len(lines) else None
        repo = entry.get("repo") if isinstance(entry, Mapping) else None
        if not isinstance(repo, str) or not REPO_ID.match(repo):
            raise LockError(f"{source}:{line or '?'}: [[model]] needs repo = \"org/name\"")
        value = entry.get("revision")
        if value is not None and not isinstance(value, str):
            raise LockError(f"{source}:{line or '?'}: revision must be a string")
        revision, ref = revision_of(value)
        branch = entry.get("branch")
        out.append(Pin(repo, revision, source, "lockfile", line, ref or (None if revision else _str(branch))))
    return out


def render_lock(entries: Iterable[tuple[str, str, str]]) -> str:
    """models.lock text for (repo, revision, branch) entries, sorted by repo."""
    parts = ["# models.lock: written by `hubwatch lock`; check it with `hubwatch audit models.lock`\n"]
    for repo, revision, branch in sorted(entries):
        parts.append(f'\n[[model]]\nrepo = "{repo}"\nrevision = "{revision}"\nbranch = "{_escape(branch)}"\n')
    return "".join(parts)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')
