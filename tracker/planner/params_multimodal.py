"""Parameter counts of the vision-language families: the tower, the projector, the language model.

Layer 1 (stage 5, plan), pure. The checkpoint class (``*ForConditionalGeneration``) builds
its config's vision tower (CLIP or SigLIP for LLaVA, Pixtral for Mistral 3, Qwen3-VL's own),
the projector that maps image features into the language model's width, the language model
of ``text_config`` (counted by the decoder counter of its family, MoE included) and an LM
head, tied as the outer config says. ``*Model`` classes have no LM head.
"""

from __future__ import annotations

from tracker.model.plan import ModelConfig
from tracker.planner.params_decoder import count_decoder
from tracker.planner.params_encoder import bert_layers, count_clip_tower
from tracker.planner.tally import Tally

MULTIMODAL_FAMILIES = frozenset({"llava", "llava_next", "mistral3", "qwen3_vl", "qwen3_vl_moe"})
VISION_TOWERS = frozenset({"clip_vision_model", "siglip_vision_model", "pixtral",
                           "qwen3_vl_vision", "qwen3_vl_moe_vision"})


def count_vision_tower(cfg: ModelConfig, t: Tally) -> bool:
    """A vision tower as its family builds it; False for a family not known here."""
    fam = cfg.family or ""
    if fam in ("clip_vision_model", "siglip_vision_model"):
        count_clip_tower(cfg, t)
    elif fam == "pixtral":
        _pixtral(cfg, t)
    elif fam in ("qwen3_vl_vision", "qwen3_vl_moe_vision"):
        _qwen3_vl_vision(cfg, t)
    else:
        return False
    return True


def _pixtral(cfg: ModelConfig, t: Tally) -> None:
    """Patch convolution (no bias), a pre-norm, RMSNorm layers with a gated MLP, no biases."""
    h, f, n, p = cfg.hidden_size, cfg.intermediate_size, cfg.num_layers, cfg.get_int("patch_size")
    t.add("embeddings", cfg.get_int("num_channels", 3) * p * p * h)
    t.norm(h, bias=False, times=1 + 2 * n)
    t.linear("attention", h, h, times=4 * n)
    t.linear("mlp", h, f, times=2 * n)
    t.linear("mlp", f, h, times=n)


def _qwen3_vl_vision(cfg: ModelConfig, t: Tally) -> None:
    """3-D patch embedding, learned positions, LayerNorm blocks, the merger and the deepstack
    mergers (one per ``deepstack_visual_indexes`` entry, normed after the shuffle)."""
    h, f, n, v = cfg.hidden_size, cfg.intermediate_size, cfg.num_layers, cfg.get_int
    p, tp = v("patch_size", 16), v("temporal_patch_size", 2)
    t.linear("embeddings", v("in_channels", 3) * tp * p * p, h, bias=True)
    t.add("embeddings", v("num_position_embeddings") * h)
    bert_layers(t, h, f, n)
    merged = h * v("spatial_merge_size", 2) ** 2
    out = v("out_hidden_size")
    deepstack = len(cfg.get_list("deepstack_visual_indexes"))
    t.norm(h)
    t.norm(merged, times=deepstack)
    t.linear("other", merged, merged, bias=True, times=1 + deepstack)
    t.linear("other", merged, out, bias=True, times=1 + deepstack)


def count_multimodal(cfg: ModelConfig, arch: str, t: Tally, notes: list[str]) -> None:
    """Tower, projector, language model and (unless tied) the LM head of a VLM class."""
    text, vision = cfg.sub.get("text"), cfg.sub.get("vision")
    if text is None or vision is None:
        return
    from tracker.planner.params import DECODERS  # params dispatches to this module

    if not count_vision_tower(vision, t):
        notes.append(f"vision tower {vision.model_type} unknown; not counted")
    if text.family in DECODERS:
        count_decoder(text, t)
    else:
        notes.append(f"language model {text.model_type} is no decoder family; not counted")
    fam = cfg.family or ""
    vh, th = vision.hidden_size, text.hidden_size
    layers = cfg.values.get("vision_feature_layer")
    feature_layers = len(layers) if isinstance(layers, list) else 1
    bias = cfg.get_bool("multimodal_projector_bias", fam != "mistral3")
    if fam in ("llava", "llava_next", "mistral3"):
        if fam == "mistral3":
            merge = cfg.get_int("spatial_merge_size", 2)
            t.norm(vh, bias=False)
            t.linear("other", vh * merge * merge, vh)  # patch merger
        t.linear("other", vh * feature_layers, th, bias=bias)
        t.linear("other", th, th, bias=bias)
    if fam == "llava_next":
        t.add("other", th)  # image_newline
    tied = cfg.get_bool("tie_word_embeddings")
    if fam == "llava":  # LlavaConfig takes the text config's tying (LLaVA-NeXT's does not)
        tied = tied or text.tie_word_embeddings
    if not arch or arch.endswith("ForConditionalGeneration"):
        if not tied:
            t.linear("head", th, text.vocab_size, lora=False)
    elif not arch.endswith("Model"):
        notes.append(f"head of {arch} unknown; counted the base model only")
