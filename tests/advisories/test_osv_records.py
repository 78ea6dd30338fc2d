"""advisories.osv.build_record: one valid OSV record per revision worth an advisory."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from advisories.ids import advisory_id
from advisories.osv import SUMMARY_MAX, build_record, purl
from tests.advisories.osv_helpers import (
    HISTORIES,
    NOW,
    PREFIX,
    assert_valid,
    examples,
    pair,
    record_for,
)
from tracker.model.core import Change, ChangeKind, CommitInfo, RevisionDiff, Severity

EXAMPLES = examples()


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_each_change_kind_gives_a_valid_record(name: str) -> None:
    example = EXAMPLES[name]
    record = example.record()
    assert record is not None
    assert_valid(record)
    p = example.pair
    assert record["id"] == advisory_id(PREFIX, p.repo_id, p.sha)
    assert record["published"] == record["modified"] == "2026-11-30T05:00:00Z"
    (affected,) = record["affected"]
    assert "package" not in affected
    assert affected["ranges"] == [
        {
            "type": "GIT",
            "repo": f"https://huggingface.co/{p.repo_id}",
            "events": [{"introduced": p.sha}],
        }
    ]
    assert affected["database_specific"] == {
        "purl": f"pkg:huggingface/{p.repo_id}@{p.sha}",
        "branch": "main",
    }
    assert record["references"] == [
        {"type": "WEB", "url": f"https://huggingface.co/{p.repo_id}/commit/{p.sha}"},
        {"type": "PACKAGE", "url": f"https://huggingface.co/{p.repo_id}"},
    ]
    specific = record["database_specific"]
    assert specific["parent"] == p.parent
    assert (
        specific["severity"]
        == max((c.severity for c in example.changes if c.severity), key=lambda s: s.rank).value
    )
    listed = [(c["kind"], c["path"], c["severity"]) for c in specific["changes"]]
    assert sorted(listed) == sorted(
        (c.kind.value, c.path, c.severity.value) for c in example.changes if c.severity
    )
    ranks = [Severity[sev].rank for _, _, sev in listed]
    assert ranks == sorted(ranks, reverse=True)  # most severe first
    assert specific["plan_delta"] == example.plan_delta
    assert record.get("related", []) == sorted(example.related)
    assert record["summary"].startswith(f"{p.repo_id} {p.sha[:7]}: ")
    for change in example.changes:
        assert f"### {change.severity.value}:" in record["details"]  # type: ignore[union-attr]


def test_the_example_summaries_read_well() -> None:
    summaries = {name: ex.record()["summary"].split(": ", 1)[1] for name, ex in EXAMPLES.items()}  # type: ignore[index]
    # the changes' own words, most severe first, as many as fit (issue 11: name the specific change)
    assert summaries["config_auto_map"].startswith("13 fields changed: architectures, auto_map.AutoConfig")
    assert summaries["config_auto_map"].endswith("; and 1 more")
    assert summaries["chat_template"] == "default chat template changed: the prompt now starts with bos_token"
    assert summaries["weights"] == ("pickle weight file replaced (same name, new content); "
                                    "1 fields changed: transformers_version")
    assert summaries["history"] == "history rewritten"
    assert all(len(ex.record()["summary"]) <= SUMMARY_MAX for ex in EXAMPLES.values())  # type: ignore[index]


def test_no_record_for_the_root_or_for_changes_without_severity() -> None:
    example = EXAMPLES["config"]
    readme = Change(kind=ChangeKind.OTHER, path="README.md", summary="model card edited")
    assert record_for(example.pair, (readme,)) is None
    assert record_for(example.pair, ()) is None
    root = build_record(
        prefix=PREFIX,
        repo_id="org/m",
        repo_url="https://huggingface.co/org/m",
        commit_url="https://huggingface.co/org/m/commit/" + "a" * 40,
        branch="main",
        commit=CommitInfo(sha="a" * 40, parents=(), committed_at=NOW, title="initial"),
        parent=None,
        diff=RevisionDiff(base=None, head="a" * 40, changes=example.changes),
        plan_delta=None,
        related=(),
        now=NOW,
    )
    assert root is None


def test_the_same_inputs_give_the_same_bytes() -> None:
    first = [json.dumps(ex.record()) for ex in EXAMPLES.values()]
    again = [json.dumps(ex.record()) for ex in examples().values()]
    assert first == again


def _hostile_record(title: str, changes: tuple[Change, ...], **kw: Any) -> dict[str, Any]:
    p = pair("gemma-2b-it__chat-template-bos-token")
    commit = CommitInfo(
        sha=p.sha.upper(), parents=(p.parent,), committed_at=p.committed_at, title=title,
        authors=("Eve <eve@example.invalid>",),
    )  # fmt: skip
    record = build_record(
        prefix=PREFIX,
        repo_id=kw.get("repo_id", p.repo_id),
        repo_url=f"https://huggingface.co/{p.repo_id}",
        commit_url=f"https://huggingface.co/{p.repo_id}/commit/{p.sha}",
        branch="main",
        commit=commit,
        parent=p.parent,
        diff=RevisionDiff(base=p.parent, head=p.sha, changes=changes),
        plan_delta=kw.get("plan_delta"),
        related=kw.get("related", ()),
        now=NOW,
    )
    assert record is not None
    assert_valid(record)
    return record


def test_hostile_text_stays_inert_and_bounded() -> None:
    fence_breaker = "line\n```\n[click](https://evil.invalid)\n<script>alert(1)</script>\n" * 2000
    change = Change(
        kind=ChangeKind.CHAT_TEMPLATE,
        path="tokenizer_config.json\n## injected heading",
        summary="**bold** [link](https://evil.invalid) <img src=x>\x00\x1b[31m\ud800",
        topics=("a`b",),
        severity=Severity.HIGH,
        detail={"unified_diff": fence_breaker, "nan": float("nan"), "deep": _deep(100)},
    )
    record = _hostile_record("Fix | table\n# heading [x](javascript:alert(1))", (change,))
    details = record["details"]
    assert "[link](https://evil.invalid)" not in details
    assert "\\[link\\]" in details and "\\<img src=x\\>" in details
    assert "\n## injected heading" not in details
    assert "\x00" not in details and "\x1b" not in details
    assert (
        "\\ud800" not in json.dumps(record)
        and "\ufffd" in record["database_specific"]["changes"][0]["summary"]
    )
    assert "````" in details  # the fence is longer than any backtick run inside
    assert "more lines not shown" in details
    assert len(details) < 10_000
    assert record["affected"][0]["ranges"][0]["events"][0]["introduced"].islower()
    json.dumps(record, allow_nan=False)


def _deep(n: int) -> Any:
    value: Any = "bottom"
    for _ in range(n):
        value = {"d": value}
    return value


def test_summary_is_one_line_within_the_limit() -> None:
    change = Change(ChangeKind.CONFIG, "config.json", "x", severity=Severity.LOW)
    long_id = "some-organisation-with-a-long-name/" + "a-model-name-that-goes-on" * 3
    record = _hostile_record("t", (change,), repo_id=long_id)
    assert len(record["summary"]) <= SUMMARY_MAX
    assert "\n" not in record["summary"]
    assert record["affected"][0]["database_specific"]["purl"] == purl(
        long_id, record["affected"][0]["ranges"][0]["events"][0]["introduced"]
    )


def test_related_ids_are_sorted_unique_and_never_the_own_id() -> None:
    change = Change(ChangeKind.CONFIG, "config.json", "x", severity=Severity.LOW)
    p = pair("gemma-2b-it__chat-template-bos-token")
    own = advisory_id(PREFIX, p.repo_id, p.sha)
    record = _hostile_record(
        "t",
        (change,),
        related=("PYSEC-2024-227", own, "GHSA-37q5-v5qm-c9v8", "PYSEC-2024-227", " "),
    )
    assert record["related"] == ["GHSA-37q5-v5qm-c9v8", "PYSEC-2024-227"]


def test_plan_delta_is_plain_json_and_rendered() -> None:
    change = Change(ChangeKind.CONFIG, "config.json", "x", severity=Severity.MODERATE)
    delta = {
        "params": {"total": {"old": 6738415616, "new": 7241732096}},
        "cards": {"t4": {"serve": {"before": 1, "after": 0}}},
        "ratio": float("inf"),
        "when": datetime(2024, 1, 1, tzinfo=UTC),
    }
    record = _hostile_record("t", (change,), plan_delta=delta)
    assert record["database_specific"]["plan_delta"]["ratio"] == "inf"
    assert "- `params.total`: 6738415616 → 7241732096" in record["details"]
    assert "- `cards.t4.serve`: 1 → 0" in record["details"]


def test_many_changes_are_capped_but_counted() -> None:
    changes = tuple(
        Change(
            ChangeKind.CODE,
            f"pkg/m{i:03d}.py",
            "changed",
            severity=Severity.CRITICAL,
            detail={"unified_diff": "@@\n-a\n+b\n"},
        )
        for i in range(250)
    ) + tuple(Change(ChangeKind.OTHER, f"doc{i}.md", "edited") for i in range(30))
    record = _hostile_record("many", changes)
    specific = record["database_specific"]
    assert len(specific["changes"]) == 200 and specific["changes_omitted"] == 50
    assert "220 more changes are listed" in record["details"]
    assert "- … and 10 more" in record["details"]


def test_every_commit_of_the_corpus_histories_makes_a_valid_record() -> None:
    """Real shas, titles and authors (unicode, long titles) through build_record."""
    seen: set[str] = set()
    count = 0
    for path in sorted(HISTORIES.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for c in data["commits"]:
            if not c["parents"]:
                continue
            changes = tuple(
                Change(ChangeKind.CONFIG if f["path"].endswith(".json") else ChangeKind.OTHER, f["path"], f"{f['status']} {f['path']}",
                       severity=Severity.LOW if f["path"].endswith(".json") else None)
                for f in c["files_changed"]
            )  # fmt: skip
            record = build_record(
                prefix=PREFIX,
                repo_id=data["hf_repo_id"],
                repo_url=f"https://huggingface.co/{data['hf_repo_id']}",
                commit_url=f"https://huggingface.co/{data['hf_repo_id']}/commit/{c['sha']}",
                branch=data["branch"],
                commit=CommitInfo(
                    sha=c["sha"], parents=tuple(c["parents"]), title=c["title"], authors=(c["author"],),
                    committed_at=datetime.fromisoformat(c["date"].replace("Z", "+00:00")),
                ),
                parent=c["parents"][0],
                diff=RevisionDiff(base=c["parents"][0], head=c["sha"], changes=changes),
                plan_delta=None,
                related=(),
                now=NOW + timedelta(seconds=count),
            )  # fmt: skip
            if record is None:
                assert not any(ch.severity for ch in changes)
                continue
            assert_valid(record)
            assert record["id"] not in seen
            seen.add(record["id"])
            count += 1
    assert count > 50


def test_bad_inputs_raise() -> None:
    change = Change(ChangeKind.CONFIG, "config.json", "x", severity=Severity.LOW)
    p = pair("gemma-2b-it__chat-template-bos-token")
    with pytest.raises(ValueError):
        record_for(p, (change,), now=datetime(2026, 1, 1))  # naive time
    with pytest.raises(ValueError):
        build_record(
            prefix=PREFIX, repo_id=p.repo_id, repo_url="", commit_url="", branch="main",
            commit=p.commit(), parent=p.parent, diff=RevisionDiff(p.parent, p.sha, (change,)),
            plan_delta=None, related=(), now=NOW,
        )  # fmt: skip
