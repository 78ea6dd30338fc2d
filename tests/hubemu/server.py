"""Hub emulator: a stdlib ThreadingHTTPServer serving git repos as the Hugging Face Hub does.

    with HubEmulator() as hub:
        hub.add_repo("org/name", git_dir)          # any time, also while running
        HfApi(endpoint=hub.url).model_info("org/name")
        hub.count("model_info")                    # requests per route (and bytes_sent)
        hub.faults.add("rate_limit", route="commits", retry_after=3)

Starts in milliseconds, binds 127.0.0.1 on a free port, and stops cleanly: hung handlers
(the "hang" fault) are woken by ``stop()``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path

from tests.hubemu.faults import FaultSet
from tests.hubemu.gitstore import EmuRepo, git
from tests.hubemu.handler import Handler
from tests.hubemu.routes import HubError


@dataclass
class RepoState:
    git: EmuRepo
    gated: bool = False
    private: bool = False
    created: float = 0  # createdAt, unix time (the Hub's own clock: set when the repo is made)


@dataclass
class RequestRecord:
    """One request, recorded when it arrives (so counts never lag the client); the status and
    byte count are filled in once the answer is written."""

    method: str
    route: str
    repo: str | None
    path: str
    status: int = 0  # stays 0 when no response was sent (hang, reset)
    bytes_sent: int = 0  # status line + headers + body actually written
    fault: str | None = None
    headers: dict[str, str] = field(default_factory=dict)  # request headers, lower-case names
    at: float = field(default_factory=time.time)  # wall clock on arrival (comparable with the database's)
    body: bytes = b""  # a POST's form (paths-info), so a benchmark can replay the request


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, hub: HubEmulator, addr: tuple[str, int]):
        self.hub = hub
        super().__init__(addr, Handler)

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # client gone (timeouts, resets): expected in fault tests


class HubEmulator:
    """The Hub API subset of hub-api.md §18 over git repos, with request counting and faults."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        commits_page: int = 50,
        tree_page: int = 1000,
        tree_page_expanded: int = 50,
        models_page: int = 1000,
        lfs_redirect: bool = False,
        cdn_host: str = "localhost",
        honour_range: bool = True,
        git_protocol: bool = True,
    ) -> None:
        self.commits_page = commits_page
        self.tree_page = tree_page
        self.tree_page_expanded = tree_page_expanded
        self.models_page = models_page
        self.lfs_redirect = lfs_redirect  # LFS files: 302 to cdn_url (another origin, same server)
        self.honour_range = honour_range  # False: answer Range requests with the whole file (200)
        self.git_protocol = git_protocol  # False: no git smart HTTP (a mirror of the API alone)
        self.faults = FaultSet()
        # securityFileStatus per content (LFS sha256 or git blob id), served with expand=true
        self.security: dict[str, dict[str, object]] = {}
        self.stopping = threading.Event()
        self._repos: dict[str, RepoState] = {}
        self._moved: dict[str, str] = {}  # renamed repos: old id -> new id (answered with 307)
        self._lock = threading.Lock()
        self._records: list[RequestRecord] = []
        self._inflight = 0
        self.internal_errors: list[str] = []  # exceptions raised by route code (emulator bugs)
        self._server = _Server(self, (host, port))
        self.port = self._server.server_address[1]
        self.url = f"http://{host}:{self.port}"
        self.cdn_url = f"http://{cdn_host}:{self.port}"  # another origin, same server
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> HubEmulator:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name="hubemu",
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> HubEmulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- repos ---------------------------------------------------------------------------------
    def add_repo(
        self, repo_id: str, git_dir: Path | str, *, gated: bool = False, private: bool = False,
        created: float | None = None,
    ) -> None:
        """Serve ``git_dir`` (bare or not) as model ``repo_id``; read live on every request.

        ``createdAt`` is ``created``, else the oldest root commit's time (a repo that always
        existed, as the corpus histories did)."""
        repo = EmuRepo(Path(git_dir))
        if created is None:
            roots = git(
                repo.path, "rev-list", "--max-parents=0", "--all", "--format=%ct", check=False
            ).split()
            created = min((int(x) for x in roots if x.isdigit()), default=0)
        with self._lock:
            self._repos[repo_id] = RepoState(repo, gated, private, created)

    def recreate_repo(self, repo_id: str, git_dir: Path | str) -> None:
        """Delete ``repo_id`` and create it again from ``git_dir`` now (model namespace reuse):
        another history under the same name, ``createdAt`` the moment of re-creation."""
        self.remove_repo(repo_id)
        self.add_repo(repo_id, git_dir, created=time.time())

    def rename_repo(self, old: str, new: str) -> None:
        """Rename it, as the Hub does: every route of ``old`` answers 307 to the same path under
        ``new`` (API, downloads, git), until a repo is created under ``old`` again."""
        with self._lock:
            self._repos[new] = self._repos.pop(old)
            self._moved[old] = new
            for k, v in list(self._moved.items()):  # renamed twice: the first name follows too
                if v == old:
                    self._moved[k] = new

    def moved_to(self, repo_id: str | None) -> str | None:
        """Where a renamed repo lives now (None: not renamed, or its old name was taken again)."""
        with self._lock:
            if repo_id is None or repo_id in self._repos:
                return None
            return self._moved.get(repo_id)

    def remove_repo(self, repo_id: str) -> None:
        """Delete it: from now on every route answers 401 RepoNotFound, as the Hub does."""
        with self._lock:
            self._repos.pop(repo_id, None)

    def set_security(self, content: str, status: dict[str, object]) -> None:
        """What the Hub's scanners say of a file's content (its LFS sha256 or git blob id)."""
        self.security[content] = status

    def set_gated(self, repo_id: str, gated: bool = True) -> None:
        """Gate it: file downloads answer 403 GatedRepo (metadata stays public, as on the Hub)."""
        with self._lock:
            self._repos[repo_id].gated = gated

    def state(self, repo_id: str | None, *, files: bool = False) -> RepoState:
        with self._lock:
            state = self._repos.get(repo_id or "")
        if state is None or state.private:
            raise HubError(401, "RepoNotFound", f"Repository Not Found for url: {repo_id}")
        if files and state.gated:
            raise HubError(403, "GatedRepo", f"Access to model {repo_id} is restricted.")
        return state

    def visible_repos(self) -> list[tuple[str, RepoState]]:
        with self._lock:
            return [(k, v) for k, v in self._repos.items() if not v.private]

    # -- accounting ----------------------------------------------------------------------------
    @property
    def requests(self) -> list[RequestRecord]:
        with self._lock:
            return list(self._records)

    def _select(
        self, route: str | None, repo: str | None, method: str | None
    ) -> list[RequestRecord]:
        return [
            r
            for r in self.requests
            if (route is None or r.route == route)
            and (repo is None or r.repo == repo)
            and (method is None or r.method == method)
        ]

    def count(
        self, route: str | None = None, *, repo: str | None = None, method: str | None = None
    ) -> int:
        """Requests received (optionally of one route / repo / method)."""
        return len(self._select(route, repo, method))

    def bytes_sent(
        self, route: str | None = None, *, repo: str | None = None, method: str | None = None
    ) -> int:
        """Bytes written to clients: status lines, headers and bodies."""
        return sum(r.bytes_sent for r in self._select(route, repo, method))

    def summary(self) -> dict[str, dict[str, int]]:
        """{route: {"requests": n, "bytes": b}} since the last reset."""
        out: dict[str, dict[str, int]] = {}
        for r in self.requests:
            row = out.setdefault(r.route, {"requests": 0, "bytes": 0})
            row["requests"] += 1
            row["bytes"] += r.bytes_sent
        return out

    def reset_stats(self) -> None:
        with self._lock:
            self._records.clear()

    def begin(self, rec: RequestRecord) -> None:
        with self._lock:
            self._records.append(rec)
            self._inflight += 1

    def end(self) -> None:
        with self._lock:
            self._inflight -= 1

    def wait_idle(self, timeout: float = 2.0) -> bool:
        """Wait until no request is being answered (byte counts are final then)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self._inflight == 0:
                    return True
            time.sleep(0.005)
        return False
