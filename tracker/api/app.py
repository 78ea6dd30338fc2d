"""The FastAPI application: composes the routers; each router module owns its routes.

``create_app(store, settings, health=...)`` is called by the CLI (``serve``, ``run``). The
API only reads the store (and writes rows the daemon acts on: tracked repos, subscriptions,
"due now" marks); it never calls the Hub or the pipeline.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from storage.store import Store
from tracker import __version__, heap
from tracker.api.dispatch import gate_included_routers
from tracker.api.guard import RequestGuard
from tracker.api.history_fast import HistoryPageFastPath
from tracker.api.metrics import Metrics
from tracker.api.openapi import install_openapi
from tracker.api.renamed import RenamedRepos
from tracker.config import Settings

HealthCheck = Callable[[], dict[str, Any]]


def create_app(
    store: Store, settings: Settings, *, scheduler_alive: Callable[[], bool] | None = None,
    metrics: Metrics | None = None,
) -> FastAPI:
    # /docs is our own page (tracker.api.pages_model): Swagger UI would load from a CDN
    app = FastAPI(title="hubwatch", version=__version__, docs_url=None, redoc_url=None, lifespan=_warm_up,
                  description="Upstream change tracker and advisory daemon for Hugging Face model repos.")
    app.router.redirect_slashes = False  # its redirects are built from the client's Host header
    app.state.store = store
    app.state.settings = settings
    app.state.metrics = metrics or Metrics(store)
    _install_error_shape(app)
    app.add_middleware(RenamedRepos, store=store)  # a renamed repo's old id: 307 to the new one
    app.add_middleware(RequestGuard, max_body=settings.api.max_body_bytes, api_token=settings.server.api_token)

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", include_in_schema=False)
    def readyz() -> JSONResponse:
        checks: dict[str, str] = {}
        try:
            store.ping_write()  # reachable is not enough: the daemon must be able to write
            checks["database"] = "ok"
        except Exception as e:
            checks["database"] = f"error: {type(e).__name__}"
        if scheduler_alive is not None:
            checks["scheduler"] = "ok" if scheduler_alive() else "stopped"
        ok = all(v == "ok" for v in checks.values())
        warm = {"commit_answers": app.state.commit_queries.warm_state()}  # informative: never 503
        return JSONResponse({"status": "ok" if ok else "unavailable", "checks": checks, "warm_up": warm},
                            status_code=200 if ok else 503)

    @app.get("/metrics", include_in_schema=False)
    def metrics_route() -> PlainTextResponse:
        body, ctype = app.state.metrics.render()
        return PlainTextResponse(body, media_type=ctype)

    for include in _ROUTERS:
        include(app, store, settings)
    gate_included_routers(app)  # a router is asked only about paths its routes could match
    app.add_middleware(HistoryPageFastPath, store=store)  # outermost: plain history pages before the stack
    install_openapi(app)
    heap.settle("api")  # the first app built: what exists now leaves the collector's walk
    return app


@asynccontextmanager
async def _warm_up(app: FastAPI) -> AsyncIterator[None]:
    """The lifespan of each serving process (after ``serve --workers`` forked it): the commit
    answers' warm-up starts here, before the first request, not in the middle of the first
    commit queries (issue 17); ``/readyz`` says how it stands."""
    app.state.commit_queries.warm_soon()
    yield


def _install_error_shape(app: FastAPI) -> None:
    """Errors in one JSON shape: {"code": N, "message": "..."} (osv.dev's shape)."""

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_req: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"code": exc.status_code, "message": str(exc.detail)}, status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(ClientDisconnect)
    async def client_gone(_req: Request, _exc: ClientDisconnect) -> Response:
        """A client that left before its body was read whole: nobody to answer (the server
        drops what is sent to it), nothing to log. Unhandled, each one was a 40-frame
        traceback on the event loop: 200 clients leaving mid-body held new connections in
        the accept queue for over 10 s (tests/hostile)."""
        return Response(status_code=499)  # "client closed request", as nginx names it

    @app.exception_handler(RequestValidationError)
    async def validation_error(_req: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return JSONResponse({"code": 400, "message": f"invalid request: {where}: {first.get('msg', 'invalid')}"},
                            status_code=400)


def _include_osv(app: FastAPI, store: Store, settings: Settings) -> None:
    from storage.commit_answers import KeptQueries
    from tracker.api.osv_fast import CommitQueryFastPath
    from tracker.api.osv_routes import osv_router
    from tracker.api.store_reader import StoreAdvisoryReader

    app.state.commit_queries = KeptQueries(store)
    app.include_router(osv_router(StoreAdvisoryReader(store), kept=app.state.commit_queries))
    app.add_middleware(CommitQueryFastPath, kept=app.state.commit_queries)  # outermost: before the stack


def _include_optional(module: str, factory: str) -> Callable[[FastAPI, Store, Settings], None]:
    """Routers that later work adds: included when their module exists."""

    def include(app: FastAPI, store: Store, settings: Settings) -> None:
        import importlib

        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name == module:
                return
            raise
        app.include_router(getattr(mod, factory)(store, settings))

    return include


_ROUTERS: list[Callable[[FastAPI, Store, Settings], None]] = [
    _include_osv,
    _include_optional("tracker.api.hooks", "hooks_router"),
    _include_optional("tracker.api.rest", "rest_router"),
    _include_optional("tracker.api.drift", "drift_router"),
    _include_optional("tracker.api.feeds", "feeds_router"),
    _include_optional("tracker.api.pages", "pages_router"),
]
