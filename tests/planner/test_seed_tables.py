"""The seed pages' tables, reproduced by `--method seed` from the config alone."""

from __future__ import annotations

import re

import pytest

from tests.planner.helpers import load, plan_of, seed_text
from tracker.model.plan import CostAssumptions, MemoryPlan
from tracker.planner.cards import CARDS, fit_cards

CARD_ROW = re.compile(r"^\|?\s*(T4 16 GB|L4 24 GB|A100 40 GB|A100 / H100 80 GB|H200 141 GB)"
                      r"\s*\|?\s*batch (\d+)\s*\|?\s*batch (\d+)\s*\|?\s*batch (\d+)", re.M)
STRUCT_ROW = re.compile(r"^\|?\s*(\d+)\s*\|?\s*(\w+)\s*\|?\s*([A-Za-z][\w -]*?)\s*\|?\s*"
                        r"(1 × \d+(?: × \d+)?)\s*\|?", re.M)


def page_table(name: str) -> dict[str, tuple[int, int, int]]:
    rows = {m[1]: (int(m[2]), int(m[3]), int(m[4])) for m in CARD_ROW.finditer(seed_text(name))}
    assert len(rows) == 5
    return {c.key: rows[c.name] for c in CARDS}


def our_table(name: str) -> dict[str, tuple[int, int, int]]:
    p = plan_of(load(name), method="seed")
    return {f.card: (f.full_finetune, f.lora, f.serve) for f in p.cards}


def test_xlm_roberta_every_batch_within_one() -> None:
    page, ours = page_table("xlm-roberta-base"), our_table("FacebookAI__xlm-roberta-base.json")
    for card, row in page.items():
        for theirs, mine in zip(row, ours[card], strict=True):
            assert abs(theirs - mine) <= 1, (card, row, ours[card])


def test_xlm_roberta_method_with_the_pages_count_is_exact() -> None:
    """With the page's own derived count the stated method gives the page's table exactly."""
    p = plan_of(load("FacebookAI__xlm-roberta-base.json"), method="seed")
    m = p.memory
    assert m.training_tokens == 514 and m.serve_tokens == 514
    assert m.activations == 12 * 34 * 514 * 768 + 6 * 514 * 768 == 163_427_328
    assert m.lora_params == 2_654_208
    page_params = 277_432_320  # "277,432,320 parameters" on the page
    assert "277,432,320" in seed_text("xlm-roberta-base")
    weights = 2 * page_params
    mem = MemoryPlan(514, 514, round(19.2 * page_params),
                     weights + round(19.2 * m.lora_params), weights, m.activations, m.kv_cache,
                     m.lora_params)
    table = {f.card: (f.full_finetune, f.lora, f.serve) for f in fit_cards(mem)}
    assert table == page_table("xlm-roberta-base")
    # batch 1: full fine-tune 5.49 GB, LoRA 0.77 GB, bf16 weights 0.55 GB, KV cache 19 MB
    assert (round(mem.full_finetune / 1e9, 2), round(mem.lora / 1e9, 2)) == (5.49, 0.77)
    assert (round(weights / 1e9, 2), round(m.kv_cache / 1e6)) == (0.55, 19)


def test_distilbert_within_one_percent() -> None:
    page = page_table("distilbert-base-uncased")
    ours = our_table("distilbert__distilbert-base-uncased.json")
    for card, row in page.items():
        for theirs, mine in zip(row, ours[card], strict=True):
            assert abs(theirs - mine) <= 0.01 * theirs, (card, row, ours[card])


@pytest.mark.parametrize(("seed", "config"), [
    ("xlm-roberta-base", "FacebookAI__xlm-roberta-base.json"),
    ("distilbert-base-uncased", "distilbert__distilbert-base-uncased.json"),
])
def test_structure_table_matches_the_page(seed: str, config: str) -> None:
    rows = [(int(m[1]), m[2], m[3].strip(), m[4]) for m in STRUCT_ROW.finditer(seed_text(seed))]
    assert rows, "no structure rows parsed"
    nodes = plan_of(load(config)).structure
    got = [(n.index, n.name, n.type, " × ".join(map(str, n.shape))) for n in nodes]
    assert got == rows


def test_cost_reproduces_the_pages_a10g_figure() -> None:
    p = plan_of(load("FacebookAI__xlm-roberta-base.json"))
    assert p.cost is not None and "$1.77" in seed_text("xlm-roberta-base")
    assert round(p.cost.usd, 2) == 1.77
    assert p.cost.tokens_per_sample == 514 and p.cost.assumptions == CostAssumptions()
    pricier = plan_of(load("FacebookAI__xlm-roberta-base.json"),
                      assumptions=CostAssumptions(price_per_hour=2.012))
    assert pricier.cost is not None and round(pricier.cost.usd, 2) == round(2 * p.cost.usd, 2)


def test_seed_verifier_finding_on_xlm_roberta() -> None:
    ids = {f.id for f in plan_of(load("FacebookAI__xlm-roberta-base.json")).findings}
    assert "deep-attention-default-init" in ids
    assert "deep-attention-default-init" in seed_text("xlm-roberta-base")
    distil = {f.id for f in plan_of(load("distilbert__distilbert-base-uncased.json")).findings}
    assert "deep-attention-default-init" not in distil
