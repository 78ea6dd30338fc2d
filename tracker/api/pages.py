"""Stage 8 (read): the HTML pages: tracked repos, a repo's history, a revision, an advisory.

Server-rendered Jinja2 with a little inline CSS and no JavaScript. Links are root-relative
(``root_path`` aware) and only point at pages and routes this app serves, plus the
advisory's external references. Unknown things answer an HTML 404 page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

from storage.store import Store
from tracker.api.page_views import markdown_blocks, plan_summary, view
from tracker.api.rest import cursor_value
from tracker.api.views import iso, public_error, revision_json
from tracker.config import Settings

TEMPLATES = Path(__file__).resolve().parent / "templates"
PAGE_SIZE, PAGE_MAX = 50, 500

_ENV = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(default=True),
                   trim_blocks=True, lstrip_blocks=True)


def pages_router(store: Store, settings: Settings) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    def page(request: Request, template: str, code: int = 200, **ctx: Any) -> HTMLResponse:
        root = request.scope.get("root_path", "").rstrip("/")
        html = _ENV.get_template(template).render(root=root, **ctx)
        return HTMLResponse(html, status_code=code)

    def not_found(request: Request, message: str) -> HTMLResponse:
        return page(request, "error.html.j2", 404, status=404, message=message)

    def urls(request: Request) -> _Urls:
        return _Urls(request.scope.get("root_path", "").rstrip("/"))

    @router.get("/", response_class=HTMLResponse)
    def index(request: Request) -> HTMLResponse:
        u = urls(request)
        repos = [{
            "id": r.id, "status": r.status, "head": r.head_sha, "revisions": r.revisions,
            "last_poll": iso(r.last_poll_at), "last_error": public_error(r.last_error_kind, r.last_error), "url": u.repo(r.id),
            "head_url": u.revision(r.id, r.head_sha) if r.head_sha and r.revisions else None,
            "feed_url": u.feed(r.id), "badge_url": u.badge(r.id),
        } for r in store.list_repos()]
        advisories = [{
            "id": a.id, "severity": a.severity, "summary": a.record.get("summary", ""), "repo": a.repo_id,
            "modified": iso(a.modified), "url": u.advisory(a.id),
        } for a in store.list_advisories(limit=20)]
        return page(request, "index.html.j2", repos=repos, advisories=advisories)

    @router.get("/repos/{org}/{name}", response_class=HTMLResponse)
    def repo_page(request: Request, org: str, name: str, cursor: str | None = Query(None, max_length=20),
                  limit: int = Query(PAGE_SIZE, ge=1)) -> HTMLResponse:
        repo = store.get_repo(f"{org}/{name}")
        if repo is None:
            return not_found(request, f"{org}/{name} is not tracked.")
        before = cursor_value(cursor)
        size = min(limit, PAGE_MAX)
        revs = store.history(repo.id, limit=size + 1, before_seq=before)
        u = urls(request)
        more = len(revs) > size
        rows = []
        for r in revs[:size]:
            doc = revision_json(r)
            doc.update(url=u.revision(repo.id, r.sha), reachable=r.reachable,
                       advisory_url=u.advisory(r.advisory_id) if r.advisory_id else None)
            rows.append(doc)
        next_url = None
        if more and rows:
            next_url = u.repo(repo.id) + "?" + urlencode({"cursor": revs[size - 1].seq, "limit": size})
        return page(request, "repo.html.j2", repo=repo, revisions=rows, cursor=before, next_url=next_url,
                    first_url=u.repo(repo.id), last_poll=iso(repo.last_poll_at), feed_url=u.feed(repo.id),
                    badge_url=u.badge(repo.id), api_url=u.api_repo(repo.id) + "/revisions")

    @router.get("/repos/{org}/{name}/{sha}", response_class=HTMLResponse)
    def revision_page(request: Request, org: str, name: str, sha: str) -> HTMLResponse:
        repo = store.get_repo(f"{org}/{name}")
        rev = store.get_revision(repo.id, sha) if repo is not None else None
        if repo is None or rev is None:
            return not_found(request, f"No stored revision {sha[:64]!r} of {org}/{name}.")
        u = urls(request)
        parent = store.get_revision(repo.id, rev.parent) if rev.parent else None
        plan = rev.plan or store.plan_at(repo.id, rev.seq)
        changes = [{
            "kind": c.kind.value, "path": c.path, "summary": c.summary, "topics": list(c.topics),
            "severity": c.severity.value if c.severity else None, "detail": view(dict(c.detail)) if c.detail else None,
        } for c in rev.changes]
        advisory_ok = bool(rev.advisory_id and store.get_advisory(rev.advisory_id))
        return page(
            request, "revision.html.j2", repo=repo, rev=rev, changes=changes, committed_at=iso(rev.committed_at),
            repo_url=u.repo(repo.id), parent_url=u.revision(repo.id, parent.sha) if parent else None,
            advisory_url=u.advisory(rev.advisory_id) if advisory_ok and rev.advisory_id else None,
            plan=plan_summary(plan), plan_inherited=rev.plan is None and plan is not None,
            plan_delta=view(rev.plan_delta) if rev.plan_delta else None,
            api_url=f"{u.api_repo(repo.id)}/revisions/{rev.sha}",
        )

    @router.get("/advisories/{advisory_id}", response_class=HTMLResponse)
    def advisory_page(request: Request, advisory_id: str) -> HTMLResponse:
        adv = store.get_advisory(advisory_id)
        if adv is None:
            return not_found(request, f"No advisory {advisory_id[:80]!r}.")
        u = urls(request)
        record = adv.record
        repo = store.get_repo(adv.repo_id)
        stored = repo is not None and store.get_revision(adv.repo_id, adv.sha) is not None
        refs = [r for r in record.get("references") or [] if isinstance(r, dict) and
                str(r.get("url", "")).startswith(("https://", "http://"))]
        return page(
            request, "advisory.html.j2", adv=adv, record=record, severity=adv.severity, references=refs,
            repo_url=u.repo(adv.repo_id) if repo is not None else None,
            revision_url=u.revision(adv.repo_id, adv.sha) if stored else None,
            json_url=f"{u.root}/v1/vulns/{quote(adv.id)}", details=markdown_blocks(str(record.get("details") or "")),
        )

    return router


class _Urls:
    """Root-relative URLs of the pages and routes the templates link to."""

    def __init__(self, root: str):
        self.root = root

    def repo(self, repo_id: str) -> str:
        return f"{self.root}/repos/{quote(repo_id)}"

    def revision(self, repo_id: str, sha: str) -> str:
        return f"{self.repo(repo_id)}/{quote(sha)}"

    def advisory(self, advisory_id: str) -> str:
        return f"{self.root}/advisories/{quote(advisory_id)}"

    def feed(self, repo_id: str) -> str:
        return f"{self.root}/feeds/{quote(repo_id)}.atom"

    def badge(self, repo_id: str) -> str:
        return f"{self.api_repo(repo_id)}/badge.json"

    def api_repo(self, repo_id: str) -> str:
        return f"{self.root}/api/v1/repos/{quote(repo_id)}"

