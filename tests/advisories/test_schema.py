"""advisories.schema: the vendored official schema plus our own rules."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from advisories import schema
from tests.advisories.osv_helpers import (
    assert_valid,
    config_change,
    pair,
    record_for,
    transformers_seeds,
)
from tests.corpus import OSV_SCHEMA
from tracker.model.core import ChangeKind, Severity


@pytest.fixture(scope="module")
def record() -> dict[str, Any]:
    p = pair("llama2-7b-hf__config-max-position-2048-to-4096")
    made = record_for(p, (config_change(p, "config.json", ChangeKind.CONFIG, Severity.MODERATE),))
    assert made is not None
    return made


def test_vendored_schema_is_the_shared_official_copy() -> None:
    assert schema.SCHEMA_PATH.read_bytes() == OSV_SCHEMA.read_bytes()
    assert schema.UPSTREAM_COMMIT in (OSV_SCHEMA.parent / "SOURCE.md").read_text()


def test_a_built_record_is_valid(record: dict[str, Any]) -> None:
    assert_valid(record)
    assert schema.errors(record) == []


def test_other_databases_records_pass_the_official_schema_only() -> None:
    seed = transformers_seeds()[0]
    schema.validate(seed, ours=False)
    with pytest.raises(schema.InvalidRecord) as info:
        schema.validate(seed)
    assert any(e.startswith("id:") for e in info.value.errors)


def _broken(record: dict[str, Any], path: list[Any], value: Any) -> dict[str, Any]:
    bad = copy.deepcopy(record)
    target = bad
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return bad


GIT_EVENT = ["affected", 0, "ranges", 0, "events", 0, "introduced"]


@pytest.mark.parametrize(
    ("path", "value", "official"),
    [
        (["id"], "HFSEC-1", True),  # unregistered prefix: the official schema says no
        (["id"], "GHSA-aaaa-bbbb-cccc", False),  # registered, but not ours
        (["extra"], 1, True),  # no extra top-level keys
        (["modified"], "2026-13-45T00:00:00Z", True),  # matches the pattern; format check
        (["modified"], "2026-01-01T00:00:00+00:00", True),
        (GIT_EVENT, "f8dac3f", True),  # short hash
        (GIT_EVENT, "F8DAC3FFF96D5DEBD43EDF56FB4E1ABCFFFBEF28", True),
        (GIT_EVENT, "0", False),  # allowed by OSV, never by us
        (["affected", 0, "ranges", 0, "repo"], KeyError, True),
        (["summary"], "two\nlines", False),
        (["summary"], "x" * 121, False),
        (["schema_version"], KeyError, False),
        (["published"], KeyError, False),
        (["published"], "2027-01-01T00:00:00Z", False),  # after modified
        (["references", 0, "url"], "javascript:alert(1)", False),
        (["database_specific", "severity"], "SEVERE", False),
        (["affected"], [], False),
    ],
)
def test_invalid_records_are_refused(
    record: dict[str, Any], path: list[Any], value: Any, official: bool
) -> None:
    bad = _broken(record, path, value)
    with pytest.raises(schema.InvalidRecord):
        schema.validate(bad)
    assert bool(schema.schema_errors(bad, OSV_SCHEMA)) is official


def test_an_event_both_introduced_and_fixed_is_refused(record: dict[str, Any]) -> None:
    bad = copy.deepcopy(record)
    sha = bad["affected"][0]["ranges"][0]["events"][0]["introduced"]
    bad["affected"][0]["ranges"][0]["events"].append({"fixed": sha})
    assert any("both introduced and fixed" in e for e in schema.errors(bad))


def test_related_may_not_hold_the_own_id(record: dict[str, Any]) -> None:
    bad = _broken(record, ["related"], [record["id"]])
    assert any(e.startswith("related") for e in schema.errors(bad))


@pytest.mark.parametrize(
    ("name", "valid"),
    [("PyPI", True), ("GIT", True), ("Debian:12", True), ("HuggingFace", False), ("pypi", False)],
)
def test_ecosystems_come_from_the_schema(name: str, valid: bool) -> None:
    assert schema.is_valid_ecosystem(name) is valid
