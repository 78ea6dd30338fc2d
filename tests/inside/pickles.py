"""Torch checkpoints for the tests: the committed fixtures (written by real torch.save, see
tests/fixtures/pickles/make_fixtures.py), grown with storage bytes so that reading them
whole would show in the emulator's log."""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

PICKLES = Path(__file__).parent.parent / "fixtures" / "pickles"


def fixture(name: str) -> bytes:
    return (PICKLES / name).read_bytes()


def padded_zip(name: str, storage_bytes: int = 256 * 1024) -> bytes:
    """The zip checkpoint with every storage member grown to ``storage_bytes`` (stored)."""
    out = io.BytesIO()
    with zipfile.ZipFile(PICKLES / name) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if "/data/" in info.filename:
                data = data.ljust(storage_bytes, b"\0")
            dst.writestr(info.filename, data)
    return out.getvalue()


def allowed_regions(blob: bytes) -> list[tuple[int, int]]:
    """Byte ranges a reader may touch: the magic, the end records and central directory,
    and each data.pkl member (local header and data), inclusive."""
    regions = [(0, 3)]
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        eocd = blob.rfind(b"PK\x05\x06")
        (_size, cd_offset) = struct.unpack("<II", blob[eocd + 12 : eocd + 20])
        regions.append((cd_offset, len(blob) - 1))
        for info in z.infolist():
            if info.filename.endswith("/data.pkl"):
                start = info.header_offset
                n_name, n_extra = struct.unpack("<HH", blob[start + 26 : start + 30])
                regions.append((start, start + 30 + n_name + n_extra + info.compress_size - 1))
    return regions


def inside(ranges: list[tuple[int, int]], regions: list[tuple[int, int]]) -> bool:
    return all(any(a <= lo and hi <= b for a, b in regions) for lo, hi in ranges)
