"""advisories.query: OSV range semantics on a real git graph, purls and package versions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from advisories.query import (
    affected_version,
    affects_version,
    matches_purl,
    parse_purl,
    range_contains,
    record_contains_commit,
)
from tests.advisories.osv_helpers import SPEC_GRAPH, GitGraph, transformers_seeds


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> GitGraph:
    return GitGraph(tmp_path_factory.mktemp("spec-graph"))


def _events(graph: GitGraph, *pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{kind: graph.sha.get(name, name)} for kind, name in pairs]


def _affected(graph: GitGraph, events: list[dict[str, str]], *, strict: bool = False) -> str:
    ancestors = graph.strict_ancestors_of if strict else graph.ancestors_of
    hits = [n for n in SPEC_GRAPH if range_contains(events, graph.sha[n], ancestors)]
    return "".join(sorted(hits))


# Expected sets from the spec's text (docs/schema.md, "GIT" ranges) and its pseudocode.
CASES = [
    # every descendant of X not containing Y
    ([("introduced", "X"), ("fixed", "Y")], "ABCDEFNX"),
    # git rev-list X..Y, including X and excluding Y
    ([("introduced", "X"), ("limit", "Y")], "ABCX"),
    # each limit adds one branch to the scope
    ([("introduced", "X"), ("limit", "Y"), ("limit", "F")], "ABCEX"),
    ([("introduced", "X"), ("limit", "*")], "ABCDEFMNXYZ"),
    # v > last_affected is not affected; E and F do not descend from C
    ([("introduced", "X"), ("last_affected", "C")], "ABCEFX"),
    ([("introduced", "0"), ("fixed", "B")], "AWX"),
    ([("introduced", "X")], "ABCDEFMNXYZ"),
    # re-introduced after the fix on the E branch; N merges E's line in again
    ([("introduced", "X"), ("fixed", "B"), ("introduced", "E")], "AEFNX"),
    # two fixes (one per branch, as PSF lists backports)
    ([("introduced", "X"), ("fixed", "Y"), ("fixed", "F")], "ABCDEX"),
    ([("introduced", "C"), ("fixed", "Y")], "CDN"),  # N = D + F holds C
]


@pytest.mark.parametrize(("pairs", "expected"), CASES)
def test_git_ranges_follow_the_spec(graph: GitGraph, pairs: Any, expected: str) -> None:
    events = _events(graph, *pairs)
    assert _affected(graph, events) == expected
    # ancestors_of may or may not include the commit itself
    assert _affected(graph, events, strict=True) == expected


def test_a_merge_that_brings_in_the_fix_is_not_affected(graph: GitGraph) -> None:
    events = _events(graph, ("introduced", "X"), ("fixed", "Y"))
    assert not range_contains(events, graph.sha["M"], graph.ancestors_of)  # M = D + Y
    assert range_contains(events, graph.sha["N"], graph.ancestors_of)  # N = D + F


def test_unknown_commits_and_case(graph: GitGraph) -> None:
    events = _events(graph, ("introduced", "X"))
    assert not range_contains(events, "f" * 40, graph.ancestors_of)
    assert range_contains(events, graph.sha["A"].upper(), graph.ancestors_of)
    assert range_contains(events, graph.sha["X"], lambda _sha: set())  # the commit itself


def test_a_record_holds_a_commit_through_any_git_range(graph: GitGraph) -> None:
    record = {
        "affected": [
            {"ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}]}]},
            {
                "ranges": [
                    {"type": "GIT", "repo": "r", "events": _events(graph, ("introduced", "E"))}
                ]
            },
        ]
    }
    assert record_contains_commit(record, graph.sha["F"], graph.ancestors_of)
    assert not record_contains_commit(record, graph.sha["D"], graph.ancestors_of)


# --- purls -----------------------------------------------------------------------------------


def _hub_record(sha: str) -> dict[str, Any]:
    return {
        "affected": [
            {
                "ranges": [
                    {
                        "type": "GIT",
                        "repo": "https://huggingface.co/org/m",
                        "events": [{"introduced": sha}],
                    }
                ],
                "database_specific": {"purl": f"pkg:huggingface/org/m@{sha}", "branch": "main"},
            }
        ]
    }


def test_purl_parsing() -> None:
    parsed = parse_purl("pkg:huggingface/Org/Model@ABCDEF?repository_url=https://x#sub")
    assert parsed is not None
    assert (parsed.type, parsed.namespace, parsed.name, parsed.version) == (
        "huggingface", "Org", "Model", "abcdef"
    )  # fmt: skip
    pypi = parse_purl("pkg:pypi/Some_Package@1.0")
    assert pypi is not None and pypi.name == "some-package"
    npm = parse_purl("pkg:npm/%40scope/name@1.2.3")
    assert npm is not None and (npm.namespace, npm.name) == ("@scope", "name")
    for bad in ("", "huggingface/org/m", "pkg:", "pkg:/x", "pkg:hugging face/o/m", "pkg:x" * 1000):
        assert parse_purl(bad) is None


def test_matches_purl_with_and_without_version(graph: GitGraph) -> None:
    record = _hub_record(graph.sha["B"])
    assert matches_purl(record, "pkg:huggingface/org/m")
    assert matches_purl(record, "pkg:huggingface/org/m?repository_url=https://huggingface.co")
    assert not matches_purl(record, "pkg:huggingface/org/other")
    assert not matches_purl(record, "pkg:huggingface/ORG/m")  # case-sensitive per the purl spec
    assert not matches_purl(record, "pkg:pypi/m")
    assert not matches_purl(record, "not a purl")
    # a version without the graph: the advisory's own revision only
    assert matches_purl(record, f"pkg:huggingface/org/m@{graph.sha['B'].upper()}")
    assert not matches_purl(record, f"pkg:huggingface/org/m@{graph.sha['C']}")
    # with the graph: any revision the range holds
    assert matches_purl(record, f"pkg:huggingface/org/m@{graph.sha['C']}", graph.ancestors_of)
    assert not matches_purl(record, f"pkg:huggingface/org/m@{graph.sha['A']}", graph.ancestors_of)


# --- package versions ------------------------------------------------------------------------


def test_pypi_ranges_of_the_transformers_records() -> None:
    seeds = transformers_seeds()
    fixed = {r["id"]: r["affected"][0]["ranges"][0]["events"][1]["fixed"] for r in seeds}

    def hits(version: str) -> set[str]:
        return {r["id"] for r in seeds if affects_version(r, "PyPI", "Transformers", version)}

    assert hits("4.36.0") == set(fixed)
    assert hits("4.48.0") == {
        i for i, f in fixed.items() if f in ("4.49.0", "4.50.0", "4.51.0", "4.52.1", "4.53.0")
    }
    assert hits("4.52.0") == {i for i, f in fixed.items() if f in ("4.52.1", "4.53.0")}
    assert hits("4.53.0") == set()
    assert hits("4.38.0rc1") == set(fixed)  # a pre-release comes before 4.38.0 (PEP 440)
    assert hits("not-a-version") == set()
    assert {r["id"] for r in seeds if affects_version(r, "npm", "transformers", "1.0.0")} == set()


@pytest.mark.parametrize(
    ("events", "version", "expected"),
    [
        ([{"introduced": "1.0.0"}, {"fixed": "1.2.0"}], "1.1.9", True),
        ([{"introduced": "1.0.0"}, {"fixed": "1.2.0"}], "1.2.0", False),
        ([{"introduced": "1.0.0"}, {"fixed": "1.2.0"}], "0.9.0", False),
        ([{"introduced": "1.0.0"}, {"fixed": "1.2.0"}], "1.2.0-rc.1", True),
        ([{"introduced": "1.0.0"}, {"last_affected": "1.2.0"}], "1.2.0", True),
        ([{"introduced": "1.0.0"}, {"last_affected": "1.2.0"}], "1.2.1", False),
        ([{"introduced": "0"}, {"limit": "2.0.0"}], "1.9.9", True),
        ([{"introduced": "0"}, {"limit": "2.0.0"}], "2.0.0", False),
        ([{"introduced": "1.0.0-alpha.10"}], "1.0.0-alpha.9", False),  # numeric identifiers
        ([{"introduced": "1.0.0-alpha"}], "1.0.0-alpha.1", True),
    ],
)
def test_semver_ranges(events: list[dict[str, str]], version: str, expected: bool) -> None:
    affected = {"ranges": [{"type": "SEMVER", "events": events}]}
    assert affected_version(affected, "npm", version) is expected


def test_unordered_ecosystems_use_the_versions_list() -> None:
    affected = {
        "versions": ["1.0-1"],
        "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "2.0-1"}]}],
    }
    assert affected_version(affected, "Debian:12", "1.0-1")
    assert not affected_version(affected, "Debian:12", "1.5-1")  # no Debian ordering here


def test_queries_keep_the_graph_callback_calls_bounded(tmp_path: Path) -> None:
    graph = GitGraph(tmp_path)
    events = _events(graph, ("introduced", "X"), ("fixed", "Y"), ("limit", "Z"))
    graph.calls = 0
    range_contains(events, graph.sha["D"], graph.ancestors_of)
    assert graph.calls <= len(events) + 1  # one walk per event and the commit, memoised
