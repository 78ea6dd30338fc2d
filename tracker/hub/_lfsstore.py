"""Stage 1 (source) helper: open a git-lfs object without ever leaving the repository.

A hostile repository tracked by path or ``file://`` controls its own ``lfs/objects`` tree,
so every path component is opened relative to the one before with ``O_NOFOLLOW`` (a symlink
anywhere, in a folder or as the object, is refused), the object must be a regular file with
one link (no hard link to a file elsewhere) and exactly the size its pointer names, and a
whole read must hash to the pointer's sha256. Issue 16, point 1: ``/etc/passwd`` behind an
LFS symlink once reached the public API.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import BinaryIO

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
# O_NONBLOCK: opening a FIFO planted as an object must not hang the poll.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def open_lfs_object(git_dir: Path, sha256: str, size: int) -> BinaryIO | None:
    """``git_dir/lfs/objects/aa/bb/<sha256>`` opened for reading, or None when it is not there
    as a plain file of its own (missing, a symlink, a hard link, a FIFO, the wrong size)."""
    if len(sha256) != 64 or not all(c in "0123456789abcdef" for c in sha256):
        return None
    fd = -1
    try:
        fd = os.open(git_dir, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        for part in ("lfs", "objects", sha256[:2], sha256[2:4]):
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
        obj = os.open(sha256, _FILE_FLAGS, dir_fd=fd)
    except OSError:
        return None
    finally:
        if fd >= 0:
            os.close(fd)
    st = os.fstat(obj)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_size != size:
        os.close(obj)
        return None
    os.set_blocking(obj, True)
    return os.fdopen(obj, "rb")


def read_whole_verified(f: BinaryIO, sha256: str, size: int) -> bytes | None:
    """All ``size`` bytes of an opened object, or None when they do not hash to ``sha256``."""
    data = f.read(size)
    if len(data) != size or hashlib.sha256(data).hexdigest() != sha256:
        return None
    return data


def hashes_to(f: BinaryIO, sha256: str) -> bool:
    """Whether the whole of an opened object hashes to ``sha256`` (read in 1 MiB pieces).

    Range reads check this once per object first: what a range read finds is remembered by
    the pointer's sha256 for every repo, so a planted object must not answer for another's."""
    digest = hashlib.sha256()
    f.seek(0)
    while chunk := f.read(1 << 20):
        digest.update(chunk)
    f.seek(0)
    return digest.hexdigest() == sha256
