"""Stage 4, diff: what changed between two revisions' artifacts (pure, layer 1).

Imports only the standard library, :mod:`tracker.model`, deepdiff and jinja2 (the sandboxed
rendering of chat templates). Changes carry topics; severities come from advisories.rules.
"""

from tracker.diff.revision import (
    diff_artifacts,
    history_rewrite_change,
    namespace_reuse_change,
    rename_change,
)

__all__ = ["diff_artifacts", "history_rewrite_change", "namespace_reuse_change", "rename_change"]
