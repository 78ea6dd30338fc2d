"""List the globals a pickle imports with ``pickletools`` (it is never unpickled).

Layer 1 (stage 3, extract), pure. :func:`scan_pickles` walks the opcodes of one pickle
stream (or several in a row, as legacy ``torch.save`` files hold) and records every
``GLOBAL`` / ``STACK_GLOBAL`` / ``INST`` target. ``STACK_GLOBAL`` takes its module and name
from the stack, so string pushes and the memo are followed; one that is not made of literal
strings is recorded as ``<unresolved>``. The snapshot stage stores :func:`digest_scan`'s
JSON; :func:`load_pickle_digest` classifies it against the policy table
(:mod:`tracker.extract.pickle_policy`) each time it is read, so a policy change applies to
every stored revision.
"""

from __future__ import annotations

import io
import json
import pickletools
import struct
from dataclasses import dataclass, field

from tracker.errors import InvalidContent
from tracker.extract.jsonsafe import load_json
from tracker.extract.pickle_policy import verdict
from tracker.model.inside import PickleImport, PickleScan

DIGEST_VERSION = 1
MAX_GLOBALS = 10_000
_STRING_OPS = {
    "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "STRING", "BINSTRING",
    "SHORT_BINSTRING",
}  # fmt: skip
_PUT_OPS = {"PUT", "BINPUT", "LONG_BINPUT"}
_GET_OPS = {"GET", "BINGET", "LONG_BINGET"}
UNRESOLVED = "<unresolved>"


@dataclass
class _Found:
    globals: set[tuple[str, str]] = field(default_factory=set)
    pickles: int = 0
    complete: bool = True


def _one(data: bytes, start: int, found: _Found) -> int:
    """Walk one pickle from ``start``; the offset after its STOP. ValueError when it is cut."""
    stack: list[str | None] = []  # only what STACK_GLOBAL needs: recent pushes, strings kept
    memo: dict[int, str | None] = {}
    stream = io.BytesIO(data)
    stream.seek(start)
    for op, arg, pos in pickletools.genops(stream):
        name = op.name
        if name in _STRING_OPS:
            stack.append(arg if isinstance(arg, str) else str(arg))
        elif name in ("GLOBAL", "INST"):
            module, _, qual = str(arg).partition(" ")
            found.globals.add((module, qual))
            stack.append(None)
        elif name == "STACK_GLOBAL":
            mod = stack[-2] if len(stack) >= 2 else None
            attr = stack[-1] if stack else None
            if isinstance(mod, str) and isinstance(attr, str):
                found.globals.add((mod, attr))
            else:
                found.globals.add((UNRESOLVED, f"{mod or '?'}.{attr or '?'}"))
            del stack[-2:]
            stack.append(None)
        elif name == "MEMOIZE":
            memo[len(memo)] = stack[-1] if stack else None
        elif name in _PUT_OPS:
            memo[int(str(arg))] = stack[-1] if stack else None
        elif name in _GET_OPS:
            stack.append(memo.get(int(str(arg))))
        elif name == "STOP":
            return int(str(pos)) + 1
        elif op.stack_after:
            stack.append(None)
        if len(found.globals) > MAX_GLOBALS:
            raise InvalidContent(f"pickle imports more than {MAX_GLOBALS} globals")
    raise ValueError("pickle ended before its STOP")


def scan_pickles(data: bytes, *, whole: bool, max_pickles: int = 8) -> _Found:
    """The globals of the pickle stream(s) at the start of ``data``.

    ``whole`` says ``data`` is the entire member or file; when it is only a prefix, a stream
    cut at its end marks the scan incomplete. After the first pickle, bytes that do not parse
    are the raw tensor data legacy torch files carry, and end the scan.
    """
    found = _Found()
    pos = 0
    while pos < len(data) and found.pickles < max_pickles:
        try:
            pos = _one(data, pos, found)
        except (ValueError, KeyError, IndexError, TypeError, struct.error, OverflowError, EOFError) as e:
            # pickletools' complaints about a cut or malformed stream
            if found.pickles == 0:
                if not whole:
                    found.complete = False
                    break
                raise InvalidContent(f"not a readable pickle: {e}") from None
            # a cut stream (not garbage) before legacy torch's 4 pickles: read further
            garbage = "unknown" in str(e) and "opcode" in str(e)
            if not whole and found.pickles < 4 and not garbage:
                found.complete = False
            break
        found.pickles += 1
    if found.pickles == 0 and found.complete and not data:
        raise InvalidContent("empty pickle")
    return found


def digest_scan(
    container: str, members: list[str], found: _Found | None, error: str | None = None
) -> bytes:
    """Canonical JSON the blob store keeps per pickle file content id."""
    doc = {
        "digest": DIGEST_VERSION,
        "container": container,
        "members": sorted(members),
        "globals": sorted([m, n] for m, n in (found.globals if found else ())),
        "complete": bool(found and found.complete),
        "error": error,
    }
    return json.dumps(doc, sort_keys=True, ensure_ascii=False).encode()


def load_pickle_digest(raw: bytes) -> PickleScan:
    """The classified scan of a stored digest; InvalidContent when it is not one."""
    doc = load_json(raw, max_bytes=16 * 1024 * 1024, max_depth=4)
    if not isinstance(doc, dict) or doc.get("digest") != DIGEST_VERSION:
        raise InvalidContent("not a pickle scan digest")
    imports = tuple(
        PickleImport(str(m), str(n), verdict(str(m), str(n)))
        for m, n in doc.get("globals") or []
    )
    error = doc.get("error")
    return PickleScan(
        container=str(doc.get("container")),
        members=tuple(str(m) for m in doc.get("members") or []),
        imports=imports,
        complete=bool(doc.get("complete")),
        error=error if isinstance(error, str) else None,
    )
