"""Recurrent layers (linear attention, SSM) hold a fixed state per sequence, not a KV cache."""

from __future__ import annotations

from dataclasses import replace

from tracker.planner.layers import LayerSpec, attention_label
from tracker.planner.memory import kv_cache
from tracker.planner.recurrent import gated_delta_net, mamba1, mamba2

ATTN = LayerSpec("decoder", "gqa", 2048, 2048, 512, 512, 1024, None, "gated", 5632)


def test_gated_delta_net_state_of_qwen3_next_80b() -> None:
    # Qwen3-Next-80B-A3B: 16 key heads and 32 value heads of 128, kernel 4
    s = gated_delta_net(key_heads=16, value_heads=32, key_dim=128, value_dim=128, conv_kernel=4)
    assert s.conv_channels == 2 * 16 * 128 + 32 * 128
    assert s.state_elements == 32 * 128 * 128
    assert s.bytes == 8192 * 4 * 2 + 32 * 128 * 128 * 4  # bf16 window, fp32 state


def test_mamba_states() -> None:
    m2 = mamba2(intermediate=8192, groups=8, state_size=128, heads=128, head_dim=64,
                conv_kernel=4)
    assert m2.bytes == (8192 + 2 * 8 * 128) * 4 * 2 + 128 * 64 * 128 * 4  # the SSM state in fp32, as transformers keeps it
    m1 = mamba1(intermediate=8192, state_size=16, conv_kernel=4)
    assert m1.bytes == 8192 * 4 * 2 + 8192 * 16 * 4


def test_state_does_not_grow_with_the_sequence_and_adds_to_the_kv_of_attention_layers() -> None:
    state = gated_delta_net(16, 32, 128, 128, 4).bytes
    linear = replace(ATTN, attention="recurrent", kv_per_token=0, state_bytes=state,
                     mixer="Gated DeltaNet")
    specs = (linear, linear, linear, ATTN)
    assert kv_cache(specs, 512) == 3 * state + 1024 * 512 * 2
    assert kv_cache(specs, 4096) - kv_cache(specs, 512) == 1024 * (4096 - 512) * 2
    assert kv_cache((linear,), 1) == kv_cache((linear,), 262144) == state
    assert attention_label(linear) == "Gated DeltaNet (fixed state)"
