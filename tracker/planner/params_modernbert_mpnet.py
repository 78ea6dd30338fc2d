"""Parameter counts of ModernBERT and MPNet with every head transformers defines for them.

Layer 1 (stage 5, plan), pure. ModernBERT: fused QKV and a GLU MLP (``Wi`` to twice the
inner width), bias-free by default, no norm before the first layer's attention; its task
heads share a prediction head (dense + norm) before the classifier. MPNet: BERT-like layers,
a relative-position bias table shared by all layers, a pooler only where the class uses it
(the bare model and multiple choice).
"""

from __future__ import annotations

from tracker.model.plan import ModelConfig
from tracker.planner.params_encoder import bert_layers
from tracker.planner.tally import Tally

ROPE_ENCODERS = frozenset({"modernbert", "mpnet"})


def count_modernbert_mpnet(cfg: ModelConfig, arch: str, t: Tally, notes: list[str]) -> None:
    """Base model and the class's head."""
    if cfg.family == "modernbert":
        _modernbert(cfg, t)
        _modernbert_head(cfg, arch, t, notes)
    else:
        _mpnet(cfg, t)
        _mpnet_head(cfg, arch, t, notes)


def _modernbert(cfg: ModelConfig, t: Tally) -> None:
    g = cfg.get_bool
    h, f, n = cfg.hidden_size, cfg.intermediate_size, cfg.num_layers
    nb = g("norm_bias")
    t.add("embeddings", cfg.vocab_size * h)
    t.norm(h, bias=nb, times=1 + max(0, n - 1) + n + 1)  # embeddings, attn (not layer 0), mlp, final
    t.linear("attention", h, 3 * h, bias=g("attention_bias"), times=n)
    t.linear("attention", h, h, bias=g("attention_bias"), times=n)
    t.linear("mlp", h, 2 * f, bias=g("mlp_bias"), times=n)
    t.linear("mlp", f, h, bias=g("mlp_bias"), times=n)


def _modernbert_head(cfg: ModelConfig, arch: str, t: Tally, notes: list[str]) -> None:
    h = cfg.hidden_size
    if not arch or arch.endswith("Model"):
        return
    known = ("ForMaskedLM", "ForSequenceClassification", "ForTokenClassification",
             "ForQuestionAnswering", "ForMultipleChoice")
    if not arch.endswith(known):
        notes.append(f"head of {arch} unknown; counted the base model only")
        return
    t.linear("head", h, h, bias=cfg.get_bool("classifier_bias"), lora=False)  # prediction head
    t.norm(h, bias=cfg.get_bool("norm_bias"))
    if arch.endswith("ForMaskedLM"):
        if not cfg.tie_word_embeddings:
            t.linear("head", h, cfg.vocab_size, lora=False)
        if cfg.get_bool("decoder_bias", True):
            t.add("head", cfg.vocab_size)
        return
    out = 1 if arch.endswith("ForMultipleChoice") else cfg.get_int("num_labels", 2)
    t.linear("head", h, out, bias=True, lora=False)


def _mpnet(cfg: ModelConfig, t: Tally) -> None:
    h, f, n = cfg.hidden_size, cfg.intermediate_size, cfg.num_layers
    t.add("embeddings", (cfg.vocab_size + cfg.get_int("max_position_embeddings", 512)) * h)
    t.norm(h)
    bert_layers(t, h, f, n)
    t.add("other", cfg.get_int("relative_attention_num_buckets", 32) * cfg.num_heads)


def _mpnet_head(cfg: ModelConfig, arch: str, t: Tally, notes: list[str]) -> None:
    h, labels = cfg.hidden_size, cfg.get_int("num_labels", 2)

    def dense(out: int) -> None:
        t.linear("head", h, out, bias=True, lora=False)

    if not arch or arch.endswith("MPNetModel"):
        dense(h)  # pooler
    elif arch.endswith("ForMaskedLM"):
        dense(h)
        t.norm(h)
        if not cfg.tie_word_embeddings:
            dense(cfg.vocab_size)  # the untied decoder has its own bias as well
        t.add("head", cfg.vocab_size)
    elif arch.endswith("ForSequenceClassification"):
        dense(h)
        dense(labels)
    elif arch.endswith(("ForTokenClassification", "ForQuestionAnswering")):
        dense(labels)
    elif arch.endswith("ForMultipleChoice"):
        dense(h)  # pooler
        dense(1)
    else:
        notes.append(f"head of {arch} unknown; counted the base model only")
