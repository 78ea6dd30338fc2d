"""Stage 8 (read): the model page of the seeds (HTML and its Markdown twin), the paste-a-config
form, and the offline API docs page.

- ``/repos/{org}/{name}/plan[.md]``, ``/repos/{org}/{name}/{sha}/plan[.md]``: the stored plan
  of the head (or of a revision), the very document ``hubwatch plan ORG/NAME --json`` prints.
- ``GET /plan``: a form; ``POST /plan`` (form field ``config``): the model page of that
  config.json, planned by the pure planner; bad JSON is a 400, a config the planner cannot
  size a 422, both as the form again with the message.
- ``/docs``: where the API is described (``/openapi.json``), with no script from a CDN.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, Response

from storage.records import RepoRecord, RevisionRecord
from storage.store import Store
from tracker.api import compute
from tracker.api.page_models import Urls
from tracker.api.plan_views import Link, ModelPage, model_markdown, model_page
from tracker.config import Settings

MAX_FORM_BYTES = compute.MAX_CONFIG_BYTES * 4  # url-encoding can triple a JSON text


def model_router(store: Store, settings: Settings) -> APIRouter:
    from tracker.api.pages import error_page, render, urls

    router = APIRouter(include_in_schema=False)

    def stored(org: str, name: str, sha: str | None) -> tuple[RepoRecord, RevisionRecord, dict[str, Any]] | str:
        repo = store.get_repo(f"{org}/{name}")
        if repo is None:
            return f"{org}/{name} is not tracked."
        ref = sha or repo.head_sha
        if not ref:
            last = store.history(repo.id, limit=1, with_changes=False)
            ref = last[0].sha if last else None
        rev = store.get_revision(repo.id, ref) if ref else None
        if rev is None:
            return f"No stored revision {str(sha or 'at the head')[:64]!r} of {repo.id}."
        plan = rev.plan or store.plan_at(repo.id, rev.seq)
        if plan is None:
            return f"{repo.id}@{rev.sha[:12]} has no plan: no readable config.json up to it."
        return repo, rev, plan

    def page_of(u: Urls, repo: RepoRecord, rev: RevisionRecord, plan: Mapping[str, Any], sha: str | None) -> ModelPage:
        page = model_page(plan, name=repo.id.split("/", 1)[1], repo_id=repo.id)
        api = f"{u.api_repo(repo.id)}/plan" + (f"?revision={rev.sha}" if sha else "")
        links = (Link("Revision history and changes", u.repo(repo.id)),
                 Link("This revision's changes", u.revision(repo.id, rev.sha)),
                 Link("Badge JSON", u.badge(repo.id)), Link("OSV advisories (Atom)", u.feed(repo.id)),
                 Link("All tracked changes", f"{u.root}/feeds/all.atom"),
                 Link("Markdown twin", u.model(repo.id, sha) + ".md"), Link("Plan JSON", api),
                 Link("Paste a model instead", f"{u.root}/plan"))
        return replace(page, links=links, revision=rev.sha)

    def html(request: Request, org: str, name: str, sha: str | None) -> Response:
        found = stored(org, name, sha)
        if isinstance(found, str):
            return error_page(request, 404, found)
        u = urls(request)
        page = page_of(u, *found, sha)
        return render(request, "model.html.j2", page=page, md_url=u.model(found[0].id, sha) + ".md")

    def markdown(request: Request, org: str, name: str, sha: str | None) -> Response:
        found = stored(org, name, sha)
        if isinstance(found, str):
            return Response(f"404: {found}\n", status_code=404, media_type="text/markdown; charset=utf-8")
        page = page_of(urls(request), *found, sha)
        return Response(model_markdown(page), media_type="text/markdown; charset=utf-8")

    @router.get("/repos/{org}/{name}/plan", response_class=HTMLResponse)
    def head_plan(request: Request, org: str, name: str) -> Response:
        return html(request, org, name, None)

    @router.get("/repos/{org}/{name}/plan.md")
    def head_plan_md(request: Request, org: str, name: str) -> Response:
        return markdown(request, org, name, None)

    @router.get("/repos/{org}/{name}/{sha}/plan", response_class=HTMLResponse)
    def rev_plan(request: Request, org: str, name: str, sha: str) -> Response:
        return html(request, org, name, sha)

    @router.get("/repos/{org}/{name}/{sha}/plan.md")
    def rev_plan_md(request: Request, org: str, name: str, sha: str) -> Response:
        return markdown(request, org, name, sha)

    @router.get("/plan", response_class=HTMLResponse)
    def plan_form(request: Request) -> Response:
        return render(request, "plan_form.html.j2", config="", message="")

    @router.post("/plan", response_class=HTMLResponse)
    async def plan_post(request: Request) -> Response:
        body = await request.body()
        text = ""
        try:
            if len(body) > MAX_FORM_BYTES:
                raise HTTPException(413, f"a config.json is at most {compute.MAX_CONFIG_BYTES:,} bytes")
            text = _form_field(body, request.headers.get("content-type", ""), "config")
            if not text.strip():
                raise HTTPException(400, "paste a config.json into the box first")
            try:
                doc = json.loads(text)
            except (ValueError, RecursionError) as e:
                raise HTTPException(400, f"this is not valid JSON: {e}"[:300]) from e
            if not isinstance(doc, dict):
                raise HTTPException(400, "paste one config.json (a JSON object), not an array")
            plan = compute.plan_config(settings, doc)
            if not plan.get("supported", True):
                why = next((f.get("message") for f in plan.get("findings") or [] if isinstance(f, Mapping)), "")
                raise HTTPException(422, f"this config cannot be sized: {why or 'unsupported architecture'}")
        except HTTPException as e:
            return render(request, "plan_form.html.j2", e.status_code, config=text[:200_000], message=str(e.detail))
        name = str(doc.get("_name_or_path") or (doc.get("architectures") or [doc.get("model_type") or "config"])[0])
        page = model_page(plan, name=name[:100], provenance="Reconstructed from the config.json pasted here, with no weights read.")
        u = urls(request)
        page = replace(page, links=(Link("Paste another config", f"{u.root}/plan"),))
        return render(request, "model.html.j2", page=page, md_url=None)

    @router.get("/docs", response_class=HTMLResponse)
    def docs(request: Request) -> Response:
        return render(request, "docs.html.j2")

    return router


def _form_field(body: bytes, content_type: str, name: str) -> str:
    """One field of an ``application/x-www-form-urlencoded`` body (the form posts nothing else)."""
    if not content_type.lower().startswith("application/x-www-form-urlencoded"):
        raise HTTPException(400, "post the form (application/x-www-form-urlencoded with a 'config' field); "
                                 "JSON bodies go to POST /api/v1/plan")
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=20)
    except (UnicodeDecodeError, ValueError) as e:
        raise HTTPException(400, f"the form could not be read: {e}"[:200]) from e
    values = fields.get(name)
    return values[0] if values else ""

