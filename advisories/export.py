"""Stage 7 (emit): the static OSV export, as files and as bytes for the HTTP API.

Layout (osv.dev's REST source contract and the GCS export): ``{id}.json`` per record,
``all.json`` = ``[{"id", "modified"}]`` newest first (ties by id) so a reader stops at the
first timestamp it has seen, ``all.zip`` = every record as ``{id}.json``. Withdrawn records
are exported too. Bytes are stable: sorted keys, two-space indent, UTF-8, a final newline,
zip members sorted by name with a fixed 1980-01-01 timestamp and fixed permissions, so the
same records always give the same files.

Imports: stdlib only.
"""

from __future__ import annotations

import io
import json
import os
import re
import tempfile
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}")
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def record_bytes(record: Mapping[str, Any]) -> bytes:
    """One record as stable JSON bytes."""
    return (json.dumps(record, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()


def index(records: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """``[{"id", "modified"}]``, newest first, then by id."""
    entries = [{"id": str(r["id"]), "modified": str(r["modified"])} for r in records]
    entries.sort(key=lambda e: e["id"])
    entries.sort(key=lambda e: e["modified"], reverse=True)
    return entries


def index_bytes(records: Iterable[Mapping[str, Any]]) -> bytes:
    """``all.json`` as stable bytes."""
    return (json.dumps(index(records), indent=2) + "\n").encode()


def zip_bytes(records: Iterable[Mapping[str, Any]]) -> bytes:
    """``all.zip``: every record as ``{id}.json``, deterministic to the byte."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for record in sorted(_checked(records), key=lambda r: str(r["id"])):
            info = zipfile.ZipInfo(f"{record['id']}.json", date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # unix, whatever the host
            info.external_attr = 0o100644 << 16
            archive.writestr(info, record_bytes(record), compresslevel=9)
    return buffer.getvalue()


def safe_id(record_id: str) -> bool:
    """Whether ``record_id`` can name a file (no separators, no leading dot, bounded)."""
    return _SAFE_ID.fullmatch(record_id) is not None


def write_export(records: Iterable[Mapping[str, Any]], directory: Path) -> list[Path]:
    """Write ``{id}.json``, ``all.json`` and ``all.zip`` into ``directory``; return the paths.

    Each file is replaced atomically (a reader sees the old or the new bytes); files of ids
    not in ``records`` are left alone, as records are never deleted.
    """
    checked = _checked(records)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for record in sorted(checked, key=lambda r: str(r["id"])):
        written.append(_write(directory / f"{record['id']}.json", record_bytes(record)))
    written.append(_write(directory / "all.json", index_bytes(checked)))
    written.append(_write(directory / "all.zip", zip_bytes(checked)))
    return written


def _checked(records: Iterable[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
    items = list(records)
    seen: set[str] = set()
    for record in items:
        record_id = str(record.get("id", ""))
        if not safe_id(record_id) or record_id in ("all",):
            raise ValueError(f"record id cannot name an export file: {record_id!r}")
        if record_id in seen:
            raise ValueError(f"duplicate record id in export: {record_id}")
        if not isinstance(record.get("modified"), str):
            raise ValueError(f"record {record_id} has no modified timestamp")
        seen.add(record_id)
    return items


def _write(path: Path, data: bytes) -> Path:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
