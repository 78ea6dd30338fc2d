"""The severity table: each rule on its own, the table as a whole, and DESIGN.md's rows on real changes."""

from __future__ import annotations

import json

import pytest

from advisories.rules import RULES, Rule, apply_rules, classify, rule_for, rules_markdown
from tests.corpus import CORPUS
from tests.diff.helpers import diff_files, only
from tests.extract.snapshots import lfs, load_pair
from tracker.diff import history_rewrite_change
from tracker.diff.topics import ALL_TOPICS
from tracker.model import Change, ChangeKind, RevisionDiff, Severity

Pairs = dict[str, tuple[dict[str, bytes], dict[str, bytes]]]
C, H, M, L = Severity.CRITICAL, Severity.HIGH, Severity.MODERATE, Severity.LOW


def change(*topics: str, kind: ChangeKind = ChangeKind.OTHER) -> Change:
    return Change(kind=kind, path="x", summary="x", topics=topics)


#: Topics tracker.pipeline adds beside the diff's (read errors, plan delta, an analysis cut short, restores).
PIPELINE_TOPICS = frozenset({"read.error", "plan.delta", "analysis.cut", "restore.earlier"})
KNOWN_TOPICS = ALL_TOPICS | PIPELINE_TOPICS


def topics_of(rule: Rule) -> list[str]:
    return sorted(t for t in KNOWN_TOPICS if rule.matches(t))


@pytest.mark.parametrize("rule", RULES, ids=[r.pattern for r in RULES])
def test_each_rule(rule: Rule) -> None:
    """Every rule is live (some emitted topic hits it) and gives that topic its severity."""
    hits = topics_of(rule)
    assert hits, f"no topic the diff emits matches {rule.pattern!r}"
    for topic in hits:
        assert rule_for(topic) is rule
        assert classify(change(topic)) is rule.severity
    assert rule.description and "|" not in rule.pattern


def test_every_topic_matches_exactly_one_rule() -> None:
    for topic in sorted(KNOWN_TOPICS):
        matching = [r.pattern for r in RULES if r.matches(topic)]
        assert len(matching) == 1, (topic, matching)


def test_the_highest_severity_wins_and_no_rule_means_none() -> None:
    assert classify(change("config.other", "config.rope", "config.bookkeeping")) is M
    assert classify(change("config.bookkeeping", "weights.pickle.added")) is C
    assert classify(change("config.bookkeeping")) is None
    assert classify(change("not.a.topic")) is None
    assert classify(change()) is None


def test_apply_rules_sets_severities_and_keeps_the_rest() -> None:
    diff = RevisionDiff(
        base="a" * 40,
        head="b" * 40,
        changes=(
            change("chat_template.changed"),
            change("other.changed"),
            change("generation.sampling"),
        ),
    )
    out = apply_rules(diff)
    assert [c.severity for c in out.changes] == [H, None, L]
    assert out.severity is H
    assert [(c.topics, c.summary) for c in out.changes] == [
        (c.topics, c.summary) for c in diff.changes
    ]
    assert (out.base, out.head) == (diff.base, diff.head)
    assert apply_rules(out) == out


def test_rules_markdown_lists_every_rule() -> None:
    md = rules_markdown()
    rows = [line for line in md.splitlines() if line.startswith("| ") and "`" in line]
    assert len(rows) == len(RULES)
    for rule, row in zip(RULES, rows, strict=True):
        assert f"`{rule.pattern}`" in row
        assert row.startswith(f"| {rule.severity.value if rule.severity else 'none'} |")


# -- DESIGN.md's severity table, one row at a time, on real or minimal revisions ------------


def pair(name: str) -> tuple[dict[str, bytes], dict[str, bytes]]:
    assert (CORPUS / "changes" / name).is_dir()
    return load_pair(name)


@pytest.fixture(scope="module")
def pairs() -> Pairs:
    names = [
        "falcon-7b-instruct__revert-in-library-63",
        "llama2-7b-hf__weights-reshard-bin-3-to-2-shards",
        "opt-1.3b__weights-corrected",
        "gemma-2b-it__chat-template-bos-token",
        "gemma-2b-it__tokenizer-model-replaced",
        "llama2-7b-hf__tokenizer-normalized-and-pad",
        "llama-3.2-3b-instruct__rope-scaling-factor-8-to-32",
        "llama2-7b-hf__config-max-position-2048-to-4096",
        "mixtral-8x7b-v0.1__sliding-window-churn",
        "granite-3.1-1b-a400m-instruct__bf16-weights",
        "bloom-560m__fix-architecture",
        "falcon-7b-instruct__move-to-in-library-56",
        "llama2-7b-hf__generation-config-sampling-defaults",
        "llama2-7b-hf__tokenizer-padding-side",
        "mixtral-8x7b-v0.1__output-router-logits",
        "mistral-7b-instruct-v0.3__config-name-or-path-removed",
    ]
    return {n: pair(n) for n in names}


def test_critical_auto_map_changed(pairs: Pairs) -> None:
    d = diff_files(*pairs["falcon-7b-instruct__revert-in-library-63"])
    assert only(d, "config.json").severity is C


def test_critical_custom_code_loaded_by_auto_map() -> None:
    cfg = json.dumps({"auto_map": {"AutoModel": "modeling_x.M"}}).encode()
    d = diff_files(
        {"config.json": cfg, "modeling_x.py": b"a = 1\n"},
        {"config.json": cfg, "modeling_x.py": b"a = 2\n"},
    )
    assert only(d, "modeling_x.py").severity is C


def test_critical_pickle_added_or_replaced(pairs: Pairs) -> None:
    d = diff_files(*pairs["llama2-7b-hf__weights-reshard-bin-3-to-2-shards"])
    assert only(d, "pytorch_model-00001-of-00002.bin").severity is C
    d = diff_files(*pairs["opt-1.3b__weights-corrected"])
    assert only(d, "pytorch_model.bin").severity is C


def test_critical_history_rewritten() -> None:
    c = history_rewrite_change("a" * 40, "b" * 40, ["a" * 40])
    assert classify(c) is C


def test_high_weights_replaced_under_the_same_name() -> None:
    d = diff_files({"model.safetensors": lfs("a", 1)}, {"model.safetensors": lfs("b", 1)})
    assert only(d, "model.safetensors").severity is H


def test_high_tokenizer_and_template(pairs: Pairs) -> None:
    assert diff_files(*pairs["gemma-2b-it__chat-template-bos-token"]).severity is H
    assert diff_files(*pairs["gemma-2b-it__tokenizer-model-replaced"]).severity is H
    assert diff_files(*pairs["llama2-7b-hf__tokenizer-normalized-and-pad"]).severity is H


def test_moderate_config_fields(pairs: Pairs) -> None:
    for name in (
        "llama-3.2-3b-instruct__rope-scaling-factor-8-to-32",
        "llama2-7b-hf__config-max-position-2048-to-4096",
        "mixtral-8x7b-v0.1__sliding-window-churn",
        "bloom-560m__fix-architecture",
    ):
        assert diff_files(*pairs[name]).severity is M, name
    d = diff_files(*pairs["granite-3.1-1b-a400m-instruct__bf16-weights"])
    assert only(d, "config.json").severity is M  # torch_dtype


def test_moderate_generation_token_ids(pairs: Pairs) -> None:
    d = diff_files(*pairs["falcon-7b-instruct__move-to-in-library-56"])
    assert only(d, "generation_config.json").severity is M


def test_low_defaults_and_other_config(pairs: Pairs) -> None:
    for name in (
        "llama2-7b-hf__generation-config-sampling-defaults",
        "llama2-7b-hf__tokenizer-padding-side",
        "mixtral-8x7b-v0.1__output-router-logits",
    ):
        assert diff_files(*pairs[name]).severity is L, name


def test_none_for_model_card_and_bookkeeping(pairs: Pairs) -> None:
    assert diff_files({"README.md": b"a"}, {"README.md": b"b"}).severity is None
    assert (
        diff_files(*pairs["mistral-7b-instruct-v0.3__config-name-or-path-removed"]).severity is None
    )
