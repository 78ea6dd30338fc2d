"""Templates moving between files, unreadable documents, other files, history rewrites."""

from __future__ import annotations

import json

from tests.diff.helpers import diff_files, only
from tracker.diff import history_rewrite_change
from tracker.model import ChangeKind, Severity

TEMPLATE = "{% for m in messages %}{{ m.content }}{% endfor %}"


def test_template_moved_to_its_own_file_is_not_a_template_change() -> None:
    before = {
        "tokenizer_config.json": json.dumps(
            {"eos_token": "</s>", "chat_template": TEMPLATE}
        ).encode()
    }
    after = {
        "tokenizer_config.json": json.dumps({"eos_token": "</s>"}).encode(),
        "chat_template.jinja": TEMPLATE.encode(),
    }
    d = diff_files(before, after)
    assert [(c.kind, c.path, c.topics) for c in d.changes] == [
        (ChangeKind.TOKENIZER, "tokenizer_config.json", ("tokenizer.format",)),
        (ChangeKind.CHAT_TEMPLATE, "chat_template.jinja", ("chat_template.source",)),
    ]
    assert d.severity is Severity.LOW


def test_template_moved_and_edited() -> None:
    before = {"tokenizer_config.json": json.dumps({"chat_template": TEMPLATE}).encode()}
    after = {
        "tokenizer_config.json": b"{}",
        "chat_template.jinja": b"{{ bos_token }}" + TEMPLATE.encode(),
    }
    d = diff_files(before, after)
    c = only(d, "chat_template.jinja")  # the alphabetically first of the two sources
    assert c.topics == ("chat_template.changed",)
    assert c.detail["sources"] == {"old": "tokenizer_config.json", "new": "chat_template.jinja"}
    assert "tokenizer_config.json" not in {x.path for x in d.changes}  # covered by the move


def test_named_templates_each_get_a_change() -> None:
    tc = {
        "chat_template": [
            {"name": "default", "template": "a"},
            {"name": "tool_use", "template": "b"},
        ]
    }
    tc2 = {
        "chat_template": [{"name": "default", "template": "a"}, {"name": "rag", "template": "c"}]
    }
    d = diff_files(
        {"tokenizer_config.json": json.dumps(tc).encode()},
        {"tokenizer_config.json": json.dumps(tc2).encode()},
    )
    got = sorted((c.detail["name"], c.topics[0]) for c in d.changes)
    assert got == [("rag", "chat_template.added"), ("tool_use", "chat_template.removed")]


def test_a_broken_tokenizer_config_is_unreadable_not_a_removed_template() -> None:
    before = {
        "tokenizer_config.json": json.dumps(
            {"chat_template": TEMPLATE, "bos_token": "<s>"}
        ).encode()
    }
    after = {"tokenizer_config.json": b'{"chat_template": '}
    d = diff_files(before, after)
    topics = sorted(t for c in d.changes for t in c.topics)
    assert topics == ["chat_template.unreadable", "tokenizer.unreadable"]
    assert d.severity is Severity.MODERATE


def test_reserialised_config_and_other_files() -> None:
    cfg = {"model_type": "llama", "hidden_size": 8}
    before = {
        "config.json": json.dumps(cfg).encode(),
        "README.md": b"# v1",
        ".gitattributes": b"*.bin lfs",
    }
    after = {
        "config.json": json.dumps(cfg, indent=2).encode(),
        "README.md": b"# v2",
        "LICENSE": b"MIT",
    }
    d = diff_files(before, after)
    assert [(c.kind.value, c.path, c.topics) for c in d.changes] == [
        ("config", "config.json", ("config.format",)),
        ("other", ".gitattributes", ("other.removed",)),
        ("other", "LICENSE", ("other.added",)),
        ("other", "README.md", ("other.changed",)),
    ]
    assert d.severity is None
    assert only(d, "README.md").summary == "README.md changed"


def test_unreadable_config() -> None:
    d = diff_files({"config.json": b'{"a": 1}'}, {"config.json": b"[" * 100 + b"]" * 100})
    c = only(d, "config.json")
    assert c.topics == ("config.unreadable",) and c.severity is Severity.MODERATE
    assert "levels deep" in c.detail["unreadable"]["head"]


def test_sub_model_configs_are_other_files() -> None:
    d = diff_files({"1_Pooling/config.json": b'{"a": 1}'}, {"1_Pooling/config.json": b'{"a": 2}'})
    assert only(d, "1_Pooling/config.json").kind is ChangeKind.OTHER


def test_history_rewrite() -> None:
    c = history_rewrite_change("1" * 40, "2" * 40, ["1" * 40, "3" * 40])
    assert (c.kind, c.topics) == (ChangeKind.HISTORY, ("history.rewritten",))
    assert c.summary == "history rewritten: 2 known commit(s) vanished (head 1111111 -> 2222222)"
    assert c.detail == {"old_head": "1" * 40, "new_head": "2" * 40, "lost": ["1" * 40, "3" * 40]}
    json.dumps(c.detail)
    moved = history_rewrite_change("1" * 40, "2" * 40, [])
    assert moved.topics == ("history.moved",)


def test_summaries_stay_one_line_whatever_the_repo_names() -> None:
    tc = {"chat_template": [{"name": "evil\nname\x1b[31m", "template": "x"}]}
    d = diff_files(None, {"tokenizer_config.json": json.dumps(tc).encode(), "a\nb.md": b"x" * 5})
    assert len(d.changes) == 2
    for c in d.changes:
        assert "\n" not in c.summary and "\x1b" not in c.summary and len(c.summary) <= 300
