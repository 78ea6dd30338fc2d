"""Stage 1 (source) helper: commits' parents over git protocol v2 (smart HTTP), in-process.

What :mod:`tracker.hub._hfgit` needs from the Hub's git side is small: the parents of the few
commits a check reads. The git CLI's shallow, tree-less clone of them cost about 40 ms of CPU a
check (``git clone`` into a temporary directory: git, git-remote-https, index-pack, rev-list;
``benchmarks/new_revision.py``), more than all of the check's API requests together. Here the
same three requests (the capability advertisement, ``ls-refs``, one ``fetch`` with ``deepen``
and ``filter tree:0``) go through the source's own HTTP client, each under its deadline with
the token in its header, and the answer's pack is read in memory: its commit objects (zlib,
OFS and REF deltas) and nothing else kept. A commit's parents are in its own object, so a
commit at the shallow boundary is as good as any.

Everything a server sends is bounded: the answer's bytes, each object's inflated size (declared
up front, checked as inflated), the sum of them, the pack's checksum. A server that does not
speak v2 with ``shallow`` and ``filter`` raises :class:`WireUnsupported` (the caller runs the
git CLI instead); 401/403/404 on the advertisement raise :class:`GitNotServed`.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from tracker.errors import SourceUnavailable

MAX_ANSWER_BYTES = 64 * 1024 * 1024  # a fetch answer (its pack: commit objects only)
MAX_OBJECT_BYTES = 32 * 1024 * 1024  # one inflated object (a commit with a 10 MB message fits)
MAX_INFLATED_BYTES = 256 * 1024 * 1024  # every object of one pack, inflated
_OID = re.compile(rb"\A[0-9a-f]{40}\Z")
_HEX4 = re.compile(rb"\A[0-9a-fA-F]{4}\Z")
_COMMIT, _TREE, _BLOB, _TAG, _OFS_DELTA, _REF_DELTA = 1, 2, 3, 4, 6, 7
_TYPE_NAMES = {_COMMIT: b"commit", _TREE: b"tree", _BLOB: b"blob", _TAG: b"tag"}


class GitNotServed(Exception):
    """The endpoint has no git repository for this repo (or refuses us one)."""


class WireUnsupported(Exception):
    """The server does not speak what this client needs (protocol v2, shallow, filter)."""


class GitHttp(Protocol):
    """What this client needs of an HTTP client: one request under a deadline, its answer bounded.
    Returns (status, content type, body, the final URL after redirects)."""

    def git_request(self, method: str, url: str, *, body: bytes | None, headers: dict[str, str],
                    max_bytes: int, what: str) -> tuple[int, str, bytes, str]: ...


@dataclass(frozen=True, slots=True)
class Fetched:
    """A fetch's commits (``sha -> parents``) and its shallow boundary."""

    parents: dict[str, tuple[str, ...]]
    shallow: frozenset[str]


class WireClient:
    """One repo's git endpoint over smart HTTP, protocol v2 (stateless: one request a command)."""

    def __init__(self, http: GitHttp, url: str, *, what: str, repo_id: str):
        self.http, self.url, self.what, self.repo_id = http, url.rstrip("/"), what, repo_id
        self.capabilities: dict[str, str] = {}

    # -- commands ------------------------------------------------------------------------
    def advertise(self) -> None:
        """``GET info/refs``: the capabilities; the URL the repo is served under (a renamed
        repo's advertisement is redirected: the commands follow it)."""
        status, ctype, body, final = self.http.git_request(
            "GET", f"{self.url}/info/refs?service=git-upload-pack", body=None,
            headers={"Git-Protocol": "version=2"}, max_bytes=1024 * 1024, what=self.what)
        if status in (401, 403, 404, 410):
            raise GitNotServed(f"the git advertisement answered {status}")
        if status >= 400:
            raise SourceUnavailable(f"{self.what}: the git advertisement answered {status}", repo_id=self.repo_id)
        try:
            lines = [p for p in pkt_lines(body) if p is not None]
        except ValueError as e:  # a page that is no git answer (a mirror of the API alone)
            raise GitNotServed(f"not a git advertisement ({ctype or 'no content type'})") from e
        if lines and lines[0].startswith(b"# service="):
            lines = lines[1:]
        if not lines or lines[0].rstrip(b"\n") != b"version 2":
            raise WireUnsupported("no protocol v2")
        for line in lines[1:]:
            key, _, value = line.rstrip(b"\n").decode("utf-8", "replace").partition("=")
            self.capabilities[key] = value
        fetch = self.capabilities.get("fetch", "").split()
        if "fetch" not in self.capabilities or "shallow" not in fetch or "filter" not in fetch:
            raise WireUnsupported("fetch without shallow or filter")
        if self.capabilities.get("object-format", "sha1") != "sha1":
            raise WireUnsupported(f"object format {self.capabilities['object-format']}")
        if final.endswith("/info/refs?service=git-upload-pack"):
            self.url = final[: -len("/info/refs?service=git-upload-pack")]

    def branch_tip(self, branch: str) -> str:
        """``ls-refs``: the commit ``branch`` (a branch, else a tag) points at."""
        refs: dict[str, str] = {}
        wanted = (f"refs/heads/{branch}", f"refs/tags/{branch}")
        for line in self._command("ls-refs", [f"ref-prefix {r}" for r in wanted], max_bytes=1024 * 1024):
            oid, _, rest = line.rstrip(b"\n").partition(b" ")
            name = rest.split(b" ", 1)[0].decode("utf-8", "replace")
            if _OID.match(oid) and name in wanted:
                refs[name] = oid.decode()
        for name in wanted:
            if name in refs:
                return refs[name]
        raise SourceUnavailable(f"{self.what}: the git side has no branch {branch!r}", repo_id=self.repo_id)

    def fetch_commits(self, tip: str, depth: int) -> Fetched:
        """``fetch``: the commits within ``depth`` of ``tip``, no trees, no blobs."""
        args = ["no-progress", "ofs-delta", f"deepen {depth}", "filter tree:0", f"want {tip}", "done"]
        section = None
        shallow: set[str] = set()
        pack = bytearray()
        for line in self._command("fetch", args, max_bytes=MAX_ANSWER_BYTES, sections=True):
            if line is _DELIM:
                section = None
                continue
            if section is None:
                section = line.rstrip(b"\n")
                continue
            if section == b"shallow-info":
                kind, _, oid = line.rstrip(b"\n").partition(b" ")
                if kind == b"shallow" and _OID.match(oid):
                    shallow.add(oid.decode())
            elif section == b"packfile":
                band, data = line[:1], line[1:]
                if band == b"\x01":
                    pack += data
                elif band == b"\x03":
                    raise SourceUnavailable(f"{self.what}: the git server failed: "
                                            f"{data[:200].decode('utf-8', 'replace').strip()}", repo_id=self.repo_id)
        if not pack:
            raise SourceUnavailable(f"{self.what}: the git fetch answered no pack", repo_id=self.repo_id)
        try:
            parents = commit_parents_of_pack(bytes(pack))
        except ValueError as e:
            raise SourceUnavailable(f"{self.what}: malformed git pack: {e}", repo_id=self.repo_id) from e
        return Fetched(parents, frozenset(shallow))

    def _command(self, command: str, args: Sequence[str], *, max_bytes: int,
                 sections: bool = False) -> Iterator[bytes]:
        caps = [f"command={command}"]
        if "agent" in self.capabilities:
            caps.append("agent=hubwatch")
        if "object-format" in self.capabilities:
            caps.append("object-format=sha1")
        request = b"".join(pkt(c + "\n") for c in caps) + b"0001" + b"".join(pkt(a + "\n") for a in args) + b"0000"
        status, _, body, _ = self.http.git_request(
            "POST", f"{self.url}/git-upload-pack", body=request, max_bytes=max_bytes, what=self.what,
            headers={"Git-Protocol": "version=2", "Content-Type": "application/x-git-upload-pack-request",
                     "Accept": "application/x-git-upload-pack-result"})
        if status >= 400:
            raise SourceUnavailable(f"{self.what}: git {command} answered {status}", repo_id=self.repo_id)
        try:
            for line in pkt_lines(body, keep_delim=sections):
                if line is None:
                    continue
                if line.startswith(b"ERR "):
                    raise SourceUnavailable(f"{self.what}: git {command}: "
                                            f"{line[4:204].decode('utf-8', 'replace').strip()}", repo_id=self.repo_id)
                yield line
        except ValueError as e:
            raise SourceUnavailable(f"{self.what}: malformed git answer to {command}: {e}",
                                    repo_id=self.repo_id) from e


# -- pkt-lines ---------------------------------------------------------------------------------
_DELIM = b"\x00delim"  # a marker object: compared by identity


def pkt(text: str) -> bytes:
    data = text.encode()
    return f"{len(data) + 4:04x}".encode() + data


def pkt_lines(data: bytes, *, keep_delim: bool = False) -> Iterator[bytes | None]:
    """The payloads of ``data``'s pkt-lines; None for a flush, :data:`_DELIM` for a delimiter
    when ``keep_delim`` (else None too). ValueError when it is not pkt-lines."""
    pos, end = 0, len(data)
    view = memoryview(data)
    while pos < end:
        head = bytes(view[pos : pos + 4])
        if not _HEX4.match(head):
            raise ValueError(f"bad pkt-line length at {pos}")
        size = int(head, 16)
        if size < 4:
            pos += 4
            if size == 1 and keep_delim:
                yield _DELIM
            else:
                yield None  # flush (0), delim (1), response end (2)
            continue
        if pos + size > end:
            raise ValueError("truncated pkt-line")
        yield bytes(view[pos + 4 : pos + size])
        pos += size


# -- packs ---------------------------------------------------------------------------------------
def commit_parents_of_pack(pack: bytes) -> dict[str, tuple[str, ...]]:
    """``sha -> parents`` of every commit object in ``pack`` (ValueError when it is malformed)."""
    return {oid: _parents(body) for oid, (kind, body) in read_pack(pack).items() if kind == _COMMIT}


def read_pack(pack: bytes) -> dict[str, tuple[int, bytes]]:
    """Every object of ``pack``: ``sha -> (type, content)``, deltas applied."""
    if len(pack) < 32 or pack[:4] != b"PACK" or int.from_bytes(pack[4:8], "big") not in (2, 3):
        raise ValueError("not a version 2 pack")
    if hashlib.sha1(memoryview(pack)[:-20]).digest() != pack[-20:]:
        raise ValueError("checksum mismatch")
    count = int.from_bytes(pack[8:12], "big")
    end = len(pack) - 20
    view = memoryview(pack)
    at_offset: dict[int, tuple[int, bytes]] = {}
    by_oid: dict[bytes, tuple[int, bytes]] = {}
    waiting: list[tuple[bytes, bytes]] = []  # REF deltas whose base came later
    budget = [MAX_INFLATED_BYTES]
    pos = 12
    for _ in range(count):
        start = pos
        kind, size, pos = _object_header(pack, pos, end)
        if kind == _OFS_DELTA:
            back, pos = _offset(pack, pos, end)
            data, pos = _inflate(view, pos, end, size, budget)
            base = at_offset.get(start - back)
            if base is None:
                raise ValueError(f"delta at {start} has no base")
            obj = (base[0], _apply_delta(base[1], data, budget))
        elif kind == _REF_DELTA:
            base_oid = pack[pos : pos + 20]
            pos += 20
            data, pos = _inflate(view, pos, end, size, budget)
            if base_oid not in by_oid:
                waiting.append((base_oid, data))
                continue
            base = by_oid[base_oid]
            obj = (base[0], _apply_delta(base[1], data, budget))
        elif kind in _TYPE_NAMES:
            data, pos = _inflate(view, pos, end, size, budget)
            obj = (kind, data)
        else:
            raise ValueError(f"object type {kind} at {start}")
        at_offset[start] = obj
        by_oid[_oid(*obj)] = obj
    while waiting:  # bases that came after their deltas
        left = [(b, d) for b, d in waiting if b not in by_oid]
        if len(left) == len(waiting):
            raise ValueError("delta with no base in the pack")
        for base_oid, data in waiting:
            if base_oid in by_oid:
                base = by_oid[base_oid]
                obj = (base[0], _apply_delta(base[1], data, budget))
                by_oid[_oid(*obj)] = obj
        waiting = left
    if pos != end:
        raise ValueError("trailing bytes after the last object")
    return {oid.hex(): obj for oid, obj in by_oid.items()}


def _object_header(pack: bytes, pos: int, end: int) -> tuple[int, int, int]:
    if pos >= end:
        raise ValueError("truncated pack")
    c = pack[pos]
    pos += 1
    kind, size, shift = (c >> 4) & 7, c & 15, 4
    while c & 0x80:
        if pos >= end or shift > 60:
            raise ValueError("bad object header")
        c = pack[pos]
        pos += 1
        size |= (c & 0x7F) << shift
        shift += 7
    if size > MAX_OBJECT_BYTES:
        raise ValueError(f"an object of {size} bytes, over {MAX_OBJECT_BYTES}")
    return kind, size, pos


def _offset(pack: bytes, pos: int, end: int) -> tuple[int, int]:
    if pos >= end:
        raise ValueError("truncated delta offset")
    c = pack[pos]
    pos += 1
    value = c & 0x7F
    while c & 0x80:
        if pos >= end or value > 1 << 56:
            raise ValueError("bad delta offset")
        c = pack[pos]
        pos += 1
        value = ((value + 1) << 7) | (c & 0x7F)
    return value, pos


def _inflate(view: memoryview, pos: int, end: int, size: int, budget: list[int]) -> tuple[bytes, int]:
    """One zlib stream from ``pos``: its ``size`` bytes, and where the next object starts."""
    budget[0] -= size
    if budget[0] < 0:
        raise ValueError(f"objects of over {MAX_INFLATED_BYTES} bytes in all")
    d = zlib.decompressobj()
    out: list[bytes] = []
    got, fed, chunk = 0, pos, size + 64
    try:
        while not d.eof:
            if fed >= end:
                raise ValueError("truncated object")
            piece = view[fed : min(end, fed + chunk)]
            fed += len(piece)
            data = d.decompress(piece, size + 1 - got)
            got += len(data)
            out.append(data)
            if got > size:  # the output cap (one byte over the declared size) was reached
                raise ValueError("object larger than declared")
            chunk *= 2
    except zlib.error as e:
        raise ValueError(f"zlib: {e}") from None
    if got != size:
        raise ValueError(f"object of {got} bytes, declared {size}")
    return b"".join(out), fed - len(d.unused_data)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("bad delta size")
        c = data[pos]
        pos += 1
        value |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return value, pos


def _apply_delta(base: bytes, delta: bytes, budget: list[int]) -> bytes:
    src, pos = _varint(delta, 0)
    dst, pos = _varint(delta, pos)
    if src != len(base):
        raise ValueError("delta base size mismatch")
    if dst > MAX_OBJECT_BYTES:
        raise ValueError(f"an object of {dst} bytes, over {MAX_OBJECT_BYTES}")
    budget[0] -= dst
    if budget[0] < 0:
        raise ValueError(f"objects of over {MAX_INFLATED_BYTES} bytes in all")
    out = bytearray()
    n = len(delta)
    while pos < n:
        op = delta[pos]
        pos += 1
        if op & 0x80:  # copy from the base
            offset = length = 0
            for i in range(4):
                if op & (1 << i):
                    if pos >= n:
                        raise ValueError("truncated delta")
                    offset |= delta[pos] << (8 * i)
                    pos += 1
            for i in range(3):
                if op & (0x10 << i):
                    if pos >= n:
                        raise ValueError("truncated delta")
                    length |= delta[pos] << (8 * i)
                    pos += 1
            length = length or 0x10000
            if offset + length > len(base):
                raise ValueError("delta copies past its base")
            out += base[offset : offset + length]
        elif op:  # insert literal bytes
            if pos + op > n:
                raise ValueError("truncated delta")
            out += delta[pos : pos + op]
            pos += op
        else:
            raise ValueError("reserved delta opcode")
        if len(out) > dst:
            raise ValueError("delta result larger than declared")
    if len(out) != dst:
        raise ValueError("delta result size mismatch")
    return bytes(out)


def _oid(kind: int, body: bytes) -> bytes:
    h = hashlib.sha1(_TYPE_NAMES[kind] + b" " + str(len(body)).encode() + b"\0")
    h.update(body)
    return h.digest()


def _parents(body: bytes) -> tuple[str, ...]:
    """A commit object's ``parent`` headers, in order (the header ends at the first empty line)."""
    out: list[str] = []
    for line in body.split(b"\n\n", 1)[0].split(b"\n"):
        if line.startswith(b"parent "):
            oid = line[7:].strip()
            if not _OID.match(oid):
                raise ValueError("malformed parent line")
            out.append(oid.decode())
    return tuple(out)
