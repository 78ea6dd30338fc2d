"""Stage 8 (read): the HTML pages: tracked repos, a repo's history, a revision, a compare, an advisory.

Server-rendered Jinja2 over view objects (:mod:`tracker.api.page_models`), a little inline
CSS, no JavaScript and no asset from elsewhere. Everything shown comes from the store as it
was written by the pipeline: no page re-diffs or re-renders templates. Links are
root-relative (``root_path`` aware). Unknown things answer an HTML 404 page. The model
pages and the paste-a-config form are in :mod:`tracker.api.pages_model`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from storage.history_entries import KeptReader
from storage.records import RevisionRecord
from storage.store import Store, read_again_if_dropped
from tracker.api.history_views import history_html
from tracker.api.page_cache import PageCache
from tracker.api.page_models import (
    RevisionChoice,
    Urls,
    advisory_page,
    choices_of,
    compare_page,
    revision_page,
    when,
)
from tracker.api.renamed import moved_location, moved_path, route_path
from tracker.api.rest import cursor_value
from tracker.api.views import public_error
from tracker.config import Settings

TEMPLATES = Path(__file__).resolve().parent / "templates"
PAGE_SIZE, PAGE_MAX = 50, 500
CHOICES = 300  # revisions offered by the compare picker
COMPARE_MAX = 200  # revisions one compare page lists

# the templates ship with the package: not checked for changes on disk at every render
# (a stat of each template a page extends, issue 17)
ENV = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(default=True),
                  trim_blocks=True, lstrip_blocks=True, auto_reload=False)


def render(request: Request, template: str, code: int = 200, **ctx: Any) -> HTMLResponse:
    root = request.scope.get("root_path", "").rstrip("/")
    return HTMLResponse(ENV.get_template(template).render(root=root, **ctx), status_code=code)


def error_page(request: Request, code: int, message: str) -> HTMLResponse:
    return render(request, "error.html.j2", code, status=code, message=message)


def urls(request: Request) -> Urls:
    return Urls(request.scope.get("root_path", "").rstrip("/"))


def child_of(store: Store, repo_id: str, sha: str) -> str | None:
    """The stored revision whose first parent is ``sha`` (the next one on the branch)."""
    for other, parents in store.commit_graph(repo_id).items():
        if parents and parents[0] == sha:
            return other
    return None


def first_parent_range(store: Store, repo_id: str, base: str, head: str) -> tuple[list[str], bool]:
    """Shas after ``base`` up to ``head`` along first parents (newest first); True when base was reached."""
    graph = store.commit_graph(repo_id)
    out: list[str] = []
    current: str | None = head
    while current is not None and current != base and len(out) <= len(graph):
        out.append(current)
        parents = graph.get(current) or ()
        current = parents[0] if parents else None
    return out, current == base


def _history_html(reader: KeptReader, u: Urls, repo_id: str, before: int | None, size: int) -> Markup:
    """The repo page's compare form (the page's revisions suggested), history table and pager."""
    return _history_of(u, repo_id, before, size, reader.page_rows(repo_id, limit=size + 1, before_seq=before))


def _history_of(u: Urls, repo_id: str, before: int | None, size: int, revs: Sequence[Any]) -> Markup:
    """:func:`_history_html` of the page's ``size + 1`` rows, read."""
    next_url = None
    if len(revs) > size and size:
        next_url = u.repo(repo_id) + "?" + urlencode({"cursor": revs[size - 1][0], "limit": size})
    return history_html(u.repo(repo_id), f"{u.root}/advisories", revs[:size], cursor=before, next_url=next_url,
                        first_url=u.repo(repo_id))


def page_query(query: Mapping[str, str]) -> tuple[int | None, int] | None:
    """A repo page's ``(cursor, size)`` from its query, read here rather than by FastAPI's
    parameter machinery (a third of a computed page's CPU with the path's, issue 17): a cursor
    that is not one is the first page; None when ``limit`` is not a whole number from 1."""
    limit = query.get("limit", str(PAGE_SIZE)).strip()
    size = int(limit) if limit.isascii() and limit.isdigit() and len(limit) < 4000 else 0  # int()'s digit cap
    cursor = query.get("cursor")
    return (cursor_value(cursor[:20] if cursor else None), min(size, PAGE_MAX)) if size >= 1 else None


@read_again_if_dropped
def repo_page_html(store: Store, fragments: PageCache[Markup], repo_id: str, before: int | None, size: int,
                   root: str, on_loop: bool = False) -> tuple[str | None, str | None]:
    """A repo page as ``(HTML, None)``, ``(None, the id it moved to)`` for a former id, or
    ``(None, None)`` when not tracked. The compare form and the history part are rendered once
    per repo version (and cursor) and kept (issue 17); the rest (status, last poll) is read
    for each request. One connection: the repo with its version, the page if not kept
    (``on_loop``: see :meth:`storage.store.Store.history_reader`)."""
    u = Urls(root)
    with store.history_reader(on_loop=on_loop) as reader:
        history: Markup | None = None
        if not reader.reads_together or ("history", repo_id, before, size, u.root) in fragments:
            repo, probe = reader.repo_and_probe(repo_id)  # then the page, where not kept at this version
        else:  # never kept, so a miss at any version: the repo and the page in one statement
            repo, probe, revs = reader.repo_and_page_rows(repo_id, before_seq=before, limit=size + 1)
            if repo is not None:
                history = _history_of(u, repo.id, before, size, revs)
        if probe.moved_to is not None or repo is None:
            return None, probe.moved_to
        key, version = ("history", repo.id, before, size, u.root), probe.version
        made = history is not None
        if history is None:
            history = fragments.get(key, version) if version is not None else None
        if history is None:
            history, made = _history_html(reader, u, repo.id, before, size), True
        if made and version is not None:
            fragments.put(key, version, history, 2 * len(history) + 200)
    return ENV.get_template("repo.html.j2").render(
        root=root, repo=repo, last_error=public_error(repo.last_error_kind, repo.last_error),
        last_poll=when(repo.last_poll_at) if repo.last_poll_at else None, feed_url=u.feed(repo.id),
        badge_url=u.badge(repo.id), api_url=u.api_repo(repo.id) + "/revisions", model_url=u.model(repo.id),
        history_html=history), None


def pages_router(store: Store, settings: Settings) -> APIRouter:
    from tracker.api.pages_model import model_router

    router = APIRouter(include_in_schema=False)
    picker: PageCache[tuple[RevisionChoice, ...]] = PageCache(16 * 1024 * 1024)
    fragments: PageCache[Markup] = PageCache(64 * 1024 * 1024)  # rendered HTML, weighed as str

    def newest(repo_id: str) -> tuple[RevisionChoice, ...]:
        """The compare picker's options (the newest CHOICES revisions), kept per repo version:
        loading them was most of a page's cost (issue 17)."""
        version = store.history_version(repo_id)
        found = picker.get(repo_id, version) if version is not None else None
        if found is None:
            found = choices_of(store.history_choices(repo_id, limit=CHOICES))
            if version is not None:
                picker.put(repo_id, version, found, 300 * len(found))
        return found

    @router.get("/", response_class=HTMLResponse)
    def index(request: Request) -> HTMLResponse:
        u = urls(request)
        repos = [{
            "id": r.id, "status": r.status, "head": r.head_sha, "revisions": r.revisions,
            "last_poll": when(r.last_poll_at) if r.last_poll_at else None, "last_error": public_error(r.last_error_kind, r.last_error),
            "url": u.repo(r.id), "model_url": u.model(r.id),
            "head_url": u.revision(r.id, r.head_sha) if r.head_sha and r.revisions else None,
            "feed_url": u.feed(r.id), "badge_url": u.badge(r.id),
        } for r in store.list_repos()]
        advisories = [{
            "id": a.id, "severity": a.severity, "summary": a.record.get("summary", ""), "repo": a.repo_id,
            "modified": when(a.modified), "url": u.advisory(a.id),
        } for a in store.list_advisories(limit=20)]
        return render(request, "index.html.j2", repos=repos, advisories=advisories)

    @router.get("/repos/{org}/{name}", response_class=HTMLResponse, response_model=None)
    def repo_page(request: Request) -> HTMLResponse | RedirectResponse:
        """:func:`repo_page_html`; the path and query are read here (:func:`page_query`).
        :mod:`tracker.api.history_fast` answers most requests before they get here."""
        org, name = request.path_params["org"], request.path_params["name"]
        query = page_query(request.query_params)
        if query is None:
            return error_page(request, 400, "A page size (limit) is a whole number from 1.")
        html, moved_to = repo_page_html(store, fragments, f"{org}/{name}", *query,
                                        request.scope.get("root_path", "").rstrip("/"))
        if moved_to is not None:
            target = moved_path(route_path(request.scope), moved_to)
            return RedirectResponse(moved_location(request.scope, target), status_code=307)
        if html is None:
            return error_page(request, 404, f"{org}/{name} is not tracked.")
        return HTMLResponse(html)

    # after the two pages no model route's path can match, before those whose paths theirs
    # also match (/repos/{org}/{name}/{sha}, .../compare/{spec}): the repo page, the most
    # read, is matched without trying the model routes first (twice: FastAPI matches again
    # to handle, issue 17)
    router.include_router(model_router(store, settings))

    @router.get("/repos/{org}/{name}/compare", response_class=HTMLResponse, response_model=None)
    def compare_form(request: Request, org: str, name: str, base: str = Query("", max_length=64),
                     head: str = Query("", max_length=64)) -> HTMLResponse | RedirectResponse:
        repo = store.get_repo(f"{org}/{name}")
        if repo is None:
            return error_page(request, 404, f"{org}/{name} is not tracked.")
        base, head = base.strip(), head.strip()  # a pasted sha
        if not base or not head:
            return error_page(request, 400, "Pick two revisions to compare (base and head).")
        return RedirectResponse(urls(request).compare(repo.id, base, head), status_code=303)

    @router.get("/repos/{org}/{name}/compare/{spec}", response_class=HTMLResponse)
    def compare(request: Request, org: str, name: str, spec: str) -> HTMLResponse:
        repo = store.get_repo(f"{org}/{name}")
        if repo is None:
            return error_page(request, 404, f"{org}/{name} is not tracked.")
        base_ref, sep, head_ref = spec.partition("...")
        if not sep:
            return error_page(request, 400, "A compare names two revisions: BASE...HEAD.")
        base, head = store.get_revision(repo.id, base_ref), store.get_revision(repo.id, head_ref)
        if base is None or head is None:
            missing = base_ref if base is None else head_ref
            return error_page(request, 404, f"No stored revision {missing[:64]!r} of {repo.id} (or the prefix is ambiguous).")
        u = urls(request)
        shas, reached = first_parent_range(store, repo.id, base.sha, head.sha)
        note = ""
        if not reached:
            _back, back_ok = first_parent_range(store, repo.id, head.sha, base.sha)
            if back_ok:
                return error_page(request, 400, f"{head.sha[:12]} is older than {base.sha[:12]}: compare "
                                                f"{head.sha[:12]}...{base.sha[:12]} instead.")
            note = (f"{base.sha[:12]} is not an earlier revision of {head.sha[:12]} on this branch; listed are the "
                    "revisions that lead to the head.")
        if len(shas) > COMPARE_MAX:
            note = (note + " " if note else "") + f"Only the newest {COMPARE_MAX} of {len(shas)} revisions are listed."
            shas = shas[:COMPARE_MAX]
        between: list[RevisionRecord] = [r for r in (store.get_revision(repo.id, s) for s in shas) if r is not None]
        choices = newest(repo.id)
        view = compare_page(u, repo, base, head, between, choices, note)
        return render(request, "compare.html.j2", page=view)

    @router.get("/repos/{org}/{name}/{sha}", response_class=HTMLResponse)
    def revision(request: Request, org: str, name: str, sha: str) -> HTMLResponse:
        repo = store.get_repo(f"{org}/{name}")
        rev = store.get_revision(repo.id, sha) if repo is not None else None
        if repo is None or rev is None:
            return error_page(request, 404, f"No stored revision {sha[:64]!r} of {org}/{name}.")
        parent = store.get_revision(repo.id, rev.parent) if rev.parent else None
        plan = rev.plan or store.plan_at(repo.id, rev.seq)
        advisory_ok = bool(rev.advisory_id and store.get_advisory(rev.advisory_id))
        choices = newest(repo.id)
        view = revision_page(urls(request), repo, rev, plan=plan, advisory_ok=advisory_ok,
                             parent_stored=parent is not None, child=child_of(store, repo.id, rev.sha),
                             choices=choices)
        return render(request, "revision.html.j2", page=view)

    @router.get("/advisories/{advisory_id}", response_class=HTMLResponse)
    def advisory(request: Request, advisory_id: str) -> HTMLResponse:
        adv = store.get_advisory(advisory_id)
        if adv is None:
            return error_page(request, 404, f"No advisory {advisory_id[:80]!r}.")
        repo = store.get_repo(adv.repo_id)
        stored = set(store.commit_graph(adv.repo_id)) if repo is not None else set()
        return render(request, "advisory.html.j2", page=advisory_page(urls(request), adv, repo, stored))

    return router
