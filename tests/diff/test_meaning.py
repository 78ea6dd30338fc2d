"""Meaning keys (tracker.diff.meaning): unequal keys must rule a restore out, so whenever the
full diff finds no change with a severity on config.json or generation_config.json, the two
versions' keys agree; and keys tell real changes apart."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.diff.helpers import diff_files
from tracker.diff.meaning import KEYED_DOCUMENTS, meaning_key
from tracker.extract.jsonsafe import load_json

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.0, -0.0, 1.0, 0.5]),
                    st.sampled_from(["a", "b", "4.40.0"]))
CONFIG_KEYS = ["_name_or_path", "transformers_version", "_commit_hash", "eos_token_id", "hidden_size",
               "torch_dtype", "model_type", "other"]
SUB = st.dictionaries(st.sampled_from(CONFIG_KEYS), SCALARS, max_size=4)
CONFIGS = st.dictionaries(st.sampled_from([*CONFIG_KEYS, "text_config", "vision_config"]),
                          st.one_of(SCALARS, SUB), max_size=6)
GENERATION = st.dictionaries(st.sampled_from(["transformers_version", "_from_model_config", "temperature",
                                              "top_p", "eos_token_id", "other"]), SCALARS, max_size=5)


def _severe_on(path: str, a: dict[str, Any], b: dict[str, Any]) -> bool:
    diff = diff_files({path: json.dumps(a).encode()}, {path: json.dumps(b, indent=2).encode()})
    return any(c.severity is not None and c.path == path for c in diff.changes)


def _key(path: str, doc: dict[str, Any]) -> str | None:  # as the lifecycle reads a stored file
    return meaning_key(path, load_json(json.dumps(doc).encode(), max_bytes=1 << 20))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=CONFIGS, b=CONFIGS)
def test_config_without_a_severe_change_keeps_its_key(a: dict[str, Any], b: dict[str, Any]) -> None:
    if not _severe_on("config.json", a, b):
        assert _key("config.json", a) == _key("config.json", b)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=GENERATION, b=GENERATION)
def test_generation_config_without_a_severe_change_keeps_its_key(a: dict[str, Any], b: dict[str, Any]) -> None:
    if not _severe_on("generation_config.json", a, b):
        assert _key("generation_config.json", a) == _key("generation_config.json", b)


def test_bookkeeping_and_format_keep_the_key_and_a_field_moves_it() -> None:
    config = {"model_type": "llama", "eos_token_id": 2, "transformers_version": "4.40.0",
              "text_config": {"hidden_size": 8, "_name_or_path": "x"}}
    same = {**config, "transformers_version": "4.41.0", "text_config": {"hidden_size": 8, "_name_or_path": "y"}}
    assert meaning_key("config.json", config) == meaning_key("config.json", dict(reversed(list(same.items()))))
    assert meaning_key("config.json", config) != meaning_key("config.json", {**config, "eos_token_id": 3})
    assert meaning_key("config.json", config) != meaning_key("config.json", {**config, "eos_token_id": 2.0})
    # a bookkeeping name outside a sub-config is a field like any other there
    assert meaning_key("config.json", {"rope": {"transformers_version": 1}}) != meaning_key(
        "config.json", {"rope": {"transformers_version": 2}})
    gen = {"temperature": 0.7, "_from_model_config": True}
    assert meaning_key("generation_config.json", gen) == meaning_key("generation_config.json", {"temperature": 0.7})
    assert meaning_key("generation_config.json", gen) != meaning_key("generation_config.json", {"temperature": 0.8})


def test_no_key_where_none_is_defined() -> None:
    assert set(KEYED_DOCUMENTS) == {"config.json", "generation_config.json"}
    assert meaning_key("tokenizer_config.json", {"eos_token": "</s>"}) is None
    assert meaning_key("config.json", ["not", "an", "object"]) is None
    assert meaning_key("config.json", None) is None
