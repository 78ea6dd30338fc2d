"""advisories.osv_client against OSV servers on 127.0.0.1, never the network.

The good server is our own osv_router under uvicorn, seeded with records built from the real
transformers advisory ids; the faulty ones are tiny real apps (5xx, slow, malformed,
paginating) — no mocks.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

from advisories.osv_client import OsvClient, OsvUnavailable
from tests.advisories.osv_helpers import assert_valid, serve, transformers_seeds
from tracker.api.osv_routes import osv_router
from tracker.api.readers import MemoryAdvisoryReader

SEEDS = transformers_seeds()
FIXED = {r["id"]: r["affected"][0]["ranges"][0]["events"][1]["fixed"] for r in SEEDS}


def _fixed_after(version: str) -> list[str]:
    from packaging.version import Version

    return sorted(i for i, f in FIXED.items() if Version(f) > Version(version))


class Counting:
    """Our OSV router, counting the querybatch calls and the queries they carry."""

    def __init__(self) -> None:
        self.calls: list[int] = []
        self.app = FastAPI()
        self.app.include_router(osv_router(MemoryAdvisoryReader(SEEDS)))

        @self.app.middleware("http")
        async def count(request: Request, call_next: Any) -> Response:
            if request.url.path == "/v1/querybatch":
                body = await request.body()
                self.calls.append(body.count(b'"version"'))
            response: Response = await call_next(request)
            return response


@pytest.fixture(scope="module")
def osv() -> Iterator[tuple[str, Counting]]:
    server = Counting()
    with serve(server.app) as url:
        yield url, server


@pytest.fixture
def counting(osv: tuple[str, Counting]) -> Counting:
    osv[1].calls.clear()
    return osv[1]


def test_the_seeded_records_are_valid_osv() -> None:
    assert len(SEEDS) == len(FIXED) >= 10
    for seed in SEEDS:
        assert_valid(seed, ours=False)


def test_transformers_4_36_gets_the_advisories_fixed_after_it(
    osv: tuple[str, Counting], counting: Counting
) -> None:
    with OsvClient(osv[0]) as client:
        related = client.related_ids({"transformers_version": "4.36.0"}, None)
    assert related == sorted(FIXED) == _fixed_after("4.36.0")
    assert counting.calls == [1]


def test_later_versions_do_not_get_advisories_fixed_before_them(osv: tuple[str, Counting]) -> None:
    with OsvClient(osv[0]) as client:
        assert client.related_ids({"transformers_version": "4.50.0"}, {}) == _fixed_after("4.50.0")
        assert "GHSA-37q5-v5qm-c9v8" not in client.related_ids(
            {"transformers_version": "4.38.0"}, None
        )
        assert client.related_ids({"transformers_version": "4.53.0"}, None) == []
        # both files name a version: the union
        both = client.related_ids(
            {"transformers_version": "4.52.0"}, {"transformers_version": "4.49.0"}
        )
        assert both == _fixed_after("4.49.0")


def test_batches_are_chunked_cached_and_in_order(
    osv: tuple[str, Counting], counting: Counting
) -> None:
    versions = ["4.36.0", "4.48.0", "4.50.0", "4.52.0", "4.53.0"]
    queries = [("PyPI", "transformers", v) for v in versions]
    with OsvClient(osv[0], batch_size=2) as client:
        results = client.query_batch(queries)
        assert results == [_fixed_after(v) for v in versions]
        assert counting.calls == [2, 2, 1]
        again = client.query_batch([queries[3], ("PyPI", "transformers", "4.37.0"), queries[0]])
        assert again == [_fixed_after("4.52.0"), _fixed_after("4.37.0"), _fixed_after("4.36.0")]
        assert counting.calls == [2, 2, 1, 1]  # only the new version was asked
        assert client.query_batch([queries[0], queries[0]]) == [_fixed_after("4.36.0")] * 2
        assert counting.calls == [2, 2, 1, 1]


def test_the_cache_expires(osv: tuple[str, Counting], counting: Counting) -> None:
    with OsvClient(osv[0], cache_ttl=0.05) as client:
        client.query_batch([("PyPI", "transformers", "4.40.0")])
        time.sleep(0.1)
        client.query_batch([("PyPI", "transformers", "4.40.0")])
    assert counting.calls == [1, 1]


def test_off_and_nothing_to_ask_make_no_request(
    osv: tuple[str, Counting], counting: Counting
) -> None:
    with OsvClient("") as off:
        assert off.related_ids({"transformers_version": "4.36.0"}, None) == []
        assert off.query_batch([("PyPI", "transformers", "4.36.0")]) == [[]]
    with OsvClient(osv[0]) as client:
        assert client.related_ids(None, None) == []
        assert client.related_ids({"transformers_version": 4.36}, ["not", "a", "dict"]) == []  # type: ignore[arg-type]
        assert client.related_ids({"transformers_version": "4.36.0; rm -rf /"}, None) == []
        assert client.related_ids({"transformers_version": "x" * 100}, None) == []
    assert counting.calls == []


# --- faults ----------------------------------------------------------------------------------


def _fault_app() -> FastAPI:
    app = FastAPI()

    @app.post("/status/{code}/v1/querybatch")
    async def status(code: int) -> Response:
        return JSONResponse({"code": 13, "message": "boom"}, status_code=code)

    @app.post("/slow/v1/querybatch")
    async def slow() -> Response:
        await asyncio.sleep(1.5)
        return JSONResponse({"results": [{}]})

    @app.post("/garbage/v1/querybatch")
    async def garbage() -> Response:
        return Response(b"<html>not json</html>", media_type="text/html")

    @app.post("/short/v1/querybatch")
    async def short() -> Response:
        return JSONResponse({"results": []})

    @app.post("/hostile/v1/querybatch")
    async def hostile(request: Request) -> Response:
        n = len((await request.json())["queries"])
        vulns = [
            {"id": "GHSA-aaaa-bbbb-cccc"},
            {"id": "../../etc"},
            {"id": 5},
            "x",
            {"id": "a" * 500},
        ]
        return JSONResponse({"results": [{"vulns": vulns}] * n})

    pages: dict[str, int] = {}

    @app.post("/paged/v1/querybatch")
    async def paged(request: Request) -> Response:
        queries = (await request.json())["queries"]
        results = []
        for q in queries:
            token = q.get("page_token")
            pages[q["version"]] = pages.get(q["version"], 0) + 1
            if token is None:
                results.append(
                    {"vulns": [{"id": f"PYSEC-{q['version']}-1"}], "next_page_token": "p2"}
                )
            else:
                results.append({"vulns": [{"id": f"PYSEC-{q['version']}-2"}]})
        return JSONResponse({"results": results})

    return app


@pytest.fixture(scope="module")
def faulty() -> Iterator[str]:
    with serve(_fault_app()) as url:
        yield url


@pytest.mark.parametrize(
    "path", ["/status/500", "/status/503", "/status/429", "/status/404", "/garbage", "/short"]
)
def test_server_faults_give_no_related_ids_and_a_warning(
    faulty: str, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    with OsvClient(faulty + path) as client:
        with caplog.at_level(logging.WARNING, logger="advisories.osv_client"):
            assert client.related_ids({"transformers_version": "4.36.0"}, None) == []
        assert any("OSV look-up" in r.getMessage() for r in caplog.records)
        with pytest.raises(OsvUnavailable):
            client.query_batch([("PyPI", "transformers", "4.36.0")])


def test_a_timeout_gives_no_related_ids_quickly(faulty: str) -> None:
    with OsvClient(faulty + "/slow", timeout=0.3) as client:
        started = time.monotonic()
        assert client.related_ids({"transformers_version": "4.36.0"}, None) == []
        assert time.monotonic() - started < 1.2


def test_a_closed_port_gives_no_related_ids() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    with OsvClient(f"http://127.0.0.1:{port}", timeout=1) as client:
        assert client.related_ids({"transformers_version": "4.36.0"}, None) == []


def test_answers_are_checked_before_use(faulty: str) -> None:
    with OsvClient(faulty + "/hostile") as client:
        assert client.related_ids({"transformers_version": "4.36.0"}, None) == [
            "GHSA-aaaa-bbbb-cccc"
        ]


def test_pages_are_followed(faulty: str) -> None:
    with OsvClient(faulty + "/paged") as client:
        results = client.query_batch(
            [("PyPI", "transformers", "1.0"), ("PyPI", "transformers", "2.0")]
        )
    assert results == [["PYSEC-1.0-1", "PYSEC-1.0-2"], ["PYSEC-2.0-1", "PYSEC-2.0-2"]]


def test_batch_size_is_bounded() -> None:
    with pytest.raises(ValueError):
        OsvClient("http://127.0.0.1:1", batch_size=1001)
