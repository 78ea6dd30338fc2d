"""Stage 8 (read): the model page of the seeds, as a view object over one ``plan --json`` document.

The page and its Markdown twin are built from the same :class:`ModelPage`, and the
``ModelPage`` only reads the public fields of the plan document (``params``,
``memory_bytes``, ``cards``, ``split``, ``structure``, ``findings``, ``cost``,
``training_tokens``, ``serve_tokens``, ``accuracy`` when the planner measured it), so every
number on the page is the number ``hubwatch plan --json`` prints, whichever memory method
produced it. Card names are the planner's own ("T4 16 GB"), never contract keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tracker.model.plan import CARD_KEYS
from tracker.planner.cards import CARDS, HEADROOM

_CARD_NAMES = {c.key: c.name for c in CARDS}
MODE_LABELS = {"full_finetune": "Full fine-tune", "lora": "LoRA r=16", "serve": "Serve bf16"}


def card_name(key: str) -> str:
    """The name people write for a card key ("a100-80" -> "A100 / H100 80 GB")."""
    return _CARD_NAMES.get(key, key)


def mode_label(mode: str) -> str:
    return MODE_LABELS.get(mode, mode.replace("_", " "))


def gb(n: Any) -> str:
    """Decimal GB as the seed pages write them (2 decimals; MB under 0.1 GB)."""
    if not isinstance(n, int | float) or isinstance(n, bool):
        return "—"
    return f"{n / 1e9:.2f} GB" if n >= 1e8 else f"{n / 1e6:.0f} MB"


def short_count(n: Any) -> str:
    """277,432,320 -> "277M"; 7,241,732,096 -> "7.24B"."""
    if not isinstance(n, int) or isinstance(n, bool):
        return "—"
    if n >= 10**9:
        return f"{n / 1e9:.2f}B"
    if n >= 10**6:
        return f"{n / 1e6:.0f}M"
    if n >= 10**3:
        return f"{n / 1e3:.0f}K"
    return str(n)


@dataclass(frozen=True, slots=True)
class Figure:
    """A labelled number (the seed pages' tiles)."""

    label: str
    value: str
    note: str = ""


@dataclass(frozen=True, slots=True)
class CardRow:
    name: str
    cells: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StructureRow:
    index: int
    name: str
    type: str
    shape: str


@dataclass(frozen=True, slots=True)
class FindingView:
    level: str
    message: str
    fix: str
    id: str


@dataclass(frozen=True, slots=True)
class Link:
    label: str
    href: str


@dataclass(frozen=True, slots=True)
class ModelPage:
    """Every section of the seed page, in its order; strings ready to show."""

    title: str
    name: str
    family: str
    answer: str
    supported: bool
    provenance: str
    count: tuple[Figure, ...]
    count_note: str
    cost_intro: str
    cost: tuple[Figure, ...]
    memory_intro: str
    batch1: tuple[Figure, ...]
    card_headers: tuple[str, ...]
    cards: tuple[CardRow, ...]
    splits: tuple[str, ...]
    assumptions: str
    accuracy: str
    structure_intro: str
    structure: tuple[StructureRow, ...]
    findings: tuple[FindingView, ...]
    upstream: str = ""
    links: tuple[Link, ...] = field(default_factory=tuple)
    command: str = ""
    revision: str = ""


def _fits_on(cards: Mapping[str, Any], mode: str) -> str | None:
    for key in CARD_KEYS:
        fit = cards.get(key)
        if isinstance(fit, Mapping) and isinstance(fit.get(mode), int) and fit[mode] > 0:
            return card_name(key)
    return None


def _fit_words(cards: Mapping[str, Any], mode: str, splits: list[Mapping[str, Any]]) -> str:
    one = _fits_on(cards, mode)
    if one:
        return f"fits one {one}"
    split = next((s for s in splits if s.get("mode") == mode), None)
    if split:
        return f"needs two {card_name(str(split.get('card')))} cards"
    return "fits no single card"


def _section(doc: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = doc.get(key)
    return value if isinstance(value, Mapping) else {}


def accuracy_line(doc: Mapping[str, Any]) -> str:
    """The planner's measured accuracy, quoted from the plan document; said plainly when absent."""
    acc = doc.get("accuracy")
    text = acc.get("summary") if isinstance(acc, Mapping) else acc
    if isinstance(text, str) and text.strip():
        return f"These are estimates from the graph, not measurements. {text.strip()}"
    return ("These are estimates from the graph, not measurements. This build's planner carries no "
            "measured accuracy figure yet.")


def model_page(doc: Mapping[str, Any], *, name: str, repo_id: str | None = None,
               provenance: str = "Reconstructed from its own config.json with no weights read.") -> ModelPage:
    """The seed page of one plan document (``name``: the model as people call it)."""
    params, memory, cards, cost = (_section(doc, k) for k in ("params", "memory_bytes", "cards", "cost"))
    splits = [s for s in doc.get("split") or [] if isinstance(s, Mapping)]
    supported = bool(doc.get("supported", True)) and isinstance(params.get("total"), int)
    tokens = doc.get("training_tokens")
    serve_tokens = doc.get("serve_tokens") or 512
    family = str(_section(doc, "dims").get("family") or doc.get("model_type") or "model")
    if supported:
        answer = (f"Fine-tuning {name} at batch 1 and {tokens} tokens takes about {gb(memory.get('full_finetune'))} "
                  f"of GPU memory for a full fine-tune ({_fit_words(cards, 'full_finetune', splits)}), and "
                  f"{gb(memory.get('lora'))} with LoRA r=16 on a bf16 base ({_fit_words(cards, 'lora', splits)}). "
                  "Estimated from the model's structure, not measured.")
    else:
        why = next((str(f.get("message")) for f in doc.get("findings") or [] if isinstance(f, Mapping)), "")
        answer = f"{name} cannot be sized from its config.json: {why or 'the planner does not know this architecture.'}"
    total, ckpt, delta = params.get("total"), params.get("checkpoint"), params.get("delta_pct")
    count = [Figure("Derived from structure", short_count(total),
                    f"{total:,} parameters" if isinstance(total, int) else "")]
    if isinstance(ckpt, int):
        count.append(Figure("In the published checkpoint", short_count(ckpt),
                            f"{ckpt:,} scalars · from the safetensors headers"))
        count.append(Figure("Delta", f"{delta:+.2f}%" if isinstance(delta, int | float) else "—",
                            str(params.get("explanation") or "")))
        note = ("The left number comes from the graph. The right one is the number of scalars in the published "
                "weight files. Nothing on this page was tuned to make them agree.")
    else:
        note = ("The left number comes from the graph. The checkpoint's own count is not known here: no "
                "safetensors header was read for this config.")
    active = params.get("active")
    if isinstance(active, int) and isinstance(total, int) and active != total:
        count.insert(1, Figure("Active per token", short_count(active), f"{active:,} parameters"))
    cost_figs: list[Figure] = [Figure("Will it forward-pass", "Yes" if supported else "No")]
    cost_intro = "No cost estimate: the model could not be sized."
    if cost:
        cost_figs += [Figure("Priced on", str(cost.get("card", "—"))),
                      Figure("Est. one run", f"${cost['usd']:.2f}" if isinstance(cost.get("usd"), int | float) else "—",
                             f"{cost['hours']:.1f} GPU hours" if isinstance(cost.get("hours"), int | float) else "")]
        cost_intro = (f"Cost is a roofline estimate on the priced GPU for {cost.get('epochs')} epochs at batch "
                      f"{cost.get('batch_size')}, {cost.get('tokens_per_sample')} tokens over "
                      f"{cost.get('samples'):,} samples (assumed; no dataset attached)."
                      if isinstance(cost.get("samples"), int) else "Cost is a roofline estimate on the priced GPU.")
    batch1 = (
        Figure(f"Full fine-tune, batch 1 at {tokens} tokens", gb(memory.get("full_finetune"))),
        Figure(f"LoRA r=16, batch 1 at {tokens} tokens", gb(memory.get("lora"))),
        Figure("Serve: bf16 weights", gb(memory.get("serve_weights"))),
        Figure(f"Serve: KV cache, {serve_tokens} tokens", gb(memory.get("kv_cache"))),
    )
    headers = ("Card", "Full fine-tune", "LoRA r=16", f"Serve bf16, {serve_tokens} tokens")
    rows = []
    for key in CARD_KEYS:
        fit = cards.get(key)
        if isinstance(fit, Mapping):
            rows.append(CardRow(card_name(key), tuple(_batch_cell(fit.get(m)) for m in ("full_finetune", "lora", "serve"))))
    split_lines = tuple(
        f"{mode_label(str(s.get('mode')))} on two {card_name(str(s.get('card')))} cards: cut after layer "
        f"{s.get('cut_after_layer')}, batch {s.get('batch')}" for s in splits)
    assumptions = (
        f"Training: {tokens} tokens per sample (2048, or the model's context when shorter), AdamW with bf16 "
        f"autocast, SDPA attention (no score matrix stored), {HEADROOM}x headroom on every card. Full fine-tune "
        "holds weights, gradients and optimizer state plus activations"
        + (f" ({gb(memory.get('activations_per_sample'))} per sample)" if memory.get("activations_per_sample") else "")
        + ". LoRA is r=16 on every linear layer but the head, base frozen in bf16 (2 bytes per parameter), "
        "adapters at full AdamW state, same activations. A two-card split is a contiguous layer cut (pipeline "
        "parallel), computed only where one card cannot hold batch 1. Serving: bf16 weights plus the KV cache of "
        f"{serve_tokens} tokens per sequence; prefill working set, CUDA context and framework reserve not counted."
    )
    structure = tuple(StructureRow(int(n.get("index", i + 1)), str(n.get("name", "")), str(n.get("type", "")),
                                   " × ".join(str(d) for d in n.get("shape") or []))
                      for i, n in enumerate(doc.get("structure") or []) if isinstance(n, Mapping))
    structure_intro = (f"{len(structure)} nodes. Output shapes are propagated from the input shape, batch "
                       f"dimension excluded, at {tokens} tokens.")
    findings = tuple(FindingView(str(f.get("level", "info")), str(f.get("message", "")), str(f.get("fix", "")),
                                 str(f.get("id", ""))) for f in doc.get("findings") or [] if isinstance(f, Mapping))
    upstream = (f"The change tracker follows {repo_id}: every revision it has read, what changed in the config, "
                "tokenizer, chat template or weights between them, and an OSV advisory per change."
                if repo_id else "")
    return ModelPage(
        title=f"{name}: GPU memory to fine-tune", name=name, family=family, answer=answer, supported=supported,
        provenance=provenance, count=tuple(count), count_note=note, cost_intro=cost_intro, cost=tuple(cost_figs),
        memory_intro=(f"Largest batch per card. Training is sized at {tokens} tokens per sample, serving at "
                      f"{serve_tokens} tokens per sequence."),
        batch1=batch1, card_headers=headers, cards=tuple(rows), splits=split_lines, assumptions=assumptions,
        accuracy=accuracy_line(doc), structure_intro=structure_intro, structure=structure, findings=findings,
        upstream=upstream, command=f"hubwatch plan {repo_id}" if repo_id else "hubwatch plan config.json",
    )


def _batch_cell(n: Any) -> str:
    if n == 0:
        return "does not fit"
    return f"batch {n}" if isinstance(n, int) else "—"


def _md(text: str) -> str:
    """Text as inert Markdown (a table cell or a line): no markup, no table breaks."""
    out = []
    for ch in " ".join(str(text).split()):
        out.append("\\" + ch if ch in "\\`*[]<>|~" else ch)
    return "".join(out)


def _md_table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    lines = ["| " + " | ".join(_md(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    return lines


def model_markdown(page: ModelPage) -> str:
    """The Markdown twin: the same sections and tables as the HTML page."""
    out = [f"# {_md(page.title)}", "", _md(page.answer), "", _md(page.provenance), "",
           "## Our count against the checkpoint", "", _md(page.count_note), ""]
    out += _md_table(("", "Value", ""), [(f.label, f.value, f.note) for f in page.count])
    out += ["", "## What it costs to run", "", _md(page.cost_intro), ""]
    out += _md_table(("", "Value", ""), [(f.label, f.value, f.note) for f in page.cost])
    out += ["", "## Memory: what fits on which card", "", _md(page.memory_intro), ""]
    out += _md_table(("At batch 1", "Memory"), [(f.label, f.value) for f in page.batch1])
    out += ["", *_md_table(page.card_headers, [(r.name, *r.cells) for r in page.cards])]
    if page.splits:
        out += ["", "Two-card split:", ""] + [f"- {_md(s)}" for s in page.splits]
    out += ["", _md(page.assumptions), "", _md(page.accuracy), "", "## Structure", "", _md(page.structure_intro), ""]
    out += _md_table(("", "Layer", "Type", "Output shape"),
                     [(str(r.index), r.name, r.type, r.shape) for r in page.structure])
    out += ["", "## What the verifier says", ""]
    if not page.findings:
        out.append("No finding on the reconstructed graph.")
    for f in page.findings:
        out.append(f"- **{_md(f.level)}** {_md(f.message)}" + (f" Fix: {_md(f.fix)}" if f.fix else "") + f" (`{f.id}`)")
    if page.upstream:
        out += ["", "## What changed upstream", "", _md(page.upstream), ""]
        out += [f"- [{_md(link.label)}]({link.href})" for link in page.links]
    out += ["", "## Do this to your own model", "", "```", page.command, "```", ""]
    return "\n".join(out)
