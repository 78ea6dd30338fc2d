"""Exact parameter count of the checkpoint's class (``architectures[0]``) from its config.

Layer 1 (stage 5, plan), pure. The base model comes from the family counters; the class
decides the pooler and the head. Tied weights count once, as transformers' unique
``parameters()`` do. Buffers (rotary tables, masks, final_logits_bias) are not parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

from tracker.model.plan import ModelConfig
from tracker.planner.params_decoder import count_decoder
from tracker.planner.params_encoder import (
    count_bert,
    count_clip_tower,
    count_deberta,
    count_distilbert,
    count_electra,
    count_vit,
)
from tracker.planner.params_modernbert_mpnet import ROPE_ENCODERS, count_modernbert_mpnet
from tracker.planner.params_multimodal import (
    MULTIMODAL_FAMILIES,
    VISION_TOWERS,
    count_multimodal,
    count_vision_tower,
)
from tracker.planner.params_newest import NEWEST_DECODERS, NEWEST_MLA
from tracker.planner.params_newest_multimodal import NEWEST_MULTIMODAL, count_newest_multimodal
from tracker.planner.params_seq2seq import count_bart, count_t5, count_whisper
from tracker.planner.params_ssm import SSM_FAMILIES, count_ssm, ssm_head
from tracker.planner.tally import Tally

DECODERS = frozenset(
    ["llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3_text", "phi", "phi3", "gpt2", "gpt_neox", "gptj", "gpt_bigcode", "falcon", "bloom", "opt", "mpt", "stablelm", "starcoder2", "olmo", "olmo2", "cohere", "granite", "granitemoe", "deepseek_v2", "deepseek_v3", "gpt_oss"]
) | NEWEST_DECODERS | NEWEST_MLA
BERTS = frozenset({"bert", "roberta", "xlm-roberta"})
ENCODERS = BERTS | {"distilbert", "deberta-v2", "electra", "vit"}
SEQ2SEQ = frozenset({"t5", "mt5", "bart", "whisper"})
SUPPORTED = DECODERS | ENCODERS | SEQ2SEQ | {"gemma3", "clip", "clip_text_model",
                                             "clip_vision_model", "siglip_vision_model"
                                             } | NEWEST_MULTIMODAL
# state-space / hybrid, vision-language, ModernBERT and MPNet (issue 14)
SUPPORTED |= SSM_FAMILIES | MULTIMODAL_FAMILIES | VISION_TOWERS | ROPE_ENCODERS


@dataclass(frozen=True, slots=True)
class Counted:
    """A count and what the counter had to assume (an unknown head class, say)."""

    tally: Tally
    notes: tuple[str, ...]


def count_params(cfg: ModelConfig) -> Counted:
    """Count the parameters of ``cfg.architecture`` (the family's default class when absent)."""
    t = Tally()
    fam = cfg.family or ""
    arch = cfg.architecture or ""
    notes: list[str] = []
    if fam in DECODERS:
        _decoder(cfg, arch, t, notes)
    elif fam in ENCODERS:
        _encoder(cfg, arch, t, notes)
    elif fam in ("t5", "mt5"):
        enc_only = arch.endswith(("EncoderModel", "ForTokenClassification"))
        count_t5(cfg, t, encoder_only=enc_only)
        if arch.endswith("ForTokenClassification") or arch.endswith("ForQuestionAnswering"):
            t.linear("head", cfg.hidden_size, _labels(cfg), bias=True, lora=False)
        else:
            _seq2seq_head(cfg, arch, t, notes, lm=arch.endswith("ForConditionalGeneration"))
    elif fam == "bart":
        count_bart(cfg, t, decoder_only=arch.endswith("ForCausalLM"))
        if arch.endswith(("ForConditionalGeneration", "ForCausalLM")) \
                and not cfg.tie_word_embeddings:
            t.linear("head", cfg.hidden_size, cfg.vocab_size, lora=False)
        _seq2seq_head(cfg, arch, t, notes, lm=arch.endswith(("ForConditionalGeneration",
                                                             "ForCausalLM")))
    elif fam == "whisper":
        count_whisper(cfg, t, encoder_only=arch.endswith(("Encoder", "ForAudioClassification")))
        if arch.endswith("ForConditionalGeneration") and not cfg.tie_word_embeddings:
            t.linear("head", cfg.hidden_size, cfg.vocab_size, lora=False)
        _seq2seq_head(cfg, arch, t, notes, lm=arch.endswith("ForConditionalGeneration"))
    elif fam == "gemma3":
        _gemma3(cfg, arch, t, notes)
    elif fam == "clip":
        _clip(cfg, arch, t, notes)
    elif fam in NEWEST_MULTIMODAL:
        count_newest_multimodal(cfg, arch, t, notes)
    elif fam in SSM_FAMILIES:
        count_ssm(cfg, t)
        ssm_head(cfg, arch, t, notes)
    elif fam in MULTIMODAL_FAMILIES:
        count_multimodal(cfg, arch, t, notes)
    elif fam in ROPE_ENCODERS:
        count_modernbert_mpnet(cfg, arch, t, notes)
    elif fam in VISION_TOWERS - {"clip_vision_model", "siglip_vision_model"}:
        count_vision_tower(cfg, t)
    elif fam in ("clip_text_model", "clip_vision_model", "siglip_vision_model"):
        count_clip_tower(cfg, t)
        if arch.endswith("WithProjection"):
            t.linear("head", cfg.hidden_size, cfg.get_int("projection_dim", 512), lora=False)
    return Counted(t, tuple(notes))


def _labels(cfg: ModelConfig) -> int:
    return cfg.get_int("num_labels", 2)


def _decoder(cfg: ModelConfig, arch: str, t: Tally, notes: list[str]) -> None:
    count_decoder(cfg, t)
    fam = cfg.family
    h = cfg.get_int("word_embed_proj_dim", cfg.hidden_size) if fam == "opt" else cfg.hidden_size
    if fam == "opt":
        _opt_extras(cfg, t)
    if arch.endswith(("ForCausalLM", "LMHeadModel", "DoubleHeadsModel")) or not arch:
        if not cfg.tie_word_embeddings:
            t.linear("head", h, cfg.vocab_size, lora=False)
        if fam in ("phi", "gptj") or (fam == "ernie4_5_moe" and cfg.get_bool("use_bias")):
            t.add("head", cfg.vocab_size)  # the LM head's bias (kept when the weight is tied)
        if arch.endswith("DoubleHeadsModel"):
            out = 1 if cfg.get_bool("summary_proj_to_labels", True) else h  # sets num_labels 1
            if cfg.get_bool("summary_use_proj", True):
                t.linear("head", h, out if out > 0 else h, bias=True, lora=False)
    elif arch.endswith("ForSequenceClassification"):
        t.linear("head", h, _labels(cfg), lora=False)
    elif arch.endswith("ForTokenClassification"):
        t.linear("head", cfg.hidden_size, _labels(cfg), bias=True, lora=False)
    elif arch.endswith("ForQuestionAnswering"):
        t.linear("head", h, 2, bias=True, lora=False)
    elif not arch.endswith("Model"):
        notes.append(f"head of {arch} unknown; counted the base model only")


def _opt_extras(cfg: ModelConfig, t: Tally) -> None:
    """OPT's learned positions (offset 2), projections and final norm switches."""
    h, w = cfg.hidden_size, cfg.get_int("word_embed_proj_dim", cfg.hidden_size)
    n = cfg.num_layers
    # count_decoder counted vocab x hidden embeddings and biased/affine norms: correct them
    t.add("embeddings", cfg.vocab_size * (w - h))
    t.add("embeddings", (cfg.get_int("max_position_embeddings") + 2) * h)
    if w != h:
        t.linear("embeddings", h, w, times=2)
    affine = cfg.get_bool("layer_norm_elementwise_affine", True)
    final = cfg.get_bool("do_layer_norm_before", True) and not cfg.get_bool(
        "_remove_final_layer_norm")
    if not affine:
        t.add("norms", -2 * h * (2 * n + 1))
    elif not final:
        t.add("norms", -2 * h)
    if not cfg.get_bool("enable_bias", True):
        t.add("attention", -4 * h * n)
        t.add("mlp", -(cfg.get_int("ffn_dim") + h) * n)


def _encoder(cfg: ModelConfig, arch: str, t: Tally, notes: list[str]) -> None:
    fam = cfg.family or ""
    h, labels = cfg.hidden_size, _labels(cfg)
    if fam in BERTS:
        count_bert(cfg, t)
    elif fam == "distilbert":
        count_distilbert(cfg, t)
    elif fam == "electra":
        count_electra(cfg, t)
    elif fam == "deberta-v2":
        count_deberta(cfg, t)
    elif fam == "vit":
        count_vit(cfg, t, mask_token=arch.endswith("ForMaskedImageModeling"))
    if fam in BERTS:
        _bert_head(cfg, arch, t, notes)
    elif fam == "distilbert":
        _distilbert_head(cfg, arch, t, notes)
    elif fam == "electra":
        _electra_head(cfg, arch, t, notes)
    elif fam == "deberta-v2":
        _deberta_head(cfg, arch, t, notes)
    elif fam == "vit":
        if arch in ("ViTModel", ""):
            t.linear("head", h, cfg.get_int("pooler_output_size", h), bias=True, lora=False)
        elif arch.endswith("ForImageClassification"):
            t.linear("head", h, labels, bias=True, lora=False)
        elif arch.endswith("ForMaskedImageModeling"):
            stride, ch = cfg.get_int("encoder_stride", 16), cfg.get_int("num_channels", 3)
            t.add("head", h * stride * stride * ch + stride * stride * ch)
        else:
            notes.append(f"head of {arch} unknown; counted the base model only")


def _mlm(cfg: ModelConfig, t: Tally, width: int, shared_bias: bool = True) -> None:
    """transform dense + LayerNorm + decoder (tied unless untied) + its bias.

    BERT-style heads keep the bias as a separate parameter shared with the decoder; an
    untied decoder then has its own bias as well.
    """
    h = cfg.hidden_size
    t.linear("head", h, width, bias=True, lora=False)
    t.norm(width)
    if not cfg.tie_word_embeddings:
        t.linear("head", width, cfg.vocab_size, bias=shared_bias, lora=False)
    t.add("head", cfg.vocab_size)


def _bert_head(cfg: ModelConfig, arch: str, t: Tally, notes: list[str]) -> None:
    """bert / roberta / xlm-roberta heads; a pooler (dense h x h) where the class has one.

    RoBERTa's sequence classifier has its own dense layer instead of the pooler: same size.
    """
    h, labels = cfg.hidden_size, _labels(cfg)

    def dense(out: int) -> None:
        t.linear("head", h, out, bias=True, lora=False)

    if not arch or (arch.endswith("Model") and not arch.endswith("LMHeadModel")):
        dense(h)
    elif arch.endswith(("ForMaskedLM", "ForCausalLM", "LMHeadModel")):
        _mlm(cfg, t, h)
    elif arch.endswith("ForPreTraining"):
        dense(h)
        _mlm(cfg, t, h)
        dense(2)
    elif arch.endswith("ForSequenceClassification"):
        dense(h)
        dense(labels)
    elif arch.endswith(("ForTokenClassification", "ForQuestionAnswering")):
        dense(labels)
    elif arch.endswith("ForMultipleChoice"):
        dense(h)
        dense(1)
    elif arch.endswith("ForNextSentencePrediction"):
        dense(h)
        dense(2)
    else:
        notes.append(f"head of {arch} unknown; counted the base model only")


def _distilbert_head(cfg: ModelConfig, arch: str, t: Tally, notes: list[str]) -> None:
    h, labels = cfg.hidden_size, _labels(cfg)
    if arch.endswith("ForMaskedLM"):
        _mlm(cfg, t, h, shared_bias=False)
    elif arch.endswith(("ForSequenceClassification", "ForMultipleChoice")):
        t.linear("head", h, h, bias=True, lora=False)
        out = 1 if arch.endswith("ForMultipleChoice") else labels
        t.linear("head", h, out, bias=True, lora=False)
    elif arch.endswith("ForTokenClassification"):
        t.linear("head", h, labels, bias=True, lora=False)
    elif arch.endswith("ForQuestionAnswering"):
        t.linear("head", h, 2, bias=True, lora=False)
    elif arch and not arch.endswith("Model"):
        notes.append(f"head of {arch} unknown; counted the base model only")


def _electra_head(cfg: ModelConfig, arch: str, t: Tally, notes: list[str]) -> None:
    h, labels = cfg.hidden_size, _labels(cfg)
    e = cfg.get_int("embedding_size", h)
    if arch.endswith("ForPreTraining"):
        t.linear("head", h, h, bias=True, lora=False)
        t.linear("head", h, 1, bias=True, lora=False)
    elif arch.endswith(("ForMaskedLM", "ForCausalLM")):
        t.linear("head", h, e, bias=True, lora=False)
        t.norm(e)
        if not cfg.tie_word_embeddings:
            t.linear("head", e, cfg.vocab_size, lora=False)
        t.add("head", cfg.vocab_size)
    elif arch.endswith("ForSequenceClassification"):
        t.linear("head", h, h, bias=True, lora=False)
        t.linear("head", h, labels, bias=True, lora=False)
    elif arch.endswith("ForTokenClassification") or arch.endswith("ForQuestionAnswering"):
        t.linear("head", h, labels, bias=True, lora=False)
    elif arch.endswith("ForMultipleChoice"):
        t.linear("head", h, h, bias=True, lora=False)  # sequence summary projection
        t.linear("head", h, 1, bias=True, lora=False)
    elif arch and not arch.endswith("Model"):
        notes.append(f"head of {arch} unknown; counted the base model only")


def _deberta_head(cfg: ModelConfig, arch: str, t: Tally, notes: list[str]) -> None:
    h, labels = cfg.hidden_size, _labels(cfg)
    ph = cfg.get_int("pooler_hidden_size", h)
    if arch.endswith("ForMaskedLM"):  # predicts in the embedding width
        _mlm(cfg, t, cfg.get_opt_int("embedding_size") or h)
    elif arch.endswith(("ForSequenceClassification", "ForMultipleChoice")):
        t.linear("head", ph, ph, bias=True, lora=False)  # ContextPooler
        out = 1 if arch.endswith("ForMultipleChoice") else labels
        t.linear("head", h, out, bias=True, lora=False)  # its output_dim is hidden_size
    elif arch.endswith("ForTokenClassification") or arch.endswith("ForQuestionAnswering"):
        t.linear("head", h, labels, bias=True, lora=False)
    elif arch and not arch.endswith("Model"):
        notes.append(f"head of {arch} unknown; counted the base model only")


def _seq2seq_head(cfg: ModelConfig, arch: str, t: Tally, notes: list[str], lm: bool) -> None:
    d, labels = cfg.hidden_size, _labels(cfg)
    if lm or not arch or arch.endswith(("Model", "EncoderModel")):
        return  # the LM head is tied to the shared embeddings
    if arch.endswith("ForSequenceClassification"):
        t.linear("head", d, d, bias=True, lora=False)
        t.linear("head", d, labels, bias=True, lora=False)
    elif arch.endswith("ForQuestionAnswering"):
        t.linear("head", d, 2, bias=True, lora=False)
    elif arch.endswith("ForAudioClassification"):
        pd = cfg.get_int("classifier_proj_size", 256)
        t.linear("head", d, pd, bias=True, lora=False)
        t.linear("head", pd, labels, bias=True, lora=False)
    else:
        notes.append(f"head of {arch} unknown; counted the base model only")


def _gemma3(cfg: ModelConfig, arch: str, t: Tally, notes: list[str]) -> None:
    """Gemma 3 multimodal: SigLIP tower, projector, the Gemma 3 text model, tied head."""
    text, vision = cfg.sub.get("text"), cfg.sub.get("vision")
    if text is None or vision is None:
        return
    count_decoder(text, t)
    if arch.endswith("ForCausalLM"):
        if not text.tie_word_embeddings:
            t.linear("head", text.hidden_size, text.vocab_size, lora=False)
        return
    count_clip_tower(vision, t)
    t.linear("other", vision.hidden_size, text.hidden_size)  # mm_input_projection_weight
    t.norm(vision.hidden_size, bias=False)  # mm_soft_emb_norm
    if arch.endswith("ForConditionalGeneration") and not cfg.get_bool("tie_word_embeddings",
                                                                      True):
        t.linear("head", text.hidden_size, text.vocab_size, lora=False)
    elif arch.endswith("ForSequenceClassification"):
        t.linear("head", text.hidden_size, _labels(cfg), lora=False)


def _clip(cfg: ModelConfig, arch: str, t: Tally, notes: list[str]) -> None:
    text, vision = cfg.sub.get("text"), cfg.sub.get("vision")
    if text is None or vision is None:
        return
    proj = cfg.get_int("projection_dim", 512)
    if arch in ("CLIPModel", ""):
        count_clip_tower(text, t)
        count_clip_tower(vision, t)
        t.linear("head", vision.hidden_size, proj, lora=False)
        t.linear("head", text.hidden_size, proj, lora=False)
        t.add("head", 1)  # logit_scale
    elif arch == "CLIPTextModelWithProjection":
        count_clip_tower(text, t)
        t.linear("head", text.hidden_size, proj, lora=False)
    elif arch == "CLIPVisionModelWithProjection":
        count_clip_tower(vision, t)
        t.linear("head", vision.hidden_size, proj, lora=False)
    elif arch == "CLIPForImageClassification":
        count_clip_tower(vision, t)
        t.linear("head", vision.hidden_size, _labels(cfg), bias=True, lora=False)
    else:
        count_clip_tower(text, t)
        count_clip_tower(vision, t)
        notes.append(f"head of {arch} unknown; counted both towers")
