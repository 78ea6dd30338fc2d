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

NEWEST_MULTIMODAL = frozenset(["llama4", "qwen3_5", "qwen3_5_moe"])


def count_newest_multimodal(cfg: ModelConfig, arch: str, t: Tally, notes: list[str]) -> None:
    """The whole model ``arch`` builds from a composite config (text and vision towers)."""
    text, vision = cfg.sub.get("text"), cfg.sub.get("vision")
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
