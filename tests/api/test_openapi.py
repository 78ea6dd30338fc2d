"""The OpenAPI document (issue 15 point 5): valid for openapi-spec-validator, with security
schemes, request bodies, typed responses and every error documented; and what the routes
really answer matches what it documents (checked with jsonschema against its own schemas),
so a generated client works."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate as validate_spec

from tests.api.data import TOKEN, seed_history, settings
from tracker.api.app import create_app

AUTH = {"Authorization": f"Bearer {TOKEN}"}
WRITES = {("post", "/api/v1/repos"), ("delete", "/api/v1/repos/{org}/{name}"), ("get", "/api/v1/subscriptions"),
          ("post", "/api/v1/subscriptions"), ("get", "/api/v1/subscriptions/{sub_id}"),
          ("patch", "/api/v1/subscriptions/{sub_id}"), ("delete", "/api/v1/subscriptions/{sub_id}")}


@pytest.fixture
def client(store):  # type: ignore[no-untyped-def]
    return TestClient(create_app(store, settings()))


@pytest.fixture
def spec(client: TestClient) -> dict[str, Any]:
    return client.get("/openapi.json").json()  # type: ignore[no-any-return]


def _operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(m, p, op) for p, item in spec["paths"].items() for m, op in item.items()]


def _conforms(spec: dict[str, Any], method: str, path: str, status: int, body: Any) -> None:
    """``body`` is valid against the schema the document gives for that answer."""
    response = spec["paths"][path][method]["responses"][str(status)]
    schema = response["content"]["application/json"]["schema"]
    errors = list(Draft202012Validator({**schema, "components": spec["components"]}).iter_errors(body))
    assert not errors, (method, path, status, [e.message for e in errors[:3]])


def test_the_document_is_valid_openapi(spec: dict[str, Any]) -> None:
    validate_spec(spec)
    assert spec["openapi"].startswith("3.1")


def test_writes_declare_the_bearer_token_and_its_errors(spec: dict[str, Any]) -> None:
    schemes = spec["components"]["securitySchemes"]
    assert schemes["bearerAuth"] == {**schemes["bearerAuth"], "type": "http", "scheme": "bearer"}
    assert schemes["hubWebhookSecret"]["in"] == "header"
    for method, path, op in _operations(spec):
        secured = [name for s in op.get("security", []) for name in s]
        if (method, path) in WRITES:
            assert secured == ["bearerAuth"], (method, path)
        elif path == "/hooks/huggingface":
            assert secured == ["hubWebhookSecret"]
        else:
            assert not secured, (method, path)  # reads are open
        if secured:
            assert {"401", "403"} <= set(op["responses"]), (method, path)


def test_bodies_responses_and_errors_are_typed(spec: dict[str, Any]) -> None:
    for path in ("/v1/query", "/v1/querybatch", "/hooks/huggingface", "/api/v1/plan", "/api/v1/repos",
                 "/api/v1/drift"):
        body = spec["paths"][path]["post"]["requestBody"]
        assert body["required"] and body["content"]["application/json"]["schema"], path
    error_ref = {"$ref": "#/components/schemas/Error"}
    for method, path, op in _operations(spec):
        responses = op["responses"]
        assert "422" not in responses or (method, path) == ("post", "/api/v1/plan")  # validation answers 400
        ok = [s for s in responses if s.startswith("2")]
        assert ok, (method, path)
        for status in ok:
            for media, content in (responses[status].get("content") or {}).items():
                if media == "application/json":
                    assert content["schema"] not in ({}, {"type": "object"}), (method, path, status)
        if "{" in path:
            assert "404" in responses, (method, path)
        if op.get("parameters") or "requestBody" in op:
            assert "400" in responses, (method, path)
        for status, r in responses.items():
            if status[0] in "45":
                assert r["content"]["application/json"]["schema"] == error_ref, (method, path, status)
    zip_ok = spec["paths"]["/osv/all.zip"]["get"]["responses"]["200"]["content"]
    assert list(zip_ok) == ["application/zip"] and zip_ok["application/zip"]["schema"]["format"] == "binary"
    assert "422" in spec["paths"]["/api/v1/plan"]["post"]["responses"]


def test_the_routes_answer_what_the_document_says(store, client: TestClient, spec: dict[str, Any]) -> None:  # type: ignore[no-untyped-def]
    revs = seed_history(store, n=5)
    record = next(r.advisory for r in revs if r.advisory)
    sha = revs[-1].sha
    store.add_repo("org/gitty", source="/srv/mirrors/gitty", source_kind="git")  # the 409 below
    checks: list[tuple[str, str, Any, int]] = [
        ("get", "/api/v1/repos", client.get("/api/v1/repos"), 200),
        ("get", "/api/v1/repos/{org}/{name}", client.get("/api/v1/repos/org/model"), 200),
        ("get", "/api/v1/repos/{org}/{name}/revisions", client.get("/api/v1/repos/org/model/revisions?limit=2"), 200),
        ("get", "/api/v1/repos/{org}/{name}/revisions/{sha}", client.get(f"/api/v1/repos/org/model/revisions/{sha}"), 200),
        ("get", "/api/v1/repos/{org}/{name}/badge.json", client.get("/api/v1/repos/org/model/badge.json"), 200),
        ("get", "/v1/vulns/{vuln_id}", client.get(f"/v1/vulns/{record['id']}"), 200),
        ("post", "/v1/query", client.post("/v1/query", json={"commit": record["affected"][0]["ranges"][0]["events"][0]["introduced"]}), 200),
        ("post", "/v1/querybatch", client.post("/v1/querybatch", json={"queries": [{"commit": sha}, {"commit": "ab" * 20}]}), 200),
        ("get", "/osv/all.json", client.get("/osv/all.json"), 200),
        ("get", "/osv/{vuln_id}.json", client.get(f"/osv/{record['id']}.json"), 200),
        ("post", "/api/v1/plan", client.post("/api/v1/plan", json={"model_type": "llama"}), 200),
        ("post", "/api/v1/subscriptions", client.post("/api/v1/subscriptions", json={"url": "http://127.0.0.1:9/h"}, headers=AUTH), 201),
        ("get", "/api/v1/subscriptions", client.get("/api/v1/subscriptions", headers=AUTH), 200),
        ("post", "/api/v1/drift", client.post("/api/v1/drift", json={"queries": [{"repo": "org/model", "revision": revs[1].sha}, {"repo": "org/none", "revision": "abcd"}]}), 200),
        # errors
        ("get", "/api/v1/repos/{org}/{name}/revisions", client.get("/api/v1/repos/org/model/revisions?cursor=x"), 400),
        ("get", "/api/v1/repos/{org}/{name}/revisions", client.get("/api/v1/repos/org/model/revisions?limit=0"), 400),
        ("post", "/api/v1/repos", client.post("/api/v1/repos", json={"source": "org/x"}), 401),
        ("get", "/api/v1/repos/{org}/{name}", client.get("/api/v1/repos/org/none"), 404),
        ("get", "/v1/vulns/{vuln_id}", client.get("/v1/vulns/x_HUBWATCH-0000-0000-0000"), 404),
        ("post", "/v1/query", client.post("/v1/query", content=b"[1]"), 400),
        ("post", "/api/v1/plan", client.post("/api/v1/plan", json={"a": 1}), 422),
        ("post", "/api/v1/repos", client.post("/api/v1/repos", json={"source": "org/gitty"}, headers=AUTH), 409),
    ]
    for method, path, response, status in checks:
        assert response.status_code == status, (method, path, response.text)
        _conforms(spec, method, path, status, response.json())
    reason = client.post("/api/v1/plan", json={"a": 1}).json()["message"]
    assert "not a config.json" in reason and "model_type" in reason
    read_only = TestClient(create_app(store, settings(token=None)))
    refused = read_only.post("/api/v1/repos", json={"source": "org/x"}, headers=AUTH)
    assert refused.status_code == 403
    _conforms(spec, "post", "/api/v1/repos", 403, refused.json())
