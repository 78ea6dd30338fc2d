"""Changes of the repo itself (issue 10 point 8): namespace reuse and renames get their own
rules and words, a reuse baseline (no parent) is a record, old records are marked."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from advisories.osv import build_record, mark_namespace_reused
from advisories.rules import apply_rules, rule_for
from tests.advisories.osv_helpers import NOW, PREFIX, assert_valid
from tracker.diff import namespace_reuse_change, rename_change
from tracker.model import Change, ChangeKind, CommitInfo, RevisionDiff, Severity

OLD, NEW, LATER_SHA = "a" * 40, "b" * 40, "c" * 40
COMMIT = CommitInfo(NEW, (), datetime(2026, 11, 29, tzinfo=UTC), "initial commit", "", ("someone",))


def _record(changes: list[Change], parent: str | None) -> dict | None:  # type: ignore[type-arg]
    diff = apply_rules(RevisionDiff(base=parent, head=NEW, changes=tuple(changes)))
    return build_record(
        prefix=PREFIX, repo_id="acme/m", repo_url="https://huggingface.co/acme/m",
        commit_url=f"https://huggingface.co/acme/m/commit/{NEW}", branch="main", commit=COMMIT,
        parent=parent, diff=diff, plan_delta=None, related=(), now=NOW,
    )


def test_reuse_is_critical_and_rename_high_with_their_own_reasons() -> None:
    reuse = namespace_reuse_change(OLD, NEW, [OLD], "2026-11-29T00:00:00Z")
    rename = rename_change("old-org/m", "new-org/m")
    assert (reuse.kind, rename.kind) == (ChangeKind.NAMESPACE_REUSE, ChangeKind.RENAME)
    assert rule_for(reuse.topics[0]).severity is Severity.CRITICAL
    assert rule_for(rename.topics[0]).severity is Severity.HIGH
    assert "deleted" in rule_for(reuse.topics[0]).description
    assert "redirect" in rule_for(rename.topics[0]).description
    assert rename.summary == "repo renamed on the Hub: old-org/m -> new-org/m"


def test_a_reuse_baseline_is_a_valid_record_led_by_the_reuse() -> None:
    added = Change(ChangeKind.CONFIG, "config.json", "config.json added: auto_map=...", ("config.auto_map.added",))
    reuse = namespace_reuse_change(OLD, NEW, [OLD], "2026-11-29T00:00:00Z")
    record = _record([added, reuse], parent=None)
    assert record is not None
    assert_valid(record)
    assert record["summary"].startswith(f"acme/m {NEW[:7]}: namespace reused")
    assert record["database_specific"]["parent"] is None
    assert record["database_specific"]["changes"][0]["kind"] == "namespace_reuse"
    assert "a fresh baseline" in record["details"]
    # a root commit without such an event stays a baseline: no record
    assert _record([added], parent=None) is None


def test_old_records_are_marked_once_per_baseline() -> None:
    edit = Change(ChangeKind.CONFIG, "config.json", "max_position_embeddings 2048 -> 4096",
                  ("config.architecture",))
    record = _record([edit], parent=OLD)
    assert record is not None
    later = NOW + timedelta(hours=1)
    marked = mark_namespace_reused(record, baseline=LATER_SHA, now=later)
    assert_valid(marked)
    assert marked["database_specific"]["namespace_reused"]["baseline"] == LATER_SHA
    assert marked["modified"] > record["modified"] and "namespace reused" in marked["details"]
    assert mark_namespace_reused(marked, baseline=LATER_SHA, now=later + timedelta(1)) == marked
