"""What a JSON document means to the severity rules, as one comparable key.

Layer 1 (stage 4, diff), pure. Two versions of config.json (or generation_config.json) whose
diff (:func:`tracker.diff.documents.diff_document`) has no change with a severity have the same
:func:`meaning_key`: the key is the document's JSON text as :mod:`tracker.diff.jsondiff`
compares it, less the fields :mod:`tracker.diff.fields` classifies as bookkeeping, the only
fields of these documents whose change carries no severity. Unequal keys therefore rule a
semantic restore out; equal keys do not prove one (another file's change may name the document
as its source), so the lifecycle runs its full diff only where the keys agree (issue 17: a first
track re-diffed every open advisory's parent per commit, its cost growing with the history).
"""

from __future__ import annotations

import hashlib
from typing import Any

from tracker.diff.jsondiff import compared_text
from tracker.diff.keys import CONFIG_BOOKKEEPING, GENERATION_BOOKKEEPING, SUBCONFIGS

#: The documents a key is defined for, by path: the attribute of :class:`tracker.model.Artifacts`
#: holding the parsed document.
KEYED_DOCUMENTS = {"config.json": "config", "generation_config.json": "generation_config"}


def meaning_key(path: str, doc: Any) -> str | None:
    """The key of ``doc`` parsed from ``path``; None where no key is defined (another file, or
    a document that is not a JSON object)."""
    if not isinstance(doc, dict) or path not in KEYED_DOCUMENTS:
        return None
    if path == "config.json":  # bookkeeping is classified at the top and inside each sub-config
        kept = {k: _without(v, CONFIG_BOOKKEEPING) if k in SUBCONFIGS else v
                for k, v in doc.items() if k not in CONFIG_BOOKKEEPING}
    else:
        kept = _without(doc, GENERATION_BOOKKEEPING)
    try:
        text = compared_text(kept)
        if "-0.0" in text:  # DeepDiff finds -0.0 and 0.0 equal: so must the key
            text = compared_text(_zeros(kept))
    except (TypeError, ValueError, RecursionError):  # not plain JSON: no key, the full diff decides
        return None
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _zeros(value: Any) -> Any:
    if isinstance(value, float) and value == 0.0:
        return 0.0
    if isinstance(value, dict):
        return {k: _zeros(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_zeros(v) for v in value]
    return value


def _without(value: Any, keys: frozenset[str]) -> Any:
    return {k: v for k, v in value.items() if k not in keys} if isinstance(value, dict) else value


__all__ = ["KEYED_DOCUMENTS", "meaning_key"]
