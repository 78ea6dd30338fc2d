"""Parameter counts of the encoder families: BERT and its kin, and the vision towers.

Layer 1 (stage 5, plan), pure. ``count_*`` add the base model (no pooler, no head) to a
:class:`Tally`; poolers and heads depend on the class and are added by
:mod:`tracker.planner.params`.
"""

from __future__ import annotations

from tracker.model.plan import ModelConfig
from tracker.planner.tally import Tally


def bert_layers(t: Tally, h: int, f: int, n: int, *, qkv_bias: bool = True,
                inner: int | None = None) -> None:
    """``n`` BERT layers: q, k, v, output (biased), two LayerNorms, the MLP."""
    inner = h if inner is None else inner
    t.linear("attention", h, inner, bias=qkv_bias, times=3 * n)
    t.linear("attention", inner, h, bias=True, times=n)
    t.linear("mlp", h, f, bias=True, times=n)
    t.linear("mlp", f, h, bias=True, times=n)
    t.norm(h, times=2 * n)


def count_bert(cfg: ModelConfig, t: Tally) -> None:
    """bert, roberta, xlm-roberta: word, position and token-type embeddings, then layers."""
    h = cfg.hidden_size
    t.add("embeddings", (cfg.vocab_size + cfg.get_int("max_position_embeddings")
                         + cfg.get_int("type_vocab_size")) * h)
    t.norm(h)
    bert_layers(t, h, cfg.intermediate_size, cfg.num_layers)


def count_distilbert(cfg: ModelConfig, t: Tally) -> None:
    """distilbert: word and position embeddings (sinusoidal ones are still parameters)."""
    h = cfg.hidden_size
    t.add("embeddings", (cfg.vocab_size + cfg.get_int("max_position_embeddings")) * h)
    t.norm(h)
    bert_layers(t, h, cfg.intermediate_size, cfg.num_layers)


def count_electra(cfg: ModelConfig, t: Tally) -> None:
    """electra: embeddings of ``embedding_size``, projected up when it differs from hidden."""
    h, e = cfg.hidden_size, cfg.get_int("embedding_size", cfg.hidden_size)
    t.add("embeddings", (cfg.vocab_size + cfg.get_int("max_position_embeddings")
                         + cfg.get_int("type_vocab_size")) * e)
    t.norm(e)
    if e != h:
        t.linear("embeddings", e, h, bias=True)
    bert_layers(t, h, cfg.intermediate_size, cfg.num_layers)


def count_deberta(cfg: ModelConfig, t: Tally) -> None:
    """deberta-v2: disentangled attention with shared or separate position projections."""
    h = cfg.hidden_size
    e = cfg.get_opt_int("embedding_size") or h
    t.add("embeddings", cfg.vocab_size * e)
    if cfg.get_bool("position_biased_input", True):
        t.add("embeddings", cfg.get_int("max_position_embeddings") * e)
    t.add("embeddings", cfg.get_int("type_vocab_size") * e)
    if e != h:
        t.linear("embeddings", e, h)
    t.norm(h)
    n = cfg.num_layers
    bert_layers(t, h, cfg.intermediate_size, n)
    norm_rel = [x.strip() for x in cfg.get_str("norm_rel_ebd", "none").lower().split("|")]
    if "layer_norm" in norm_rel:
        t.norm(h)
    kernel = cfg.get_int("conv_kernel_size")
    if kernel > 0:
        groups = max(1, cfg.get_int("conv_groups", 1))
        t.add("other", h * (h // groups) * kernel + h)  # Conv1d weight and bias
        t.norm(h)
    if not cfg.get_bool("relative_attention"):
        return
    pos_types = [x for x in cfg.get_list("pos_att_type") if isinstance(x, str)]
    if not cfg.get_bool("share_att_key"):
        if "c2p" in pos_types:
            t.linear("attention", h, h, bias=True, times=n)
        if "p2c" in pos_types:
            t.linear("attention", h, h, bias=True, times=n)
    max_rel = cfg.get_int("max_relative_positions", -1)
    if max_rel < 1:
        max_rel = cfg.get_int("max_position_embeddings")
    buckets = cfg.get_int("position_buckets", -1)
    rows = buckets * 2 if buckets > 0 else max_rel * 2
    t.add("embeddings", rows * h)


def count_vit(cfg: ModelConfig, t: Tally, mask_token: bool = False) -> None:
    """vit: a conv patch embedding, a class token, learned positions, pre-norm layers."""
    h, p = cfg.hidden_size, max(1, cfg.get_int("patch_size", 16))
    patches = (cfg.get_int("image_size") // p) ** 2
    t.add("embeddings", h + (patches + 1) * h + (h if mask_token else 0))
    t.linear("embeddings", cfg.get_int("num_channels", 3) * p * p, h, bias=True)
    heads = max(1, cfg.num_heads)
    bert_layers(t, h, cfg.intermediate_size, cfg.num_layers,
                qkv_bias=cfg.get_bool("qkv_bias", True), inner=heads * (h // heads))
    t.norm(h)


def count_clip_tower(cfg: ModelConfig, t: Tally) -> None:
    """clip_text_model / clip_vision_model / siglip_vision_model towers (no projections)."""
    h, f, n = cfg.hidden_size, cfg.intermediate_size, cfg.num_layers
    fam = cfg.family
    if fam == "clip_text_model":
        t.add("embeddings", (cfg.vocab_size + cfg.get_int("max_position_embeddings")) * h)
    else:
        p = max(1, cfg.get_int("patch_size", 16))
        patches = (cfg.get_int("image_size") // p) ** 2
        siglip = fam == "siglip_vision_model"
        t.linear("embeddings", cfg.get_int("num_channels", 3) * p * p, h, bias=siglip)
        t.add("embeddings", (patches if siglip else patches + 1) * h + (0 if siglip else h))
        if not siglip:
            t.norm(h)  # pre_layrnorm
    bert_layers(t, h, f, n)
    t.norm(h)  # final / post layer norm
    if fam == "siglip_vision_model" and cfg.get_bool("vision_use_head", True):
        t.add("other", h)  # probe
        t.linear("other", h, 3 * h, bias=True)  # nn.MultiheadAttention in_proj
        t.linear("other", h, h, bias=True)
        t.norm(h)
        t.linear("other", h, f, bias=True)
        t.linear("other", f, h, bias=True)
