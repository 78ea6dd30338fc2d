"""Hub emulator: the API subset of hub-api.md §18, as functions from a parsed request to a Response.

Paths are split *before* percent-decoding (a revision or folder arrives as ``refs%2Fpr%2F1``,
the repo's ``/`` literal). Every error carries ``X-Error-Code`` (the client maps errors by it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, unquote, urlencode

from tests.hubemu.gitstore import EmuRepo, Entry, iso

if TYPE_CHECKING:
    from tests.hubemu.server import HubEmulator, RepoState


@dataclass
class Response:
    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""


@dataclass
class Request:
    method: str
    route: str
    repo: str | None
    args: dict[str, str]
    query: dict[str, list[str]]
    base: str  # scheme://host:port the client used (for absolute Link URLs)
    raw_path: str
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    honour_range: bool = True


class HubError(Exception):
    """An error answer: status + X-Error-Code (+ X-Repo-Commit for EntryNotFound)."""

    def __init__(self, status: int, code: str, message: str, commit: str | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.commit = status, code, message, commit

    def response(self) -> Response:
        headers = [
            ("X-Error-Code", self.code),
            ("X-Error-Message", self.message),
            ("Content-Type", "application/json"),
        ]
        if self.commit:
            headers.append(("X-Repo-Commit", self.commit))
        return Response(self.status, headers, json.dumps({"error": self.message}).encode())


def parse_route(path: str) -> tuple[str, str | None, dict[str, str]]:
    """Raw request path -> (route name, repo id, route args). Unknown paths -> ("unknown", None, {})."""
    parts = path.split("/")[1:]
    if parts[:2] == ["api", "agent-harnesses"]:
        return "agent", None, {}
    if parts == ["api", "models"]:
        return "list_models", None, {}
    if len(parts) >= 4 and parts[:2] == ["api", "models"]:
        repo = f"{unquote(parts[2])}/{unquote(parts[3])}"
        rest = parts[4:]
        if not rest:
            return "model_info", repo, {}
        kind, tail = rest[0], rest[1:]
        if kind == "revision" and tail:
            return "model_info", repo, {"rev": unquote("/".join(tail))}
        if kind == "refs" and not tail:
            return "refs", repo, {}
        if kind == "commits":
            return "commits", repo, {"rev": unquote("/".join(tail)) or "main"}
        if kind == "tree" and tail:
            return (
                "tree",
                repo,
                {"rev": unquote(tail[0]), "folder": unquote("/".join(tail[1:])).strip("/")},
            )
        if kind == "paths-info" and tail:
            return "paths_info", repo, {"rev": unquote("/".join(tail))}
    git_route = {("info", "refs"): "git_refs", ("git-upload-pack",): "git_upload_pack"}.get(tuple(parts[2:]))
    if git_route and len(parts) >= 3:  # git smart HTTP, with or without the ".git" suffix
        return git_route, f"{unquote(parts[0])}/{unquote(parts[1]).removesuffix('.git')}", {}
    if len(parts) >= 5 and parts[2] == "resolve":
        repo = f"{unquote(parts[0])}/{unquote(parts[1])}"
        return (
            "resolve",
            repo,
            {"rev": unquote(parts[3]), "path": "/".join(unquote(p) for p in parts[4:])},
        )
    if len(parts) == 5 and parts[:2] == ["_cdn", "lfs"]:
        return "cdn", f"{unquote(parts[2])}/{unquote(parts[3])}", {"sha256": parts[4]}
    return "unknown", None, {}


def _json(data: Any, extra: list[tuple[str, str]] | None = None) -> Response:
    return Response(
        200, [("Content-Type", "application/json"), *(extra or [])], json.dumps(data).encode()
    )


def _flag(req: Request, name: str) -> bool:
    return req.query.get(name, ["false"])[-1].lower() in ("1", "true")


def _page(req: Request, items: Any, size: int) -> Response:
    """One page of ``items`` from ``?cursor=`` with an absolute ``Link: rel="next"``."""
    start = int(req.query.get("cursor", ["0"])[-1] or 0)
    chunk = items[start : start + size]
    extra = []
    if start + size < len(items):
        q = {k: v for k, v in req.query.items() if k != "cursor"}
        q["cursor"] = [str(start + size)]
        url = f"{req.base}{req.raw_path}?{urlencode(q, doseq=True)}"
        extra.append(("Link", f'<{url}>; rel="next"'))
    return _json(chunk, extra)


def _commit(state: RepoState, rev: str) -> str:
    sha = state.git.resolve(rev)
    if sha is None:
        raise HubError(404, "RevisionNotFound", f"Invalid rev id: {rev}")
    return sha


#: What the Hub reports for a file its scanners have not flagged (expand=true only).
UNFLAGGED = {"status": "safe", "avScan": {"status": "safe", "virusNames": None},
             "pickleImportScan": None}  # fmt: skip


def tree_item(
    e: Entry, git: EmuRepo | None = None, sha: str | None = None,
    security: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    item: dict[str, Any] = {"type": e.type, "oid": e.oid, "path": e.path}
    if e.type == "file":
        item["size"] = e.size
        if e.lfs_sha256:
            item["lfs"] = {"oid": e.lfs_sha256, "size": e.size, "pointerSize": e.pointer_size}
    else:
        item["size"] = 0
    if git is not None and sha is not None:
        last = git.last_commit(sha, e.path)
        if last:
            item["lastCommit"] = last
        if e.type == "file" and security is not None:
            item["securityFileStatus"] = security.get(e.lfs_sha256 or e.oid, UNFLAGGED)
    return item


MODEL_FIELDS = (
    "sha",
    "lastModified",
    "createdAt",
    "private",
    "gated",
    "disabled",
    "author",
    "tags",
    "downloads",
    "likes",
    "library_name",
    "siblings",
    "usedStorage",
)


def model_fields(
    state: RepoState, repo: str, sha: str, wanted: set[str] | None, blobs: bool
) -> dict[str, Any]:
    """A model_info body; ``wanted`` (from ``expand``) limits it to those fields plus id."""
    keys = set(wanted) if wanted is not None else set(MODEL_FIELDS)
    out: dict[str, Any] = {"_id": f"emu-{abs(hash(repo)) % 10**12:012d}", "id": repo}
    if wanted is None:
        out["modelId"] = repo
    files: list[Entry] | None = None
    if keys & {"siblings", "usedStorage"}:
        files = [e for e in state.git.tree(sha) or [] if e.type == "file"]
    values: dict[str, Any] = {
        "sha": lambda: sha,
        "lastModified": lambda: iso(state.git.commit_time(sha)),
        "createdAt": lambda: iso(state.created),
        "private": lambda: state.private,
        "gated": lambda: "manual" if state.gated else False,
        "disabled": lambda: False,
        "author": lambda: repo.split("/")[0],
        "tags": lambda: [],
        "downloads": lambda: 0,
        "likes": lambda: 0,
        "library_name": lambda: "transformers",
        "usedStorage": lambda: sum(e.size for e in files or []),
        "siblings": lambda: [_sibling(e, blobs) for e in files or []],
    }
    for k in MODEL_FIELDS:
        if k in keys:
            out[k] = values[k]()
    return out


def _sibling(e: Entry, blobs: bool) -> dict[str, Any]:
    s: dict[str, Any] = {"rfilename": e.path}
    if blobs:
        s["size"], s["blobId"] = e.size, e.oid
        if e.lfs_sha256:
            s["lfs"] = {"sha256": e.lfs_sha256, "size": e.size, "pointerSize": e.pointer_size}
    return s


def model_info(hub: HubEmulator, req: Request) -> Response:
    state = hub.state(req.repo)
    sha = _commit(state, req.args.get("rev", "main"))
    expand = req.query.get("expand")
    return _json(
        model_fields(
            state, req.repo or "", sha, set(expand) if expand else None, _flag(req, "blobs")
        )
    )


def refs(hub: HubEmulator, req: Request) -> Response:
    state = hub.state(req.repo)
    out: dict[str, list[dict[str, str]]] = {"branches": [], "converts": [], "tags": []}
    prs = _flag(req, "include_prs")
    if prs:
        out["pullRequests"] = []
    for name, sha in state.git.refs():
        for prefix, key in (
            ("refs/heads/", "branches"),
            ("refs/tags/", "tags"),
            ("refs/pr/", "pullRequests"),
        ):
            if name.startswith(prefix) and key in out:
                short = (
                    name[len(prefix) :] if key != "pullRequests" else "pr/" + name[len(prefix) :]
                )
                out[key].append({"name": short, "ref": name, "targetCommit": sha})
    return _json(out)


def commits(hub: HubEmulator, req: Request) -> Response:
    state = hub.state(req.repo)
    sha = _commit(state, req.args["rev"])
    return _page(req, state.git.commits(sha), hub.commits_page)


def tree(hub: HubEmulator, req: Request) -> Response:
    state = hub.state(req.repo)
    sha = _commit(state, req.args["rev"])
    folder = req.args.get("folder", "")
    entries = state.git.tree(sha, folder, recursive=_flag(req, "recursive"))
    if entries is None:
        raise HubError(404, "EntryNotFound", f"{folder} does not exist on {req.args['rev']}", sha)
    expand = _flag(req, "expand")
    size = hub.tree_page_expanded if expand else hub.tree_page
    start = int(req.query.get("cursor", ["0"])[-1] or 0)
    # expand=true is costly (one git log per entry): only the page being served gets it
    items = [
        tree_item(e, state.git if expand and start <= i < start + size else None, sha, hub.security)
        for i, e in enumerate(entries)
    ]
    return _page(req, items, size)


def paths_info(hub: HubEmulator, req: Request) -> Response:
    state = hub.state(req.repo)
    sha = _commit(state, req.args["rev"])
    form = parse_qs(req.body.decode("utf-8", "replace"))
    expand = form.get("expand", ["false"])[-1] == "true"
    items = []
    for p in form.get("paths", []):
        p = p.strip("/")
        e = state.git.entry(sha, p)
        if e is not None:
            items.append(tree_item(e, state.git if expand else None, sha, hub.security))
    return _json(items)


_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def byte_range(header: str | None, total: int) -> tuple[int, int] | str | None:
    """(first, last) inclusive for a satisfiable single range; None = no Range; "416" otherwise."""
    if not header:
        return None
    m = _RANGE.match(header.strip())
    if not m or (not m.group(1) and not m.group(2)):
        return None
    if not m.group(1):  # suffix: last n bytes
        n = int(m.group(2))
        return (max(0, total - n), total - 1) if n and total else "416"
    first = int(m.group(1))
    last = int(m.group(2)) if m.group(2) else total - 1
    if first >= total or last < first:
        return "416"
    return first, min(last, total - 1)


def serve_bytes(req: Request, data: bytes | Path, headers: list[tuple[str, str]]) -> Response:
    """200 with the body, or 206 + Content-Range for a Range request (HEAD: headers only).

    A ``Path`` (an LFS object) is read only where the range asks: a sparse multi-gigabyte
    shard costs its header's bytes, as on the Hub."""
    total = data.stat().st_size if isinstance(data, Path) else len(data)
    headers = [*headers, ("Accept-Ranges", "bytes"), ("Content-Type", "application/octet-stream")]
    r = byte_range(req.headers.get("range"), total) if req.honour_range else None
    if r == "416":
        return Response(416, [*headers, ("Content-Range", f"bytes */{total}")], b"")
    if isinstance(r, tuple):
        return Response(
            206,
            [*headers, ("Content-Range", f"bytes {r[0]}-{r[1]}/{total}")],
            _slice(data, r[0], r[1] + 1),
        )
    return Response(200, headers, data.read_bytes() if isinstance(data, Path) else data)


def _slice(data: bytes | Path, start: int, end: int) -> bytes:
    if not isinstance(data, Path):
        return data[start:end]
    with data.open("rb") as f:
        f.seek(start)
        return f.read(end - start)


def resolve(hub: HubEmulator, req: Request) -> Response:
    state = hub.state(req.repo, files=True)
    sha = _commit(state, req.args["rev"])
    path = req.args["path"]
    e = state.git.entry(sha, path)
    if e is None or e.type != "file":
        raise HubError(404, "EntryNotFound", f"{path} does not exist at {sha}", sha)
    headers = [("X-Repo-Commit", sha)]
    if not e.lfs_sha256:
        return serve_bytes(req, state.git.blob(e.oid), [*headers, ("ETag", f'"{e.oid}"')])
    headers += [
        ("ETag", f'"{e.lfs_sha256}"'),
        ("X-Linked-Etag", f'"{e.lfs_sha256}"'),
        ("X-Linked-Size", str(e.size)),
    ]
    if hub.lfs_redirect:
        loc = f"{hub.cdn_url}/_cdn/lfs/{quote(req.repo or '', safe='/')}/{e.lfs_sha256}"
        return Response(302, [*headers, ("Location", loc)], b"")
    obj = state.git.lfs_path(e.lfs_sha256)
    if req.method == "HEAD":  # metadata comes from the pointer; the object is not needed
        return Response(
            200, [*headers, ("Accept-Ranges", "bytes"), ("Content-Length", str(e.size))], b""
        )
    if not obj.is_file():
        raise HubError(
            410, "EntryNotFound", f"{path}: LFS object not available on this emulator", sha
        )
    return serve_bytes(req, obj, headers)


def cdn(hub: HubEmulator, req: Request) -> Response:
    state = hub.state(req.repo, files=True)
    sha256 = req.args["sha256"]
    obj = state.git.lfs_path(sha256) if re.fullmatch(r"[0-9a-f]{64}", sha256) else None
    if obj is None or not obj.is_file():
        raise HubError(410, "EntryNotFound", "LFS object not available on this emulator")
    return serve_bytes(req, obj, [("ETag", f'"{sha256}"')])


def list_models(hub: HubEmulator, req: Request) -> Response:
    author = req.query.get("author", [None])[-1]
    search = req.query.get("search", [None])[-1]
    sort = req.query.get("sort", [None])[-1]
    expand = req.query.get("expand")
    wanted = (
        set(expand) if expand else {"lastModified", "createdAt", "private", "downloads", "likes", "tags"}
    )
    rows = []
    for repo_id, state in hub.visible_repos():
        if (author and repo_id.split("/")[0] != author) or (search and search not in repo_id):
            continue
        sha = state.git.resolve("main")
        if sha is None:
            continue
        rows.append(((state.git.commit_time(sha), state.created), repo_id, state, sha))
    if sort in ("lastModified", "createdAt"):
        rows.sort(key=lambda r: r[0][0 if sort == "lastModified" else 1], reverse=True)
    limit = req.query.get("limit", [None])[-1]
    size = min(hub.models_page, int(limit)) if limit and limit.isdigit() else hub.models_page
    return _page(req, _Listed(rows, wanted), max(1, size))


class _Listed:
    """The listing's items, each built when its page is served (100,000 repos, 1,000 a page)."""

    def __init__(self, rows: list[tuple[Any, str, RepoState, str]], wanted: set[str]):
        self.rows, self.wanted = rows, wanted

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, window: slice) -> list[dict[str, Any]]:
        return [model_fields(state, repo_id, sha, self.wanted, False) for _, repo_id, state, sha in self.rows[window]]


def agent(hub: HubEmulator, req: Request) -> Response:
    return _json({"standardEnvVars": [], "harnesses": {}})


HANDLERS = {
    "model_info": model_info,
    "refs": refs,
    "commits": commits,
    "tree": tree,
    "paths_info": paths_info,
    "resolve": resolve,
    "cdn": cdn,
    "list_models": list_models,
    "agent": agent,
}
ALLOWED = {"paths_info": ("POST",), "resolve": ("GET", "HEAD"), "cdn": ("GET", "HEAD")}
