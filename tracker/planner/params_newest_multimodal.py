"""Parameter counts of the newest multimodal checkpoint classes: vision tower, projector,
the text model and its head, module by module as transformers builds them.

Layer 1 (stage 5, plan), pure. ``Llama4ForConditionalGeneration`` (unfold-conv patches,
class and position embeddings, a LayerNorm encoder, the pixel-shuffle MLP and a projector
into the text model) and Qwen3.5's ``Qwen3_5(Moe)ForConditionalGeneration`` (a Conv3d patch
embedding, learned positions, a LayerNorm encoder and the patch merger into the text
model's width), with the classification heads transformers defines on them.
"""

from __future__ import annotations

from tracker.model.plan import ModelConfig
from tracker.planner.params_decoder import count_decoder
from tracker.planner.tally import Tally

NEWEST_MULTIMODAL = frozenset(["llama4", "qwen3_5", "qwen3_5_moe", "gemma4"])


def count_newest_multimodal(cfg: ModelConfig, arch: str, t: Tally, notes: list[str]) -> None:
    """The whole model ``arch`` builds from a composite config (text and vision towers)."""
    text, vision = cfg.sub.get("text"), cfg.sub.get("vision")
    if cfg.family == "gemma4" and text is not None:
        _gemma4(cfg, text, t)
        return
    if text is None or vision is None:
        return
    count_decoder(text, t)
    if arch.endswith("ForCausalLM"):  # the text model alone
        if not text.tie_word_embeddings:
            t.linear("head", text.hidden_size, text.vocab_size, lora=False)
        return
    if cfg.family == "llama4":
        _llama4_vision(vision, text.hidden_size, t)
    else:
        _qwen3_5_vision(vision, t)
    h, labels = text.hidden_size, cfg.get_int("num_labels", 2)
    # Llama 4's head sits in its text model (tied as the text config says), Qwen3.5's on top
    tied = text.tie_word_embeddings if cfg.family == "llama4" \
        else cfg.get_bool("tie_word_embeddings")
    if not arch or arch.endswith("ForConditionalGeneration"):
        if not tied:
            t.linear("head", h, text.vocab_size, lora=False)
    elif arch.endswith("ForSequenceClassification"):
        t.linear("head", h, labels, lora=False)
    elif arch.endswith("ForTokenClassification"):
        t.linear("head", h, labels, bias=True, lora=False)
    elif not arch.endswith("Model"):
        notes.append(f"head of {arch} unknown; counted the base model only")


def _llama4_vision(vision: ModelConfig, text_hidden: int, t: Tally) -> None:
    v = vision.get_int
    h, f, n = vision.hidden_size, vision.intermediate_size, vision.num_layers
    patch, size = v("patch_size", 14), v("image_size", 448)
    t.linear("other", v("num_channels", 3) * patch * patch, h)
    t.add("other", h + ((size // max(1, patch)) ** 2 + 1) * h)  # class and position embeddings
    t.norm(h, times=2 + 2 * n)
    inner = vision.num_heads * (h // max(1, vision.num_heads))
    t.linear("other", h, inner, bias=True, times=3 * n)
    t.linear("other", inner, h, bias=True, times=n)
    t.linear("other", h, f, bias=True, times=n)
    t.linear("other", f, h, bias=True, times=n)
    t.linear("other", f, v("projector_input_dim", 4096))  # the pixel-shuffle MLP's fc1
    t.linear("other", v("projector_output_dim", 4096), v("projector_output_dim", 4096))
    t.linear("other", v("vision_output_dim", 7680), text_hidden)  # the projector


def _qwen3_5_vision(vision: ModelConfig, t: Tally) -> None:
    v = vision.get_int
    h, f, n = vision.hidden_size, vision.intermediate_size, vision.num_layers
    patch, frames = v("patch_size", 16), v("temporal_patch_size", 2)
    t.add("other", v("in_channels", 3) * frames * patch * patch * h + h)  # Conv3d with bias
    t.add("other", v("num_position_embeddings", 2304) * h)
    t.norm(h, times=2 * n + 1)  # two per block, the merger's
    t.linear("other", h, 3 * h, bias=True, times=n)
    t.linear("other", h, h, bias=True, times=n)
    t.linear("other", h, f, bias=True, times=n)
    t.linear("other", f, h, bias=True, times=n)
    merged = h * v("spatial_merge_size", 2) ** 2
    t.linear("other", merged, merged, bias=True)
    t.linear("other", merged, v("out_hidden_size", 3584), bias=True)


def _gemma4(cfg: ModelConfig, text: ModelConfig, t: Tally) -> None:
    """Gemma 4: the text model, the towers its config has, the head tied unless untied."""
    count_decoder(text, t)
    vision, audio = cfg.sub.get("vision"), cfg.sub.get("audio")
    if vision is not None:
        _gemma4_vision(vision, t)
        t.linear("other", vision.hidden_size, text.hidden_size)  # embed_vision
    if audio is not None:
        _gemma4_audio(audio, t)
        t.linear("other", audio.get_int("output_proj_dims", 1536), text.hidden_size)
    if not cfg.get_bool("tie_word_embeddings", True) and (cfg.architecture or "").endswith(
            "ForConditionalGeneration"):
        t.linear("head", text.hidden_size, text.vocab_size, lora=False)


def _gemma4_vision(vision: ModelConfig, t: Tally) -> None:
    h, f, n = vision.hidden_size, vision.intermediate_size, vision.num_layers
    hd, heads, kv = vision.head_dim, vision.num_heads, vision.num_kv_heads
    patch = vision.get_int("patch_size", 16)
    t.linear("other", 3 * patch * patch, h)
    t.add("other", 2 * vision.get_int("position_embedding_size", 10240) * h)
    t.linear("other", h, heads * hd, times=n)
    t.linear("other", h, kv * hd, times=2 * n)
    t.linear("other", heads * hd, h, times=n)
    t.norm(hd, bias=False, times=2 * n)  # q_norm, k_norm (v_norm has no weight)
    t.linear("other", h, f, times=2 * n)
    t.linear("other", f, h, times=n)
    t.norm(h, bias=False, times=4 * n)


def _gemma4_audio(audio: ModelConfig, t: Tally) -> None:
    h, n = audio.hidden_size, audio.num_layers
    channels = [c for c in audio.get_list("subsampling_conv_channels") if isinstance(c, int)]
    c0, c1 = (channels + [128, 32][len(channels):])[:2]
    t.add("other", c0 * 9 + c1 * c0 * 9)  # two 3x3 sub-sampling convolutions
    t.norm(c0, bias=False)
    t.norm(c1, bias=False)
    t.linear("other", (c0 // 4) * c1, h)
    inner = audio.num_heads * (h // max(1, audio.num_heads))
    t.linear("other", h, 4 * h, times=2 * n)  # two macaron feed-forwards
    t.linear("other", 4 * h, h, times=2 * n)
    t.linear("other", h, inner, times=4 * n)  # q, k, v and the relative-position keys
    t.linear("other", h, h, times=n)  # post
    t.add("other", h // max(1, audio.num_heads), times=n)  # per_dim_scale
    t.linear("other", h, 2 * h, times=n)  # the light convolution's start, end, depthwise
    t.linear("other", h, h, times=n)
    t.add("other", h * audio.get_int("conv_kernel_size", 5), times=n)
    t.norm(h, bias=False, times=9 * n)  # 4 feed-forward, 2 convolution, 3 block norms
    t.linear("other", h, audio.get_int("output_proj_dims", 1536), bias=True)
