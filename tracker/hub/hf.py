"""Stage 1 (source): a :class:`~tracker.hub.interface.HubSource` over the Hub's HTTP API.

``resolve_head`` asks what ``HfApi.model_info(revision=branch, expand=["sha"])`` asks: one GET
of ``/api/models/{id}/revision/{branch}?expand=sha``, the cheapest "anything new?" check.
Every request, that one included, goes through :class:`tracker.hub._hfhttp.HubHttp` with
huggingface_hub's headers (token, user agent): its session bounds each read, not a call, so a
trickling server could hold a head check for minutes (issue 10); its paginated calls have no
timeout and retry with long sleeps (hub-api.md §3); ``hf_hub_download`` silently serves a
cached copy of a vanished repo (§11). Commits are paged only until a known sha. Any endpoint
works (a mirror, the test emulator): ``endpoint=``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from huggingface_hub import constants
from huggingface_hub.utils import build_hf_headers, validate_repo_id

from tracker import __version__
from tracker.errors import EntryNotFound, SourceUnavailable, TooLarge
from tracker.hub._hferrors import clean
from tracker.hub._hfgit import GitNotServed, commit_parents
from tracker.hub._hfhttp import BodyTooLarge, HubHttp
from tracker.hub.connections import HubConnections
from tracker.hub.interface import CommitListing
from tracker.model import CommitInfo, FileEntry

log = logging.getLogger("hubwatch.hub")
_SHA = re.compile(r"^[0-9a-f]{40}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
PATHS_PER_REQUEST = 100  # paths-info takes a form of paths; keep each request small


class HfSource:
    """Read a Hub model repo (metadata, small files, safetensors headers) without its weights."""

    def __init__(
        self,
        repo_id: str,
        *,
        endpoint: str | None = None,
        token: str | None = None,
        timeout: float = 30.0,
        connections: HubConnections | None = None,
    ) -> None:
        """``connections``: a pool shared with other sources (a daemon's); else one of its own."""
        validate_repo_id(repo_id)  # HFValidationError (a ValueError) before any request
        self._repo_id = repo_id
        self._endpoint = (endpoint or constants.ENDPOINT).rstrip("/")
        self._timeout = timeout
        self._connections = connections
        headers = build_hf_headers(token=token, library_name="hubwatch", library_version=__version__)
        headers["Accept-Encoding"] = "identity"  # sizes and ranges are about the stored bytes
        # the token actually sent (maybe implicit, from huggingface_hub's defaults): scrubbed from
        # every server message we put into an exception
        self._secret = headers.get("authorization", "").removeprefix("Bearer ") or token
        self._headers = headers
        self._client: HubHttp | None = None  # built on first use
        self._renamed_to: str | None = None

    @property
    def _http(self) -> HubHttp:
        if self._client is None:
            self._client = HubHttp(
                self._endpoint, self._headers, timeout=self._timeout, repo_id=self._repo_id, secret=self._secret,
                connections=self._connections,
            )
        return self._client

    # -- protocol --------------------------------------------------------------------------
    @property
    def repo_id(self) -> str:
        return self._repo_id

    @property
    def web_url(self) -> str:
        return f"{self._endpoint}/{self._renamed_to or self._repo_id}"  # renamed: the new page

    def resolve_head(self, branch: str) -> str:
        """The branch's head sha: one request, within one wall-clock deadline. Errors are the
        Hub's (401/404 RepoNotFound, 403 GatedRepo, 404 RevisionNotFound, 429 RateLimited with
        its wait) as :mod:`tracker.errors`; the token never appears in a message."""
        what = f"{self._repo_id}: head of {branch}"
        url = f"{self._endpoint}/api/models/{self._repo_id}/revision/{quote(branch, safe='')}?expand=sha"
        info = self._http.get_small_json(url, what=what, revision=branch)
        self._note_id(info.get("id") if isinstance(info, dict) else None)
        sha = info.get("sha") if isinstance(info, dict) else None
        if not isinstance(sha, str) or not _SHA.match(sha):
            raise SourceUnavailable(f"{what}: no commit sha in the answer", repo_id=self._repo_id)
        return sha

    def list_commits(self, branch: str, *, stop_at: Collection[str] = ()) -> CommitListing:
        stop = set(stop_at)
        url = f"{self._endpoint}/api/models/{self._repo_id}/commits/{quote(branch, safe='')}"
        items: list[dict[str, Any]] = []
        boundary: str | None = None
        what = f"{self._repo_id}: commits of {branch}"
        for page in self._http.get_pages(url, what=what, revision=branch):
            for item in page:
                sha = item.get("id") if isinstance(item, dict) else None
                if not isinstance(sha, str) or not _SHA.match(sha):
                    raise SourceUnavailable(f"{what}: malformed commit item", repo_id=self._repo_id)
                if sha in stop:
                    boundary = sha
                    break
                items.append(item)
            if boundary is not None:
                break
        real = self._parents(branch, [str(item["id"]) for item in items], what) if items else None
        commits = []
        for i, item in enumerate(items):
            if real is not None:
                parents = real[item["id"]]
            else:  # no git to ask: the next listed commit, exact on linear history only
                parent = items[i + 1]["id"] if i + 1 < len(items) else boundary
                parents = (parent,) if parent else ()
            commits.append(_commit(item, parents, what))
        return CommitListing(tuple(commits), reached_known=boundary is not None)

    def list_files(self, revision: str) -> tuple[FileEntry, ...]:
        url = f"{self._endpoint}/api/models/{self._repo_id}/tree/{quote(revision, safe='')}"
        what = f"{self._repo_id}: files of {revision[:12]}"
        entries = []
        for page in self._http.get_pages(
            url, what=what, revision=revision, params={"recursive": "true", "expand": "false"}
        ):
            for item in page:
                if isinstance(item, dict) and item.get("type") == "file":
                    entries.append(_file(item, what))
        return tuple(sorted(entries, key=lambda e: e.path))

    def read_file(self, revision: str, path: str, *, max_bytes: int) -> bytes:
        what = f"{self._repo_id}: {path}@{revision[:12]}"
        try:
            r, body = self._http.get_bytes(
                self._resolve_url(revision, path),
                what=what,
                revision=revision,
                max_bytes=max_bytes,
                not_found=EntryNotFound,
            )
        except BodyTooLarge as e:
            size = f"{e.size} bytes" if e.size is not None else "more bytes"
            raise TooLarge(
                f"{what} is {size} (cap {max_bytes})", repo_id=self._repo_id, revision=revision
            ) from e
        if r.status_code != 200:
            raise SourceUnavailable(
                f"{what}: unexpected HTTP {r.status_code}", repo_id=self._repo_id
            )
        return body

    def read_range(self, revision: str, path: str, start: int, length: int) -> bytes:
        if start < 0 or length < 0:
            raise ValueError("start and length must be >= 0")
        if length == 0:
            return b""
        what = f"{self._repo_id}: {path}@{revision[:12]} bytes {start}+{length}"
        url = self._resolve_url(revision, path)
        try:
            r, body = self._http.get_bytes(
                url,
                what=what,
                revision=revision,
                max_bytes=start + length,
                headers={"Range": f"bytes={start}-{start + length - 1}"},
                stop_after=start + length,
                not_found=EntryNotFound,
                empty_on=(416,),
            )  # 416: start at or past the end
        except BodyTooLarge as e:
            raise SourceUnavailable(
                f"{what}: the server sent more than was asked", repo_id=self._repo_id
            ) from e
        if r.status_code == 416:
            return b""
        if r.status_code == 206:
            first = r.headers.get("content-range", "").removeprefix("bytes ").split("-", 1)[0]
            if first.strip() != str(start):
                raise SourceUnavailable(f"{what}: wrong Content-Range", repo_id=self._repo_id)
            return body[:length]
        if (
            r.status_code == 200
        ):  # Range ignored: we read from the start and stopped after the slice
            return body[start : start + length]
        raise SourceUnavailable(f"{what}: unexpected HTTP {r.status_code}", repo_id=self._repo_id)

    def file_security(self, revision: str, paths: Collection[str]) -> dict[str, dict[str, Any]]:
        url = f"{self._endpoint}/api/models/{self._repo_id}/paths-info/{quote(revision, safe='')}"
        what = f"{self._repo_id}: security status at {revision[:12]}"
        wanted, out = sorted(set(paths)), {}
        for i in range(0, len(wanted), PATHS_PER_REQUEST):
            form = [("paths", p) for p in wanted[i : i + PATHS_PER_REQUEST]] + [("expand", "true")]
            items = self._http.post_form_json(url, form, what=what, revision=revision)
            for item in items if isinstance(items, list) else []:
                status = item.get("securityFileStatus") if isinstance(item, dict) else None
                if isinstance(status, dict) and item.get("path") in wanted:
                    out[str(item["path"])] = status
        return out

    def created_at(self) -> datetime | None:
        what = f"{self._repo_id}: creation date"
        info = self._http.get_json(f"{self._endpoint}/api/models/{self._repo_id}", what=what,
                                   params={"expand": "createdAt"})
        self._note_id(info.get("id") if isinstance(info, dict) else None)
        raw = info.get("createdAt") if isinstance(info, dict) else None
        try:
            return datetime.fromisoformat(str(raw).replace("Z", "+00:00")).astimezone(UTC) if raw else None
        except ValueError:
            raise SourceUnavailable(f"{what}: malformed createdAt", repo_id=self._repo_id) from None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def __enter__(self) -> HfSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"HfSource({self._repo_id!r}, endpoint={self._endpoint!r})"

    def renamed_to(self) -> str | None:
        return self._renamed_to

    # -- internals ---------------------------------------------------------------------------
    def _note_id(self, served: object) -> None:
        """The id the Hub answered under: another one (not just other letter case) means the
        repo was renamed and the Hub redirected us (a 307, followed by the client)."""
        if isinstance(served, str) and served.lower() != self._repo_id.lower():
            try:
                validate_repo_id(served)
            except ValueError:
                return
            self._renamed_to = served

    def _parents(self, branch: str, shas: list[str], what: str) -> dict[str, tuple[str, ...]] | None:
        """The listed commits' parents from the git protocol (the listing has none), or None
        where this endpoint serves no git for the repo (a mirror of the API alone)."""
        try:
            return commit_parents(f"{self._endpoint}/{self._repo_id}", branch, shas, token=self._secret,
                                  timeout=self._timeout, what=what, repo_id=self._repo_id, http=self._http)
        except GitNotServed as e:
            log.warning("%s: no git protocol at %s (%s); parents taken from the listing order",
                        self._repo_id, self._endpoint, clean(str(e), self._secret))
            return None

    def _resolve_url(self, revision: str, path: str) -> str:
        return f"{self._endpoint}/{self._repo_id}/resolve/{quote(revision, safe='')}/{quote(path)}"


def _commit(item: dict[str, Any], parents: tuple[str, ...], what: str) -> CommitInfo:
    try:
        date = _date(item.get("date"))
        authors = tuple(
            str(a["user"])
            for a in item.get("authors") or []
            if isinstance(a, dict) and a.get("user")
        )
        return CommitInfo(
            item["id"],
            parents,
            date,
            str(item.get("title") or "").strip(),
            str(item.get("message") or "").strip(),
            authors,
        )
    except (KeyError, TypeError, ValueError) as e:
        raise SourceUnavailable(f"{what}: malformed commit {item.get('id')}") from e


def _date(value: object) -> datetime:
    """A commit's date; one the Hub prints that does not parse (a commit dated past year 9999)
    is the epoch, so the commit is still read: its date must not stop the history at it."""
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(UTC)
    except (ValueError, OverflowError):
        return datetime.fromtimestamp(0, UTC)


def _file(item: dict[str, Any], what: str) -> FileEntry:
    try:
        path, size, oid = str(item["path"]), int(item["size"]), str(item["oid"])
        lfs = item.get("lfs")
        sha256 = lfs.get("oid") if isinstance(lfs, dict) else None
        if sha256 is not None and not _SHA256.match(str(sha256)):
            raise ValueError("bad lfs oid")
        if isinstance(lfs, dict) and lfs.get("size") is not None:
            size = int(lfs["size"])
        return FileEntry(path, size, oid, sha256)
    except (KeyError, TypeError, ValueError) as e:
        raise SourceUnavailable(f"{what}: malformed tree item") from e
