"""Parameter counts of the encoder-decoder families: t5 / mt5, bart, whisper.

Layer 1 (stage 5, plan), pure. Adds the shared embeddings, the encoder and (unless
``encoder_only``) the decoder; the LM head is tied in all three as transformers 5 builds
them (t5's config class forces the tie), and an untied one is added by the caller.
"""

from __future__ import annotations

from tracker.model.plan import ModelConfig
from tracker.planner.tally import Tally


def count_t5(cfg: ModelConfig, t: Tally, encoder_only: bool = False) -> None:
    """Shared embeddings, the encoder stack and (unless ``encoder_only``) the decoder."""
    d, v = cfg.hidden_size, cfg.get_int
    inner = v("num_heads") * v("d_kv")
    ff = v("d_ff")
    gated = cfg.get_bool("is_gated_act")
    buckets = v("relative_attention_num_buckets", 32)

    def stack(layers: int, cross: bool) -> None:
        t.linear("attention", d, inner, times=3 * layers)
        t.linear("attention", inner, d, times=layers)
        if layers:
            t.add("attention", buckets * v("num_heads"))  # relative bias, first layer only
        if cross:
            t.linear("attention", d, inner, times=3 * layers)
            t.linear("attention", inner, d, times=layers)
        t.linear("mlp", d, ff, times=(2 if gated else 1) * layers)
        t.linear("mlp", ff, d, times=layers)
        t.norm(d, bias=False, times=(3 if cross else 2) * layers + 1)

    t.add("embeddings", cfg.vocab_size * d)
    stack(v("num_layers"), cross=False)
    if not encoder_only:
        stack(v("num_decoder_layers"), cross=True)


def _bart_layer(t: Tally, d: int, f: int, n: int, cross: bool, k_bias: bool = True) -> None:
    for _ in range(2 if cross else 1):
        t.linear("attention", d, d, bias=k_bias, times=n)  # k_proj (whisper: no bias)
        t.linear("attention", d, d, bias=True, times=3 * n)  # q, v, out
    t.linear("mlp", d, f, bias=True, times=n)
    t.linear("mlp", f, d, bias=True, times=n)
    t.norm(d, times=(3 if cross else 2) * n)


def count_bart(cfg: ModelConfig, t: Tally, decoder_only: bool = False) -> None:
    d, v = cfg.hidden_size, cfg.get_int
    pos = v("max_position_embeddings") + 2  # BartLearnedPositionalEmbedding offset
    stacks = 1 if decoder_only else 2
    t.add("embeddings", cfg.vocab_size * d)
    t.add("embeddings", stacks * pos * d)
    t.norm(d, times=stacks)  # layernorm_embedding
    if not decoder_only:
        _bart_layer(t, d, v("encoder_ffn_dim"), v("encoder_layers"), cross=False)
        if not cfg.tie_word_embeddings:  # encoder and decoder keep their own token embeddings
            t.add("embeddings", 2 * cfg.vocab_size * d)
    _bart_layer(t, d, v("decoder_ffn_dim"), v("decoder_layers"), cross=True)


def count_whisper(cfg: ModelConfig, t: Tally, encoder_only: bool = False) -> None:
    d, v = cfg.hidden_size, cfg.get_int
    t.add("other", v("num_mel_bins") * d * 3 + d + d * d * 3 + d)  # conv1, conv2
    t.add("embeddings", v("max_source_positions") * d)
    _bart_layer(t, d, v("encoder_ffn_dim"), v("encoder_layers"), cross=False, k_bias=False)
    t.norm(d)
    if encoder_only:
        return
    t.add("embeddings", (cfg.vocab_size + v("max_target_positions")) * d)
    _bart_layer(t, d, v("decoder_ffn_dim"), v("decoder_layers"), cross=True, k_bias=False)
    t.norm(d)
