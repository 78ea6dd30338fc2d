"""Stage 1 (source) helpers: run the ``git`` CLI safely and parse what it prints.

Used by :mod:`tracker.hub.localgit`. Every call has a timeout; git never prompts (no
terminal, no askpass) and refuses the ``ext::`` and ``fd::`` transports, because repository locations
come from users and repo contents are untrusted.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import signal
import subprocess
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tracker.errors import SourceUnavailable
from tracker.hub._gitnet import FetchPin

LFS_POINTER_MAX = 1024
_LFS_HEAD = b"version https://git-lfs.github.com/spec/v1\n"
_LFS_OID = re.compile(rb"^oid sha256:([0-9a-f]{64})$", re.M)
_LFS_SIZE = re.compile(rb"^size ([0-9]{1,20})$", re.M)
SHA_RE = re.compile(r"^[0-9a-f]{40}$")

_BASE_ARGS = (
    "-c",
    "safe.directory=*",
    "-c",
    "protocol.ext.allow=never",
    "-c",
    "protocol.fd.allow=never",
    "-c",
    "core.quotePath=false",
    "-c",
    "credential.interactive=never",
)


class GitFailed(Exception):
    """git exited non-zero; ``stderr`` says why (LC_ALL=C, so it is parseable)."""

    def __init__(self, args: Sequence[str], returncode: int, stderr: str):
        super().__init__(f"git {' '.join(args[:2])} failed ({returncode}): {stderr.strip()[:300]}")
        self.returncode = returncode
        self.stderr = stderr


#: Transports an operator's fetch may use (a source the API added: no file); a command that
#: is no fetch gets none, so a partial clone's lazy fetch of a hostile promisor URL fails.
OPERATOR_PROTOCOLS = "file:https:http:git:ssh"
PINNED_PROTOCOLS = "https:http:git:ssh"
_FETCHES = ("clone", "fetch", "ls-remote")
_DROPPED_ENV = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_REPLACE_REF_BASE", "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_SHALLOW_FILE", "GIT_GRAFT_FILE",
)


def _env(ssh_command: str | None = None, drop: Sequence[str] = (), protocols: str = "") -> dict[str, str]:
    """git's environment: never prompts, no replace objects (an id means its own content), no
    objects, config or repository named from outside, transports only as ``protocols`` says."""
    env = {k: v for k, v in os.environ.items() if k not in drop and k not in _DROPPED_ENV}
    env.update(
        LC_ALL="C",
        LANG="C",
        GIT_TERMINAL_PROMPT="0",
        GIT_ASKPASS="/bin/false",
        SSH_ASKPASS="/bin/false",
        GIT_SSH_COMMAND=ssh_command or "ssh -oBatchMode=yes",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_LFS_SKIP_SMUDGE="1",
        GIT_LITERAL_PATHSPECS="1",
        GIT_NO_REPLACE_OBJECTS="1",
        GIT_ALLOW_PROTOCOL=protocols,
    )
    return env


def run_git(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    timeout: float,
    stdin: bytes | None = None,
    what: str = "git",
    pin: FetchPin | None = None,
    env: Mapping[str, str] | None = None,
) -> bytes:
    """Run ``git -C cwd args``; raise GitFailed on a non-zero exit, SourceUnavailable on timeout.

    Only a fetch (``clone``, ``fetch``, ``ls-remote``) may use a transport. A ``pin`` (a fetch
    of a source added over the API) adds its config and ssh command, and no ``file`` transport.
    ``env`` adds variables (e.g. ``GIT_CONFIG_*`` carrying a header that must not appear on a
    command line, where every local user could read it)."""
    cmd = ["git", *_BASE_ARGS]
    for item in pin.config if pin is not None else ():
        cmd += ["-c", item]
    if cwd is not None:
        cmd += ["-C", str(cwd)]
    cmd += list(args)
    try:
        # its own process group: on timeout git's children (ssh, remote-https, upload-pack)
        # are killed with it, not left running (an ssh to a host that never answers lived on)
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**(_env(pin.ssh_command, pin.drop_env, PINNED_PROTOCOLS) if pin is not None
                    else _env(protocols=OPERATOR_PROTOCOLS if args[:1] and args[0] in _FETCHES else "")),
                 **(env or {})},
            start_new_session=True,
        )
    except OSError as e:  # git missing, cwd vanished
        raise SourceUnavailable(f"{what}: cannot run git: {e.strerror}") from e
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        _kill_group(proc)
        raise SourceUnavailable(f"{what}: git timed out after {timeout:g}s") from e
    except BaseException:
        _kill_group(proc)
        raise
    if proc.returncode != 0:
        raise GitFailed(list(args), proc.returncode, err.decode("utf-8", "replace"))
    return out


def _kill_quietly(proc: subprocess.Popen[bytes]) -> None:
    """Kill git and every process it started (its own process group)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    _kill_quietly(proc)
    proc.communicate()


def read_blob_prefix(git_dir: Path, oid: str, limit: int, *, timeout: float) -> bytes:
    """The first ``limit`` bytes of a blob, streamed from ``git cat-file``, which is stopped
    there: a 400 MB weights file committed without LFS costs ``limit`` bytes, not 400 MB."""
    cmd = ["git", *_BASE_ARGS, "-C", str(git_dir), "cat-file", "blob", oid]
    try:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(),
            start_new_session=True,
        )
    except OSError as e:
        raise SourceUnavailable(f"cannot run git: {e.strerror}") from e
    timer = threading.Timer(timeout, lambda: _kill_quietly(proc))
    timer.start()
    try:
        assert proc.stdout is not None
        chunks, got = [], 0
        while got < limit:
            chunk = proc.stdout.read(min(1 << 16, limit - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got < limit:  # the blob ended (or git failed) before the limit: git's exit decides
            err = proc.stderr.read(4096) if proc.stderr else b""
            if proc.wait() != 0:
                if not timer.is_alive():
                    raise SourceUnavailable(f"git timed out after {timeout:g}s")
                raise GitFailed(["cat-file", "blob"], proc.returncode, err.decode("utf-8", "replace"))
        return b"".join(chunks)
    finally:
        timer.cancel()
        if proc.poll() is None:
            _kill_quietly(proc)
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def blob_matches(oid: str, data: bytes) -> bool:
    """Whether ``data`` is the blob ``oid`` names (git does not check a loose object it reads;
    the blob store is keyed by id across repos, so a lie would reach other repos' output)."""
    algo = hashlib.sha1 if len(oid) == 40 else hashlib.sha256
    return algo(b"blob %d\0" % len(data) + data).hexdigest() == oid


@dataclass(frozen=True, slots=True)
class LfsPointer:
    sha256: str
    size: int


def parse_lfs_pointer(data: bytes) -> LfsPointer | None:
    """The pointer's oid and size when ``data`` is a git-lfs pointer file, else None."""
    if len(data) >= LFS_POINTER_MAX or not data.startswith(_LFS_HEAD):
        return None
    oid = _LFS_OID.search(data)
    size = _LFS_SIZE.search(data)
    if oid is None or size is None:
        return None
    return LfsPointer(oid.group(1).decode(), int(size.group(1)))


def cat_file_batch(git_dir: Path, oids: Iterable[str], *, timeout: float) -> dict[str, bytes]:
    """Contents of many objects in one ``git cat-file --batch`` run (missing ones left out)."""
    wanted = list(dict.fromkeys(oids))
    if not wanted:
        return {}
    out = run_git(
        ["cat-file", "--batch"],
        cwd=git_dir,
        timeout=timeout,
        stdin="\n".join(wanted).encode() + b"\n",
    )
    result: dict[str, bytes] = {}
    pos = 0
    while pos < len(out):
        nl = out.index(b"\n", pos)
        header = out[pos:nl].decode("utf-8", "replace").split()
        pos = nl + 1
        if len(header) != 3:  # "<oid> missing"
            continue
        size = int(header[2])
        result[header[0]] = out[pos : pos + size]
        pos += size + 1
    return result


@dataclass(frozen=True, slots=True)
class RawCommit:
    parents: tuple[str, ...]
    author: str
    committed_at: datetime
    title: str
    message: str


def _ident(value: str) -> tuple[str, int]:
    """Name and unix time of an ``author``/``committer`` header value."""
    name = value.split(" <", 1)[0].strip()
    parts = value.rsplit(" ", 2)
    try:
        ts = int(parts[-2])
    except (ValueError, IndexError):
        ts = 0
    return name, ts


def parse_commit(raw: bytes) -> RawCommit:
    """Parse a raw commit object (as ``cat-file`` prints it); tolerant of odd headers."""
    head, _, body = raw.partition(b"\n\n")
    parents: list[str] = []
    author, committed, encoding = "", 0, "utf-8"
    for line in head.split(b"\n"):
        if line.startswith(b" "):  # continuation (gpgsig, mergetag)
            continue
        key, _, value = line.decode("utf-8", "replace").partition(" ")
        if key == "parent":
            parents.append(value.strip())
        elif key == "author":
            author = _ident(value)[0]
        elif key == "committer":
            committed = _ident(value)[1]
        elif key == "encoding":
            encoding = value.strip()
    try:
        text = body.decode(encoding, "replace")
    except LookupError:
        text = body.decode("utf-8", "replace")
    title, message = split_message(text)
    return RawCommit(tuple(parents), author, commit_time(committed), title, message)


_FIRST, _LAST = datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)


def commit_time(seconds: int) -> datetime:
    """A commit's unix time as a datetime, clamped to years 1-9999: git takes any integer, and
    a commit dated past them must not stop the history at it (a hostile repo's blinding commit)."""
    if seconds <= _FIRST.timestamp():
        return _FIRST
    if seconds >= _LAST.timestamp():
        return _LAST
    return datetime.fromtimestamp(seconds, UTC)


def split_message(text: str) -> tuple[str, str]:
    """Title = the message's first line; message = the rest, trimmed."""
    first, _, rest = text.strip("\n").partition("\n")
    return first.strip(), rest.strip()
