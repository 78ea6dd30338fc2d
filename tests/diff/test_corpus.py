"""Real upstream changes (hf-corpus/changes) diffed end to end, with their severities."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.diff.helpers import diff_files, only, view
from tests.extract.snapshots import entry_for, pair_names
from tracker.diff.topics import ALL_TOPICS
from tracker.model import ChangeKind, Severity

Pairs = dict[str, tuple[dict[str, bytes], dict[str, bytes]]]


def fields(change: Any) -> dict[str, dict[str, Any]]:
    return {f["path"]: f for f in change.detail["fields"]}


def test_rope_factor_is_a_moderate_config_change(corpus_pairs: Pairs) -> None:
    d = diff_files(*corpus_pairs["llama-3.2-3b-instruct__rope-scaling-factor-8-to-32"])
    c = only(d, "config.json")
    assert (c.kind, c.topics, c.severity) == (
        ChangeKind.CONFIG,
        ("config.rope",),
        Severity.MODERATE,
    )
    f = fields(c)["rope_scaling.factor"]
    assert (f["op"], f["old"], f["new"]) == ("changed", 8.0, 32.0)
    assert c.summary == "rope_scaling.factor 8.0 -> 32.0"
    assert len(d.changes) == 1 and d.severity is Severity.MODERATE


def test_falcon_regaining_remote_code_is_critical(corpus_pairs: Pairs) -> None:
    d = diff_files(*corpus_pairs["falcon-7b-instruct__revert-in-library-63"])
    cfg = only(d, "config.json")
    assert "config.auto_map.changed" in cfg.topics and "config.architecture" in cfg.topics
    assert cfg.severity is Severity.CRITICAL
    f = fields(cfg)
    assert f["auto_map.AutoModelForCausalLM"]["new"] == "modelling_RW.RWForCausalLM"
    assert f["auto_map.AutoModel"]["op"] == "removed"
    assert f["model_type"]["old"] == "falcon" and f["model_type"]["new"] == "RefinedWebModel"
    assert cfg.summary.startswith("config.json: auto_map.")  # the telling field first
    gen = only(d, "generation_config.json")
    assert gen.severity is Severity.MODERATE and "generation.token_ids" in gen.topics
    assert only(d, "tokenizer_config.json").severity is Severity.LOW
    assert d.severity is Severity.CRITICAL


def test_gemma_bos_fix_shows_the_bos_in_the_rendered_prompt(corpus_pairs: Pairs) -> None:
    d = diff_files(*corpus_pairs["gemma-2b-it__chat-template-bos-token"])
    c = only(d, "tokenizer_config.json")
    assert (c.kind, c.topics, c.severity) == (
        ChangeKind.CHAT_TEMPLATE,
        ("chat_template.changed",),
        Severity.HIGH,
    )
    assert c.summary.startswith("chat template 'default' changed: now starts with bos_token")
    rows = {r["probe"]: r for r in c.detail["rendered"]}
    multi = rows["multi_turn"]
    assert multi["changed"] and multi["new"].startswith("<bos><start_of_turn>user")
    assert not multi["old"].startswith("<bos>")
    assert "+<bos><start_of_turn>user" in multi["diff"].splitlines()
    # gemma refuses a system role on both sides: the same error, not a difference
    assert rows["system_user"]["old_error"] == rows["system_user"]["new_error"]
    assert "System role not supported" in rows["system_user"]["new_error"]
    assert not rows["system_user"]["changed"]
    text_lines = c.detail["text"]["diff"].splitlines()
    assert any(line.startswith("+{{ bos_token }}{% if") for line in text_lines)
    assert (c.detail["text"]["added"], c.detail["text"]["removed"]) == (1, 1)


def test_llama2_sampling_defaults_are_low(corpus_pairs: Pairs) -> None:
    d = diff_files(*corpus_pairs["llama2-7b-hf__generation-config-sampling-defaults"])
    c = only(d, "generation_config.json")
    assert (c.kind, c.topics, c.severity) == (
        ChangeKind.GENERATION_CONFIG,
        ("generation.sampling",),
        Severity.LOW,
    )
    f = fields(c)
    assert (f["temperature"]["old"], f["temperature"]["new"]) == (0.9, 0.6)
    assert (f["top_p"]["old"], f["top_p"]["new"]) == (0.6, 0.9)
    assert f["do_sample"]["op"] == "added" and f["do_sample"]["new"] is True


def test_whisper_alignment_heads(corpus_pairs: Pairs) -> None:
    d = diff_files(*corpus_pairs["whisper-medium__generation-config-alignment-heads"])
    c = only(d, "generation_config.json")
    assert set(c.topics) == {"generation.other", "generation.bookkeeping"}
    assert c.severity is Severity.LOW
    f = fields(c)["alignment_heads"]
    assert f["op"] == "added" and len(f["new"]) == 6 and f["topic"] == "generation.other"


def test_pickle_reshard_is_critical(corpus_pairs: Pairs) -> None:
    d = diff_files(*corpus_pairs["llama2-7b-hf__weights-reshard-bin-3-to-2-shards"])
    added = [c for c in d.changes if "weights.pickle.added" in c.topics]
    removed = [c for c in d.changes if "weights.pickle.removed" in c.topics]
    assert [c.path for c in added] == [f"pytorch_model-0000{i}-of-00002.bin" for i in (1, 2)]
    assert len(removed) == 3
    assert all(c.severity is Severity.CRITICAL for c in added)
    assert all("weights.reupload" in c.topics for c in added + removed)
    assert (
        added[0].summary
        == "pickle weights added: pytorch_model-00001-of-00002.bin (pickle, 9.98 GB)"
    )
    idx = only(d, "pytorch_model.bin.index.json")
    assert idx.topics == ("weights.index",)
    assert idx.detail["total_size"] == {"old": 26953670656, "new": 13476839424}
    assert idx.detail["shards"]["new"] == [f"pytorch_model-0000{i}-of-00002.bin" for i in (1, 2)]
    assert "model.safetensors.index.json" not in {c.path for c in d.changes}  # unchanged bytes
    cfg = only(d, "config.json")
    assert (
        set(cfg.topics) == {"config.bookkeeping", "config.other"} and cfg.severity is Severity.LOW
    )
    assert d.severity is Severity.CRITICAL


def test_weights_corrected_in_place(corpus_pairs: Pairs) -> None:
    d = diff_files(*corpus_pairs["opt-1.3b__weights-corrected"])
    w = only(d, "pytorch_model.bin")
    assert w.topics == ("weights.pickle.replaced",) and w.severity is Severity.CRITICAL
    assert w.detail["old"]["size"] == 2631628157 and w.detail["new"]["size"] == 2631639353
    cfg = only(d, "config.json")
    assert cfg.topics == ("config.bookkeeping",) and cfg.severity is None


def test_safetensors_beside_pickle(corpus_pairs: Pairs) -> None:
    d = diff_files(*corpus_pairs["bert-base-uncased__safetensors-added"])
    c = only(d, "model.safetensors")
    assert c.topics == ("weights.added",) and c.severity is Severity.MODERATE
    assert len(d.changes) == 1  # pytorch_model.bin is unchanged


def test_bf16_reupload_under_new_names(corpus_pairs: Pairs) -> None:
    d = diff_files(*corpus_pairs["granite-3.1-1b-a400m-instruct__bf16-weights"])
    assert set(only(d, "model.safetensors").topics) == {"weights.added", "weights.reupload"}
    assert only(d, "model.safetensors").severity is Severity.HIGH
    assert only(d, "config.json").topics == ("config.dtype",)
    assert only(d, "model.safetensors.index.json").detail["op"] == "removed"


def test_tokenizer_model_replaced_is_a_vocab_change(corpus_pairs: Pairs) -> None:
    d = diff_files(*corpus_pairs["gemma-2b-it__tokenizer-model-replaced"])
    c = only(d, "tokenizer.model")
    assert (c.kind, c.topics, c.severity) == (
        ChangeKind.TOKENIZER,
        ("tokenizer.vocab_file.changed",),
        Severity.HIGH,
    )
    assert c.summary == "tokenizer.model replaced (4241111 -> 4241003 bytes)"


def test_special_token_respelled_is_low_but_flags_are_high(corpus_pairs: Pairs) -> None:
    d = diff_files(*corpus_pairs["llama-3.2-3b-instruct__special-tokens-map-expanded"])
    c = only(d, "special_tokens_map.json")
    assert c.topics == ("tokenizer.special_tokens.format",) and c.severity is Severity.LOW
    d = diff_files(*corpus_pairs["llama2-7b-hf__tokenizer-normalized-and-pad"])
    c = only(d, "special_tokens_map.json")
    assert c.topics == ("tokenizer.special_tokens",) and c.severity is Severity.HIGH


def test_add_bos_token_flip(corpus_pairs: Pairs) -> None:
    for name in ("deepseek-r1__add-bos-token-flip", "deepseek-r1__add-bos-token-flip-back"):
        d = diff_files(*corpus_pairs[name])
        c = only(d, "tokenizer_config.json")
        assert c.topics == ("tokenizer.add_special_tokens",) and c.severity is Severity.HIGH


def test_chat_template_json_removed_but_template_unchanged(corpus_pairs: Pairs) -> None:
    d = diff_files(*corpus_pairs["gpt-oss-20b__chat-template-json-removed"])
    c = only(d, "chat_template.json")
    assert (c.kind, c.topics, c.severity) == (
        ChangeKind.CHAT_TEMPLATE,
        ("chat_template.source",),
        Severity.LOW,
    )
    assert "unchanged" in c.summary


def test_chat_template_added_and_rewritten(corpus_pairs: Pairs) -> None:
    d = diff_files(*corpus_pairs["mistral-7b-instruct-v0.3__chat-template-added"])
    c = only(d, "tokenizer_config.json", "chat_template")
    assert c.topics == ("chat_template.added",) and c.severity is Severity.HIGH
    assert {r["probe"] for r in c.detail["rendered"]} >= {"system_user", "tool_call"}
    d = diff_files(*corpus_pairs["gpt-oss-20b__chat-template-rewrite-82"])
    c = only(d, "chat_template.jinja")
    assert c.topics == ("chat_template.changed",)
    text = c.detail["text"]
    assert text["diff"].startswith("--- a/chat_template.jinja\n+++ b/chat_template.jinja")
    assert text["added"] > 0 and text["removed"] > 0


def test_bookkeeping_only_is_no_advisory(corpus_pairs: Pairs) -> None:
    d = diff_files(*corpus_pairs["mistral-7b-instruct-v0.3__config-name-or-path-removed"])
    assert only(d, "config.json").topics == ("config.bookkeeping",)
    assert d.severity is None


NAMES = pair_names()


@pytest.mark.parametrize("name", NAMES)
def test_every_changed_path_is_reported_once_per_kind(corpus_pairs: Pairs, name: str) -> None:
    before, after = corpus_pairs[name]
    d = diff_files(before, after)
    old = {p: entry_for(p, b).content_id for p, b in before.items()}
    new = {p: entry_for(p, b).content_id for p, b in after.items()}
    changed = {p for p in old.keys() | new.keys() if old.get(p) != new.get(p)}
    reported = {c.path for c in d.changes}
    assert changed <= reported, changed - reported
    assert reported <= changed
    for c in d.changes:
        assert c.topics and set(c.topics) <= ALL_TOPICS
        json.dumps(c.detail)  # JSON-able for the UI and the advisory
        assert c.summary and "\n" not in c.summary


@pytest.mark.parametrize("name", NAMES)
def test_corpus_diff_properties(corpus_pairs: Pairs, name: str) -> None:
    before, after = corpus_pairs[name]
    assert diff_files(after, after).changes == ()
    assert view(diff_files(after, before)) == view(diff_files(before, after), invert=True)
    root = diff_files(None, after)
    assert root.base is None
    assert {c.path for c in root.changes} >= set(after)
    assert all(c.detail.get("op") in (None, "added") for c in root.changes)
