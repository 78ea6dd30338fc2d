"""Stage 8 (read): the OpenAPI document, complete enough for a generated client.

FastAPI writes the paths; this module adds what a client generator needs and the routes do
not say by themselves: typed response bodies (the shapes :mod:`tracker.api.views` and the
OSV routes emit), request bodies of the routes that read raw bytes (the OSV queries, the Hub
webhook), the error shape ``{"code", "message"}`` on every documented 400/401/403/404/409/
413/422, the bearer token of the writes and the Hub's webhook secret as security schemes,
and ``/osv/all.zip`` as a zip. FastAPI's 422 validation answer is documented as the 400
the app really sends (tracker.api.app installs that handler).

The models here describe; they do not validate or filter what a route returns. Every model
allows extra keys, so later additions to a shape do not break generated clients.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

BEARER = "bearerAuth"
HOOK_SECRET = "hubWebhookSecret"


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Error(BaseModel):
    """Every error: an HTTP status (or, on the OSV routes, a gRPC status) and a message."""

    code: int
    message: str


class OsvRecord(_Open):
    """An OSV record (schema: https://ossf.github.io/osv-schema/), as stored."""

    schema_version: str
    id: str
    modified: str
    published: str | None = None
    withdrawn: str | None = None
    summary: str | None = None
    details: str | None = None
    related: list[str] | None = None
    affected: list[dict[str, Any]] | None = None
    references: list[dict[str, str]] | None = None
    database_specific: dict[str, Any] | None = None


class OsvPackage(_Open):
    purl: str | None = Field(None, description="pkg:huggingface/org/name[@sha][?repository_url=HUB]")
    ecosystem: str | None = None
    name: str | None = None


class OsvQuery(_Open):
    """osv.dev's query: a commit, or a package (purl or ecosystem + name) with a version."""

    commit: str | None = Field(None, description="4 to 64 hex digits")
    version: str | None = None
    package: OsvPackage | None = None
    page_token: str | None = Field(None, description="accepted and ignored: one page holds every match")


class OsvQueryBatch(_Open):
    queries: list[OsvQuery] = Field(..., max_length=1000)


class OsvVulnList(_Open):
    """``{}`` when nothing matched."""

    vulns: list[OsvRecord] | None = None


class OsvVulnRef(_Open):
    id: str
    modified: str


class OsvBatchResult(_Open):
    vulns: list[OsvVulnRef] | None = None


class OsvBatchResults(_Open):
    results: list[OsvBatchResult]


class OsvIndexEntry(_Open):
    id: str
    modified: str


class HubWebhookPayload(_Open):
    """What the Hub POSTs (hub-api.md §16); only these fields are read."""

    event: dict[str, Any] = Field(..., description='{"action": "update", "scope": "repo.content"}')
    repo: dict[str, Any] = Field(..., description='{"type": "model", "name": "org/name", "headSha": "..."}')
    updatedRefs: list[dict[str, Any]] | None = None  # the Hub's key


class HookAnswer(_Open):
    status: str = Field(..., description="queued | ignored")
    repo: str | None = None
    reason: str | None = None


class Change(_Open):
    kind: str
    path: str
    summary: str
    severity: str | None
    topics: list[str] | None = None
    detail: Any = None


class Revision(_Open):
    sha: str
    parent: str | None
    committed_at: str | None
    title: str
    authors: list[str]
    severity: str | None
    advisory_id: str | None
    changes: list[Change]


class RevisionRepair(_Open):
    status: str  # pending | repaired | given_up
    paths: list[str]
    attempts: int
    recorded_at: str | None
    next_attempt_at: str | None
    done_at: str | None


class RevisionDetail(Revision):
    parents: list[str]
    message: str
    reachable: bool
    error: str | None
    recorded_at: str | None
    chain_hash: str
    plan: dict[str, Any] | None
    plan_delta: dict[str, Any] | None
    #: only for a revision recorded with files unreadable for now: its repair (issue 10)
    repair: RevisionRepair | None = None


class RevisionsPage(_Open):
    repo: str
    revisions: list[Revision]
    next_cursor: str | None


class Compare(_Open):
    repo: str
    base: str
    head: str
    severity: str | None
    changes: list[Change]
    plan_delta: dict[str, Any] | None


class Plan(_Open):
    """``plan --json``: parameters, memory, card fits, cost and findings."""

    params: dict[str, Any]
    memory_bytes: dict[str, Any]
    cards: dict[str, Any]
    findings: list[dict[str, Any]]
    supported: bool
    model_type: str | None = None
    architecture: str | None = None


class Badge(_Open):
    """A shields.io endpoint badge."""

    schemaVersion: int  # shields.io's keys
    label: str
    message: str
    color: str
    cacheSeconds: int


class Subscription(_Open):
    id: str
    url: str
    repos: list[str] | None
    status: str
    created_at: str | None
    consecutive_failures: int
    disabled_reason: str | None
    deliveries: dict[str, int]
    last_error: str | None
    secret: str | None = Field(None, description="only in the answer to the POST that created it")


class DriftQuery(_Open):
    repo: str = Field(..., description="org/name")
    revision: str = Field(..., description="4 to 64 hex digits")


class DriftQueries(_Open):
    queries: list[DriftQuery] = Field(..., max_length=1000)


class Drift(_Open):
    repo: str
    revision: str
    tracked: bool
    known: bool
    reachable: bool | None
    upstream_head: str | None
    behind: int | None
    severities_since: dict[str, int]


class DriftResults(_Open):
    results: list[Drift]


MODELS: tuple[type[BaseModel], ...] = (
    Error, OsvRecord, OsvQuery, OsvQueryBatch, OsvVulnList, OsvBatchResults, OsvIndexEntry,
    HubWebhookPayload, HookAnswer, Revision, RevisionDetail, RevisionsPage, Compare, Plan, Badge,
    Subscription, DriftQueries, DriftResults,
)


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def _array(name: str) -> dict[str, Any]:
    return {"type": "array", "items": _ref(name)}


#: (method, path) -> status -> body schema, for routes whose return type says nothing.
BODIES: dict[tuple[str, str], dict[str, dict[str, Any]]] = {
    ("get", "/v1/vulns/{vuln_id}"): {"200": _ref("OsvRecord")},
    ("post", "/v1/query"): {"200": _ref("OsvVulnList")},
    ("post", "/v1/querybatch"): {"200": _ref("OsvBatchResults")},
    ("get", "/osv/all.json"): {"200": _array("OsvIndexEntry")},
    ("get", "/osv/{vuln_id}.json"): {"200": _ref("OsvRecord")},
    ("post", "/hooks/huggingface"): {"200": _ref("HookAnswer")},
    ("get", "/api/v1/repos/{org}/{name}/revisions"): {"200": _ref("RevisionsPage")},
    ("get", "/api/v1/repos/{org}/{name}/revisions/{sha}"): {"200": _ref("RevisionDetail")},
    ("get", "/api/v1/repos/{org}/{name}/compare/{spec}"): {"200": _ref("Compare")},
    ("get", "/api/v1/repos/{org}/{name}/plan"): {"200": _ref("Plan")},
    ("post", "/api/v1/plan"): {"200": {"oneOf": [_ref("Plan"), _array("Plan")]}},
    ("get", "/api/v1/repos/{org}/{name}/badge.json"): {"200": _ref("Badge")},
    ("get", "/api/v1/subscriptions"): {"200": _array("Subscription")},
    ("post", "/api/v1/subscriptions"): {"201": _ref("Subscription")},
    ("get", "/api/v1/subscriptions/{sub_id}"): {"200": _ref("Subscription")},
    ("patch", "/api/v1/subscriptions/{sub_id}"): {"200": _ref("Subscription")},
    ("post", "/api/v1/drift"): {"200": _ref("DriftResults")},
}
#: Routes that read their body by hand (any Content-Type, as osv.dev clients send none).
REQUEST_BODIES: dict[tuple[str, str], str] = {
    ("post", "/v1/query"): "OsvQuery",
    ("post", "/v1/querybatch"): "OsvQueryBatch",
    ("post", "/hooks/huggingface"): "HubWebhookPayload",
    ("post", "/api/v1/drift"): "DriftQueries",
}
#: Errors beyond the generic ones (400 with input, 404 with a path parameter, 401/403 when secured).
EXTRA_ERRORS: dict[tuple[str, str], tuple[str, ...]] = {
    ("post", "/v1/query"): ("413",),
    ("post", "/v1/querybatch"): ("413",),
    ("post", "/hooks/huggingface"): ("401", "403", "413"),
    ("post", "/api/v1/plan"): ("413", "422"),
    ("post", "/api/v1/repos"): ("409",),
    ("delete", "/api/v1/subscriptions/{sub_id}"): ("409",),
    ("get", "/api/v1/repos/{org}/{name}/compare/{spec}"): ("501",),
}
_WHY = {
    "400": "invalid request", "401": "missing or wrong credentials", "403": "not permitted (or disabled)",
    "404": "not found", "409": "conflict", "413": "request body too large",
    "422": "well-formed but not processable (e.g. not a config.json)", "501": "not in this build",
}


def install_openapi(app: FastAPI) -> None:
    """Replace ``app.openapi`` with the completed document (built once, then cached)."""
    build: Callable[[], dict[str, Any]] = lambda: complete(  # noqa: E731
        get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    )

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build()
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def complete(spec: dict[str, Any]) -> dict[str, Any]:
    """The FastAPI document with bodies, errors and security filled in."""
    components = spec.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    for model in MODELS:
        schema = TypeAdapter(model).json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema
    security = components.setdefault("securitySchemes", {})
    security[BEARER] = {"type": "http", "scheme": "bearer",
                        "description": "HUBWATCH_API_TOKEN; every write needs it"}
    security[HOOK_SECRET] = {"type": "apiKey", "in": "header", "name": "X-Webhook-Secret",
                             "description": "HUBWATCH_WEBHOOK_SECRET, as the Hub sends it"}
    for path, item in spec.get("paths", {}).items():
        for method, op in item.items():
            _complete_operation(path, method, op)
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    return spec


def _complete_operation(path: str, method: str, op: dict[str, Any]) -> None:
    key = (method, path)
    responses = op.setdefault("responses", {})
    validated = responses.pop("422", None) is not None
    for status, schema in BODIES.get(key, {}).items():
        responses.setdefault(status, {"description": "OK"})["content"] = _json(schema)
    if key == ("get", "/osv/all.zip"):
        responses["200"] = {"description": "every record as {id}.json, deterministic to the byte",
                            "content": {"application/zip": {"schema": {"type": "string", "format": "binary"}}}}
    if path.startswith("/osv/"):
        responses.setdefault("304", {"description": "not modified (If-None-Match / If-Modified-Since)"})
    if key in REQUEST_BODIES:
        op["requestBody"] = {"required": True, "content": _json(_ref(REQUEST_BODIES[key]))}
    if key == ("post", "/hooks/huggingface"):
        op["security"] = [{HOOK_SECRET: []}]
    errors: list[str] = list(EXTRA_ERRORS.get(key, ()))
    if validated or op.get("parameters") or "requestBody" in op:
        errors.append("400")
    if "{" in path:
        errors.append("404")
    if any(BEARER in s for s in op.get("security", [])):
        errors += ["401", "403"]
    for status in sorted(set(errors)):
        responses.setdefault(status, {"description": _WHY[status], "content": _json(_ref("Error"))})
