"""parse_model_config: each family's key names, defaults and derived values."""

from __future__ import annotations

import json

from tests.planner.helpers import CHANGES, load, plan_of
from tracker.extract.model_config import parse_model_config
from tracker.planner import compare


def test_gpt2_key_names_and_their_canonical_spelling_agree() -> None:
    a = parse_model_config({"model_type": "gpt2", "n_embd": 256, "n_layer": 3, "n_head": 4,
                            "n_positions": 128, "vocab_size": 1000})
    b = parse_model_config({"model_type": "gpt2", "hidden_size": 256, "num_hidden_layers": 3,
                            "num_attention_heads": 4, "max_position_embeddings": 128,
                            "vocab_size": 1000})
    assert (a.hidden_size, a.num_layers, a.num_heads, a.context) == (256, 3, 4, 128)
    assert (b.hidden_size, b.num_layers, b.num_heads, b.context) == (256, 3, 4, 128)
    assert a.intermediate_size == 1024  # n_inner None -> 4h


def test_distilbert_keys() -> None:
    c = parse_model_config(load("distilbert__distilbert-base-uncased.json"))
    assert (c.hidden_size, c.num_layers, c.num_heads, c.intermediate_size) == (768, 6, 12, 3072)


def test_defaults_fill_missing_keys() -> None:
    c = parse_model_config({"model_type": "llama", "hidden_size": 2048,
                            "num_attention_heads": 16})
    assert c.num_layers == 32 and c.vocab_size == 32000  # LlamaConfig defaults
    assert c.head_dim == 128 and c.num_kv_heads == 16  # derived, not the defaults' 4096/32


def test_falcon_old_and_new_key_names_plan_the_same_model() -> None:
    """PR #56 moved falcon-7b-instruct in-library, renaming n_head/n_layer: same model."""
    d = CHANGES / "falcon-7b-instruct__move-to-in-library-56"
    before = json.loads((d / "before" / "config.json").read_text())
    after = json.loads((d / "after" / "config.json").read_text())
    assert before["model_type"] == "RefinedWebModel" and "n_head" in before
    pa, pb = plan_of(before), plan_of(after)
    assert pa.params.total == pb.params.total == 6_921_720_704
    delta = compare(pa, pb)
    assert delta.params_total[0] == delta.params_total[1] and not delta.cards


def test_falcon_old_keys_under_the_new_model_type_are_flagged() -> None:
    config = load("tiiuae__falcon-7b-instruct.json")
    config["n_layer"] = config.pop("num_hidden_layers")
    p = plan_of(config)
    assert any(f.id == "falcon-old-keys-ignored" for f in p.findings)


def test_num_labels_wins_over_id2label_and_t5_ties_its_head() -> None:
    c = parse_model_config({"model_type": "bert", "num_labels": 5,
                            "id2label": {"0": "a", "1": "b"}})
    assert c.values["num_labels"] == 5
    c = parse_model_config({"model_type": "bert", "id2label": {"0": "a", "1": "b", "2": "c"}})
    assert c.values["num_labels"] == 3
    t5 = parse_model_config(load("google__t5-v1_1-base.json"))
    assert t5.tie_word_embeddings and load("google__t5-v1_1-base.json")["tie_word_embeddings"] \
        is False


def test_multimodal_gemma3_reads_its_towers() -> None:
    c = parse_model_config(load("google__medgemma-27b-it.json"))
    assert c.family == "gemma3" and set(c.sub) == {"text", "vision"}
    assert c.hidden_size == 5376 and c.sub["vision"].hidden_size == 1152
    assert c.layer_types.count("full_attention") == 10 and c.sliding_window == 1024


def test_quantization_and_rope_are_typed() -> None:
    r1 = parse_model_config(load("deepseek-ai__DeepSeek-R1.json"))
    assert r1.quantization is not None and r1.quantization.bits == 8
    assert r1.rope_scaling is not None and r1.rope_scaling.factor == 40
    oss = parse_model_config(load("openai__gpt-oss-20b.json"))
    assert oss.quantization is not None and oss.quantization.scope == "experts"
    bnb = parse_model_config({"model_type": "llama", "quantization_config": {
        "quant_method": "bitsandbytes", "load_in_4bit": True}})
    assert bnb.quantization is not None and bnb.quantization.bits == 4
