"""The layer graph reconstructed from the config: nodes with their type and output shape.

Layer 1 (stage 5, plan), pure. Shapes are propagated from the input at batch 1 and the
config's maximum context (capped at the training length), as the seed pages' structure
tables show them: encoders as Attention / Add / LayerNorm / FFN per layer, decoders with
their pre-norms, residual adds, final norm and LM head.
"""

from __future__ import annotations

from tracker.model.plan import GraphNode, ModelConfig
from tracker.planner.layers import (
    ENCODER_ONLY,
    LAYERNORM,
    SEQ2SEQ,
    LayerSpec,
    attention_label,
    layer_specs,
    mlp_label,
)
from tracker.planner.memory import is_generative, training_tokens

_LEARNED_POSITIONS = frozenset(
    ["gpt2", "gpt_bigcode", "opt", "bert", "roberta", "xlm-roberta", "distilbert", "electra", "deberta-v2", "bart", "whisper", "clip"]
)


class _Nodes:
    def __init__(self) -> None:
        self.items: list[GraphNode] = []

    def add(self, name: str, type_: str, *shape: int) -> None:
        self.items.append(GraphNode(len(self.items) + 1, name, type_, tuple(shape)))


def build_graph(cfg: ModelConfig,
                specs: tuple[LayerSpec, ...] | None = None) -> tuple[GraphNode, ...]:
    """The structure table of a supported config (empty for an unsupported one)."""
    if cfg.family is None or cfg.fatal:
        return ()
    s, h = training_tokens(cfg), cfg.hidden_size
    n = _Nodes()
    fam = cfg.family
    if fam == "vit":
        c, size = cfg.get_int("num_channels", 3), cfg.get_int("image_size")
        n.add("Input", "Input", 1, c, size, size)
        n.add("Patch_Embedding", "Conv Patch Embed", 1, s, h)
        n.add("Positional_Embedding", "Learned Pos Embed", 1, s, h)
    else:
        n.add("Input", "Input", 1, s)
        n.add("Embedding", "Embedding", 1, s, h)
        if fam in _LEARNED_POSITIONS:
            n.add("Positional_Embedding", "Learned Pos Embed", 1, s, h)
    specs = layer_specs(cfg) if specs is None else specs
    norm = "LayerNorm" if fam in LAYERNORM else "RMSNorm"
    if fam in ENCODER_ONLY:
        for i, spec in enumerate(specs, 1):  # post-norm, as the seed pages draw it
            n.add(f"Attention_{i}", attention_label(spec), 1, s, h)
            n.add(f"Add_{i}", "Add", 1, s, h)
            n.add(f"LayerNorm_{i}_1", "LayerNorm", 1, s, h)
            n.add(f"FFN_{i}", mlp_label(spec), 1, s, h)
        n.add("Output", "Output", 1, s, h)
        return tuple(n.items)
    shape = (1, s, h)
    items, append = n.items, n.items.append
    labels: dict[int, tuple[str, str]] = {}
    for i, spec in enumerate(specs, 1):
        lab = labels.get(id(spec))
        if lab is None:
            lab = labels[id(spec)] = (attention_label(spec), mlp_label(spec))
        p = ("Encoder_" if spec.stack == "encoder" else "Decoder_") if fam in SEQ2SEQ else ""
        k = len(items)
        append(GraphNode(k + 1, f"{p}{norm}_{i}_1", norm, shape))
        mixer = "Mixer" if spec.attention == "recurrent" else "Attention"
        append(GraphNode(k + 2, f"{p}{mixer}_{i}", lab[0], shape))
        append(GraphNode(k + 3, f"{p}Add_{i}_1", "Add", shape))
        if spec.mlp == "none":  # a Mamba block: norm, mixer, residual
            continue
        if spec.cross:
            append(GraphNode(k + 4, f"{p}Cross_Attention_{i}", "Cross Attention", shape))
            append(GraphNode(k + 5, f"{p}Add_{i}_2", "Add", shape))
            k += 2
        append(GraphNode(k + 4, f"{p}{norm}_{i}_2", norm, shape))
        append(GraphNode(k + 5, f"{p}FFN_{i}", lab[1], shape))
        append(GraphNode(k + 6, f"{p}Add_{i}_{3 if spec.cross else 2}", "Add", shape))
    n.add(f"{norm}_Final", norm, 1, s, h)
    if is_generative(cfg):
        n.add("LM_Head", "Linear", 1, s, cfg.vocab_size)
        n.add("Output", "Output", 1, s, cfg.vocab_size)
    else:
        n.add("Output", "Output", 1, s, h)
    return tuple(n.items)
