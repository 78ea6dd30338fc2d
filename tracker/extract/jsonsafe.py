"""Bounded JSON parsing for hostile repo files.

Layer 1 (stage 3, extract), pure. ``json.loads`` alone accepts any size and recurses as deep
as the interpreter lets it; every later stage (deepdiff, canonical dumps, the diff) recurses
too. So the size is checked before parsing and the nesting depth right after (the C scanner
itself stops safely at the recursion limit), and every failure becomes
:class:`~tracker.errors.InvalidContent` with a short, human reason.
"""

from __future__ import annotations

import json
from typing import Any

from tracker.errors import InvalidContent

#: Deeper than any real config / tokenizer file (tokenizer.json sections reach about 6).
MAX_JSON_DEPTH = 32


def json_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> int:
    """Nesting depth of a parsed JSON value, walked iteratively; stops once past ``limit``."""
    best = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        depth += 1
        if depth > best:
            best = depth
            if best > limit:
                return best
        stack.extend((c, depth) for c in children if isinstance(c, (dict, list)))
    return best


def decode_utf8(raw: bytes, what: str = "file") -> str:
    """Strict UTF-8 (a BOM is tolerated, as Python's json does for str input)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidContent(f"{what} is not valid UTF-8 (byte {e.start})") from e
    return text[1:] if text.startswith("\ufeff") else text


def load_json(raw: bytes, *, max_bytes: int, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse ``raw`` as JSON within ``max_bytes`` and ``max_depth``, or raise InvalidContent."""
    if len(raw) > max_bytes:
        raise InvalidContent(f"JSON is {len(raw)} bytes, over the {max_bytes} byte cap")
    text = decode_utf8(raw, "JSON")
    try:
        value = json.loads(text)
    except RecursionError as e:  # the C scanner stops at the interpreter's recursion limit
        raise InvalidContent(f"JSON nests over {max_depth} levels deep") from e
    except ValueError as e:  # JSONDecodeError and the int-digit limit
        raise InvalidContent(f"invalid JSON: {e}") from e
    if json_depth(value, max_depth) > max_depth:
        raise InvalidContent(f"JSON nests over {max_depth} levels deep")
    return value


def canonical_json(value: Any) -> str:
    """Deterministic compact JSON: sorted keys, no ASCII escaping."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
