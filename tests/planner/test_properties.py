"""Properties of counts and memory that must hold for every config of a family."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.planner.helpers import plan_of

DECODERS = ["llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "phi3", "olmo2",
            "granite", "starcoder2", "gpt_neox", "falcon", "bloom", "gpt2", "mixtral",
            "qwen3_moe"]


def _config(family: str, layers: int, heads: int, head_dim: int, vocab: int,
            tie: bool) -> dict[str, Any]:
    hidden = heads * head_dim
    if family == "gpt2":
        return {"model_type": family, "n_layer": layers, "n_head": heads, "n_embd": hidden,
                "vocab_size": vocab, "tie_word_embeddings": tie}
    return {"model_type": family, "num_hidden_layers": layers, "num_attention_heads": heads,
            "num_key_value_heads": heads, "hidden_size": hidden, "vocab_size": vocab,
            "intermediate_size": 4 * hidden, "tie_word_embeddings": tie, "head_dim": head_dim}


dims = st.fixed_dictionaries({
    "family": st.sampled_from(DECODERS), "layers": st.integers(1, 48),
    "heads": st.sampled_from([1, 2, 4, 8, 16, 32]), "head_dim": st.sampled_from([32, 64, 128]),
    "vocab": st.integers(1, 300_000), "tie": st.booleans(),
})


@settings(max_examples=200, deadline=None)
@given(d=dims, more_layers=st.integers(1, 16))
def test_totals_never_decrease_as_layers_grow(d: dict[str, Any], more_layers: int) -> None:
    a = plan_of(_config(d["family"], d["layers"], d["heads"], d["head_dim"], d["vocab"], d["tie"]))
    b = plan_of(_config(d["family"], d["layers"] + more_layers, d["heads"], d["head_dim"],
                        d["vocab"], d["tie"]))
    assert b.params.total > a.params.total
    assert b.memory.full_finetune > a.memory.full_finetune
    assert b.memory.kv_cache >= a.memory.kv_cache


@settings(max_examples=200, deadline=None)
@given(d=dims)
def test_totals_never_decrease_as_hidden_grows(d: dict[str, Any]) -> None:
    a = plan_of(_config(d["family"], d["layers"], d["heads"], d["head_dim"], d["vocab"], d["tie"]))
    b = plan_of(_config(d["family"], d["layers"], d["heads"] * 2, d["head_dim"], d["vocab"],
                        d["tie"]))
    assert b.params.total > a.params.total
    assert all(fb.serve <= fa.serve for fa, fb in zip(a.cards, b.cards, strict=True))


@settings(max_examples=200, deadline=None)
@given(d=dims)
def test_tied_and_untied_heads_differ_by_vocab_times_hidden(d: dict[str, Any]) -> None:
    tied = plan_of(_config(d["family"], d["layers"], d["heads"], d["head_dim"], d["vocab"], True))
    untied = plan_of(_config(d["family"], d["layers"], d["heads"], d["head_dim"], d["vocab"],
                             False))
    assert untied.params.total - tied.params.total == d["vocab"] * d["heads"] * d["head_dim"]


@settings(max_examples=100, deadline=None)
@given(d=dims)
def test_fp32_to_bf16_halves_weight_bytes(d: dict[str, Any]) -> None:
    base = _config(d["family"], d["layers"], d["heads"], d["head_dim"], d["vocab"], d["tie"])
    fp32 = plan_of({**base, "torch_dtype": "float32"})
    bf16 = plan_of({**base, "torch_dtype": "bfloat16"})
    assert fp32.memory.stored_weights == 2 * bf16.memory.stored_weights
    assert bf16.memory.stored_weights == 2 * bf16.params.total == bf16.memory.serve_weights


@settings(max_examples=100, deadline=None)
@given(d=dims)
def test_more_memory_never_fits_a_bigger_batch(d: dict[str, Any]) -> None:
    p = plan_of(_config(d["family"], d["layers"], d["heads"], d["head_dim"], d["vocab"], d["tie"]))
    for small, big in zip(p.cards, p.cards[1:], strict=False):
        assert big.full_finetune >= small.full_finetune and big.serve >= small.serve
        assert big.lora >= small.lora
    for f in p.cards:
        assert f.lora >= f.full_finetune  # LoRA never needs more than a full fine-tune
