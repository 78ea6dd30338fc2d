"""Every corpus config with a count in params.json gets exactly that count."""

from __future__ import annotations

import pytest

from tests.planner.helpers import load, params_table, plan_of
from tracker.extract.model_config import parse_model_config
from tracker.planner.params import count_params

COUNTED = sorted(k for k, v in params_table().items() if v["params"] is not None)
REMOTE = sorted(k for k, v in params_table().items() if v["params"] is None)


def test_corpus_is_there() -> None:
    assert len(COUNTED) >= 40 and len(REMOTE) == 4


@pytest.mark.parametrize("name", COUNTED)
def test_exact_count(name: str) -> None:
    info = params_table()[name]
    config = load(name)
    assert config["architectures"][0] == info["architecture"]
    p = plan_of(config)
    assert p.supported
    assert p.params.total == info["params"]
    assert not [f for f in p.findings if f.id in ("head-unknown", "unsupported-architecture")]


@pytest.mark.parametrize("name", REMOTE)
def test_remote_code_configs_are_planned_or_refused(name: str) -> None:
    p = plan_of(load(name))
    ids = {f.id for f in p.findings}
    assert "remote-code" in ids
    if p.supported:
        assert p.params.total > 0 and p.memory.full_finetune > 0
    else:
        assert "unsupported-architecture" in ids


def test_moe_active_is_a_fraction_of_total() -> None:
    mixtral = count_params(parse_model_config(load("mistralai__Mixtral-8x7B-v0.1.json"))).tally
    active = mixtral.total - mixtral.inactive
    assert 12.8e9 < active < 13.0e9  # Mixtral's published 12.9B active
    r1 = plan_of(load("deepseek-ai__DeepSeek-R1.json"))
    assert 36e9 < r1.params.active < 38e9  # "671B total / 37B activated"
    oss = plan_of(load("openai__gpt-oss-20b.json"))
    # "21B total / 3.6B active": OpenAI's active count leaves out the input embedding
    assert 3.6e9 < oss.params.active - oss.params.groups["embeddings"] < 3.62e9


def test_checkpoint_delta_is_explained() -> None:
    # the seed page: the xlm-roberta-base checkpoint holds 278,885,778 scalars
    p = plan_of(load("FacebookAI__xlm-roberta-base.json"), checkpoint_params=278_885_778)
    assert p.params.checkpoint == 278_885_778
    assert p.params.delta_pct is not None and round(p.params.delta_pct, 2) == -0.21
    assert "pooler" in p.params.explanation
    exact = plan_of(load("FacebookAI__xlm-roberta-base.json"), checkpoint_params=p.params.total)
    assert exact.params.delta_pct == 0.0
    odd = plan_of(load("FacebookAI__xlm-roberta-base.json"), checkpoint_params=p.params.total + 7)
    assert any(f.id == "checkpoint-param-delta" and f.level.value == "warning"
               for f in odd.findings)


def test_checkpoint_scalars_from_safetensors_headers() -> None:
    from tracker.model.core import TensorInfo, WeightFile, WeightManifest
    from tracker.planner import checkpoint_scalars

    full = WeightManifest(files=(
        WeightFile("model-1.safetensors", 10, "sha256:a", "safetensors",
                   (TensorInfo("a", "BF16", (3, 4)), TensorInfo("b", "F32", (5,)))),
        WeightFile("model-2.safetensors", 10, "sha256:b", "safetensors",
                   (TensorInfo("c", "BF16", (2, 2, 2)),)),
        WeightFile("pytorch_model.bin", 10, "sha256:c", "pickle"),
    ))
    assert checkpoint_scalars(full) == 12 + 5 + 8
    partial = WeightManifest(files=(*full.files,
                                    WeightFile("model-3.safetensors", 1, "x", "safetensors")))
    assert checkpoint_scalars(partial) is None
    assert checkpoint_scalars(WeightManifest()) is None
