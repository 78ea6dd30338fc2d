"""The models of benchmarks/planner_accuracy.py: corpus configs and shapes written from the
families' published configs (the shrunk MoE and MLA models run with real tensors, since
their routing has data-dependent shapes that fake tensors cannot trace).

Each entry: a name, a config.json dict, the task the traced step trains (``causal``, ``mlm``,
``qa``, ``s2s``, ``image``) and whether it runs on real tensors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "hf-corpus" / "configs"


def _corpus(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((CORPUS / f"{name}.json").read_text())
    return loaded


def _qwen2_05b() -> dict[str, Any]:
    return {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896,
            "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14,
            "num_key_value_heads": 2, "vocab_size": 151936, "max_position_embeddings": 131072,
            "tie_word_embeddings": True, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
            "use_sliding_window": False, "sliding_window": 131072, "max_window_layers": 24,
            "torch_dtype": "bfloat16", "hidden_act": "silu"}


def _smollm2_360m() -> dict[str, Any]:
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 960,
            "intermediate_size": 2560, "num_hidden_layers": 32, "num_attention_heads": 15,
            "num_key_value_heads": 5, "vocab_size": 49152, "max_position_embeddings": 8192,
            "tie_word_embeddings": True, "rms_norm_eps": 1e-5, "rope_theta": 100000,
            "torch_dtype": "bfloat16", "hidden_act": "silu"}


def _qwen3_06b() -> dict[str, Any]:
    return {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 1024,
            "intermediate_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16,
            "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
            "max_position_embeddings": 40960, "tie_word_embeddings": True,
            "rope_theta": 1000000, "use_sliding_window": False, "sliding_window": None,
            "max_window_layers": 28, "torch_dtype": "bfloat16", "hidden_act": "silu",
            "attention_bias": False}


def _gemma3_1b() -> dict[str, Any]:
    return {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text",
            "hidden_size": 1152, "intermediate_size": 6912, "num_hidden_layers": 26,
            "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256,
            "vocab_size": 262144, "max_position_embeddings": 32768, "sliding_window": 512,
            "sliding_window_pattern": 6, "query_pre_attn_scalar": 256,
            "rope_theta": 1000000, "rope_local_base_freq": 10000,
            "hidden_activation": "gelu_pytorch_tanh", "torch_dtype": "bfloat16"}


def _gemma2_2b() -> dict[str, Any]:
    return {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 2304,
            "intermediate_size": 9216, "num_hidden_layers": 26, "num_attention_heads": 8,
            "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 256000,
            "max_position_embeddings": 8192, "sliding_window": 4096,
            "query_pre_attn_scalar": 256, "attn_logit_softcapping": 50.0,
            "final_logit_softcapping": 30.0, "hidden_activation": "gelu_pytorch_tanh",
            "torch_dtype": "float32"}


def _gpt2() -> dict[str, Any]:
    return {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 768,
            "n_layer": 12, "n_head": 12, "vocab_size": 50257, "n_positions": 1024,
            "n_ctx": 1024, "activation_function": "gelu_new"}


def _t5_small() -> dict[str, Any]:
    return {"architectures": ["T5ForConditionalGeneration"], "model_type": "t5", "d_model": 512,
            "d_ff": 2048, "d_kv": 64, "num_heads": 8, "num_layers": 6, "vocab_size": 32128,
            "n_positions": 512, "feed_forward_proj": "relu", "decoder_start_token_id": 0,
            "pad_token_id": 0, "eos_token_id": 1}


def _bart_base() -> dict[str, Any]:
    return {"architectures": ["BartForConditionalGeneration"], "model_type": "bart",
            "d_model": 768, "encoder_layers": 6, "decoder_layers": 6,
            "encoder_attention_heads": 12, "decoder_attention_heads": 12,
            "encoder_ffn_dim": 3072, "decoder_ffn_dim": 3072, "vocab_size": 50265,
            "max_position_embeddings": 1024, "pad_token_id": 1, "bos_token_id": 0,
            "eos_token_id": 2, "decoder_start_token_id": 2, "dropout": 0.1,
            "attention_dropout": 0.1, "activation_dropout": 0.1}


def _vit_imagenet() -> dict[str, Any]:
    return {"architectures": ["ViTForImageClassification"], "model_type": "vit",
            "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
            "num_attention_heads": 12, "image_size": 224, "patch_size": 16,
            "num_channels": 3, "qkv_bias": True,
            "id2label": {str(i): f"class_{i}" for i in range(1000)},
            "label2id": {f"class_{i}": i for i in range(1000)}}


def _qwen3_moe_small() -> dict[str, Any]:
    return {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
            "hidden_size": 256, "intermediate_size": 512, "moe_intermediate_size": 128,
            "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
            "head_dim": 32, "num_experts": 16, "num_experts_per_tok": 4,
            "decoder_sparse_step": 1, "norm_topk_prob": True, "vocab_size": 4096,
            "max_position_embeddings": 256, "tie_word_embeddings": False,
            "router_aux_loss_coef": 0.001, "output_router_logits": False}


def _deepseek_v2_small() -> dict[str, Any]:
    return {"architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2",
            "hidden_size": 256, "intermediate_size": 512, "moe_intermediate_size": 128,
            "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 8,
            "n_routed_experts": 16, "num_experts_per_tok": 4, "n_shared_experts": 2,
            "first_k_dense_replace": 1, "kv_lora_rank": 64, "q_lora_rank": None,
            "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32,
            "n_group": 1, "topk_group": 1, "topk_method": "greedy", "vocab_size": 4096,
            "max_position_embeddings": 256, "tie_word_embeddings": False}


def _mamba_130m_2_layers() -> dict[str, Any]:
    """state-spaces/mamba-130m-hf's shapes with 2 of its 24 layers (the PyTorch scan is a
    Python loop over the tokens: traced at 128 tokens, see TOKENS)."""
    return {"architectures": ["MambaForCausalLM"], "model_type": "mamba", "hidden_size": 768,
            "num_hidden_layers": 2, "vocab_size": 50280, "state_size": 16, "expand": 2,
            "conv_kernel": 4, "time_step_rank": 48, "use_bias": False, "use_conv_bias": True,
            "torch_dtype": "float32"}


def _jamba_small() -> dict[str, Any]:
    """Jamba-v0.1's layer pattern shrunk: 4 layers (attention at index 2, Mamba elsewhere),
    dense MLPs (one expert: fake tensors cannot route), hidden 256."""
    return {"architectures": ["JambaForCausalLM"], "model_type": "jamba", "hidden_size": 256,
            "intermediate_size": 704, "num_hidden_layers": 4, "num_attention_heads": 8,
            "num_key_value_heads": 2, "attn_layer_period": 4, "attn_layer_offset": 2,
            "num_experts": 1, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2,
            "vocab_size": 8192, "max_position_embeddings": 4096, "use_mamba_kernels": False,
            "torch_dtype": "bfloat16"}


#: Models traced (and planned) at a given length instead of min(2048, context).
TOKENS = {"Mamba-130m (2 layers)": 128, "Jamba (shrunk, dense)": 128}


def models() -> list[tuple[str, dict[str, Any], str, bool]]:
    """(name, config, task, real tensors) for every benchmark model, in table order."""
    return [
        ("distilbert-base-uncased", _corpus("distilbert__distilbert-base-uncased"), "mlm", False),
        ("bert-base-uncased", _corpus("google-bert__bert-base-uncased"), "mlm", False),
        ("xlm-roberta-base", _corpus("FacebookAI__xlm-roberta-base"), "mlm", False),
        ("distilroberta-base", _corpus("distilbert__distilroberta-base"), "mlm", False),
        ("roberta-base-squad2", _corpus("deepset__roberta-base-squad2"), "qa", False),
        ("gpt2", _gpt2(), "causal", False),
        ("opt-125m", _corpus("facebook__opt-125m"), "causal", False),
        ("bloom-560m", _corpus("bigscience__bloom-560m"), "causal", False),
        ("Qwen2-0.5B", _qwen2_05b(), "causal", False),
        ("SmolLM2-360M", _smollm2_360m(), "causal", False),
        ("Llama-3.2-1B", _corpus("meta-llama__Llama-3.2-1B"), "causal", False),
        ("Qwen3-0.6B", _qwen3_06b(), "causal", False),
        ("Qwen3-4B", _corpus("Qwen__Qwen3-4B-Thinking-2507"), "causal", False),
        ("Gemma-3-1B", _gemma3_1b(), "causal", False),
        ("Gemma-2-2B (sliding window)", _gemma2_2b(), "causal", False),
        ("Mistral-7B-v0.3", _corpus("mistralai__Mistral-7B-Instruct-v0.3"), "causal", False),
        ("T5-small", _t5_small(), "s2s", False),
        ("flan-t5-large", _corpus("google__flan-t5-large"), "s2s", False),
        ("bart-base", _bart_base(), "s2s", False),
        ("ViT-base ImageNet-1k", _vit_imagenet(), "image", False),
        ("Qwen3-MoE (shrunk)", _qwen3_moe_small(), "causal", True),
        ("DeepSeek-V2-Lite-shaped MLA (shrunk)", _deepseek_v2_small(), "causal", True),
        ("Mamba-130m (2 layers)", _mamba_130m_2_layers(), "causal", False),
        ("Jamba (shrunk, dense)", _jamba_small(), "causal", False),
    ]
