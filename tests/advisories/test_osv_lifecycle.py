"""Record lifecycle: fixed by a restoring revision, history rewritten, withdrawn; never deleted."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from advisories.osv import (
    add_fixed,
    changed_paths,
    content_ids,
    is_open,
    mark_history_rewritten,
    restores,
    set_related,
    withdraw,
)
from tests.advisories.osv_helpers import NOW, assert_valid, config_change, pair, record_for
from tracker.model.core import ChangeKind, Severity

LATER = NOW + timedelta(days=1)
MOVE = pair("falcon-7b-instruct__move-to-in-library-56")  # c7f670a -> f8dac3f
REVERT = pair("falcon-7b-instruct__revert-in-library-63")  # f8dac3f -> eb410fb
AGAIN = pair("falcon-7b-instruct__move-to-in-library-88")  # eb410fb -> cf4b3c4


@pytest.fixture
def record() -> dict[str, Any]:
    made = record_for(
        MOVE,
        (
            config_change(MOVE, "config.json", ChangeKind.CONFIG, Severity.CRITICAL),
            config_change(
                MOVE, "generation_config.json", ChangeKind.GENERATION_CONFIG, Severity.MODERATE
            ),
        ),
    )
    assert made is not None
    return made


def test_the_falcon_revert_restores_the_move_and_fixes_its_advisory(record: dict[str, Any]) -> None:
    paths = changed_paths(record)
    assert paths == ["config.json", "generation_config.json"]
    before = content_ids(MOVE.files("before"), paths)  # at the advisory's parent
    assert restores(paths, before, content_ids(REVERT.files("after"), paths))
    assert not restores(paths, before, content_ids(MOVE.files("after"), paths))
    assert not restores(paths, before, content_ids(AGAIN.files("after"), paths))
    assert not restores([], before, before)

    fixed = add_fixed(record, REVERT.sha, LATER)
    assert_valid(fixed)
    assert fixed["affected"][0]["ranges"][0]["events"] == [
        {"introduced": MOVE.sha},
        {"fixed": REVERT.sha},
    ]
    assert fixed["modified"] == "2026-12-01T05:00:00Z"
    assert fixed["published"] == record["published"]
    assert {
        "type": "FIX",
        "url": f"https://huggingface.co/{MOVE.repo_id}/commit/{REVERT.sha}",
    } in fixed["references"]
    assert f"fixed: revision `{REVERT.sha}`" in fixed["details"]
    assert is_open(record) and not is_open(fixed)
    assert record["affected"][0]["ranges"][0]["events"] == [
        {"introduced": MOVE.sha}
    ]  # input untouched


def test_the_deepseek_flip_back_restores_the_flip() -> None:
    flip = pair("deepseek-r1__add-bos-token-flip")
    back = pair("deepseek-r1__add-bos-token-flip-back")
    paths = ["tokenizer_config.json"]
    before = content_ids(flip.files("before"), paths)
    assert restores(paths, before, content_ids(back.files("after"), paths))  # byte-identical
    assert not restores(paths, before, {"tokenizer_config.json": "git:" + "0" * 40})


def test_a_file_the_advisory_added_is_restored_by_removing_it() -> None:
    assert restores(["extra.py"], {"extra.py": None}, {})
    assert not restores(["extra.py"], {"extra.py": None}, {"extra.py": "git:" + "1" * 40})


def test_adding_the_same_fix_twice_changes_nothing(record: dict[str, Any]) -> None:
    fixed = add_fixed(record, REVERT.sha, LATER)
    assert add_fixed(fixed, REVERT.sha, LATER + timedelta(days=1)) == fixed
    with pytest.raises(ValueError):
        add_fixed(record, MOVE.sha, LATER)  # introduced and fixed at once
    with pytest.raises(ValueError):
        add_fixed(record, "eb410fb", LATER)


def test_modified_always_moves_forward_even_when_the_clock_lags(record: dict[str, Any]) -> None:
    earlier = NOW - timedelta(hours=3)
    fixed = add_fixed(record, REVERT.sha, earlier)
    assert fixed["modified"] == "2026-11-30T05:00:01Z"
    marked = mark_history_rewritten(fixed, new_head=AGAIN.sha, now=earlier)
    assert marked["modified"] == "2026-11-30T05:00:02Z"
    assert_valid(marked)


def test_history_rewrite_marks_the_record_and_keeps_it_valid(record: dict[str, Any]) -> None:
    marked = mark_history_rewritten(record, new_head=AGAIN.sha.upper(), now=LATER)
    assert_valid(marked)
    assert marked["database_specific"]["history_rewritten"] == {
        "new_head": AGAIN.sha,
        "marked": "2026-12-01T05:00:00Z",
    }
    assert "## Record history" in marked["details"] and "history rewritten" in marked["details"]
    assert marked["affected"] == record["affected"]  # the range still names the commit
    assert mark_history_rewritten(marked, new_head=AGAIN.sha, now=LATER + timedelta(1)) == marked
    twice = mark_history_rewritten(marked, new_head=REVERT.sha, now=LATER + timedelta(1))
    assert twice["details"].count("history rewritten") == 2
    assert_valid(twice)


def test_withdrawn_records_stay_whole_and_valid(record: dict[str, Any]) -> None:
    gone = withdraw(
        record, "false positive:\nthe change was\ta re-upload of identical weights", LATER
    )
    assert_valid(gone)
    assert gone["withdrawn"] == gone["modified"] == "2026-12-01T05:00:00Z"
    assert gone["summary"].startswith("WITHDRAWN (false positive: the change was a re-upload")
    assert len(gone["summary"]) <= 120
    assert gone["details"].startswith("**Withdrawn** 2026-12-01T05:00:00Z: false positive")
    assert gone["affected"] == record["affected"] and gone["id"] == record["id"]
    assert gone["database_specific"]["withdrawn_reason"].startswith("false positive")
    assert not is_open(gone)
    assert withdraw(gone, "again", LATER + timedelta(days=1)) == gone


def test_a_fixed_then_withdrawn_record_keeps_its_whole_story(record: dict[str, Any]) -> None:
    fixed = add_fixed(record, REVERT.sha, LATER)
    marked = mark_history_rewritten(fixed, new_head=AGAIN.sha, now=LATER + timedelta(hours=1))
    gone = withdraw(marked, "duplicate", LATER + timedelta(hours=2))
    assert_valid(gone)
    lines = [
        line
        for line in gone["details"].split("## Record history", 1)[1].splitlines()
        if line.startswith("- ")
    ]
    assert [line.split(": ", 1)[1].split(":")[0] for line in lines] == [
        "fixed",
        "history rewritten",
        "withdrawn",
    ]
    assert list(gone)[:5] == ["schema_version", "id", "published", "modified", "withdrawn"]


def test_set_related_bumps_only_on_change(record: dict[str, Any]) -> None:
    same = set_related(record, [], LATER)
    assert same == record
    more = set_related(record, ["PYSEC-2024-227", "GHSA-37q5-v5qm-c9v8", record["id"]], LATER)
    assert more["related"] == ["GHSA-37q5-v5qm-c9v8", "PYSEC-2024-227"]
    assert more["modified"] == "2026-12-01T05:00:00Z"
    assert_valid(more)
    assert "related" not in set_related(more, [], LATER + timedelta(1))
