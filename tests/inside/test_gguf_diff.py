"""GGUF changes in the diff: named templates, tokenizer keys, hyper-parameters, quant mix."""

from __future__ import annotations

from dataclasses import replace

from advisories.rules import apply_rules
from tests.extract.snapshots import snapshot_of
from tests.inside.ggufs import TEMPLATE_V1, TEMPLATE_V2, gguf_bytes
from tracker.diff import diff_artifacts
from tracker.extract import extract_artifacts
from tracker.extract.gguf import digest_gguf
from tracker.extract.gguf_reader import parse_gguf_header
from tracker.model import RevisionDiff

PATH = "tiny-Q4_K_M.gguf"


def _snap(blob: bytes, sha: str, path: str = PATH):
    digest = digest_gguf(parse_gguf_header(blob, file_size=len(blob), max_bytes=10**7))
    return replace(snapshot_of({path: blob}, sha), weight_digests={path: digest})


def _diff(a: bytes, b: bytes, path: str = PATH) -> RevisionDiff:
    base = extract_artifacts(_snap(a, "a" * 40, path))
    head = extract_artifacts(_snap(b, "b" * 40, path))
    return apply_rules(diff_artifacts(base, head, base_sha="a" * 40, head_sha="b" * 40))


def _by(diff: RevisionDiff, kind: str):
    return [c for c in diff.changes if c.kind.value == kind]


def test_named_templates_are_chat_template_changes_on_the_gguf_path() -> None:
    a = gguf_bytes(named_templates={"tool_use": "{{ tools }}"})
    b = gguf_bytes(named_templates={"tool_use": "{{ tools | tojson }}", "rag": "{{ documents }}"})
    changes = {c.detail["name"]: c for c in _by(_diff(a, b), "chat_template")}
    assert set(changes) == {"tool_use", "rag"}
    assert changes["tool_use"].path == PATH and changes["tool_use"].severity.value == "HIGH"
    assert changes["tool_use"].detail["text"]["diff"]
    assert changes["rag"].topics == ("chat_template.added",)


def test_rendering_uses_the_files_own_special_tokens() -> None:
    diff = _diff(gguf_bytes(template=TEMPLATE_V1), gguf_bytes(template=TEMPLATE_V2, eos=3))
    (template,) = _by(diff, "chat_template")
    rendered = {r["probe"]: r for r in template.detail["rendered"]}
    assert rendered["system_user"]["old"].startswith("<s><|system|>")
    assert "<|eot|>" in rendered["system_user"]["new"] and "</s>" not in rendered["system_user"]["new"]


def test_hyper_parameters_get_config_json_severities() -> None:
    diff = _diff(gguf_bytes(context=4096), gguf_bytes(context=8192, extra={"general.license": "mit"}))
    (config,) = _by(diff, "config")
    assert "llama.context_length 4096 -> 8192" in config.summary
    assert set(config.topics) == {"config.context_length", "config.gguf_metadata"}
    assert config.severity.value == "MODERATE"


def test_the_quant_mix_is_named() -> None:
    diff = _diff(gguf_bytes(ffn_type="Q4_K"), gguf_bytes(ffn_type="Q8_0"))
    (quant,) = [c for c in _by(diff, "weights") if "weights.quant" in c.topics]
    assert "ffn_down Q4_K -> Q8_0 on 2 tensors" in quant.summary
    assert "file type MOSTLY_Q4_K_M -> MOSTLY_Q8_0" in quant.summary
    assert quant.severity.value == "HIGH"
    assert quant.detail["bytes_by_type"]["Q8_0"] == {"old": 0, "new": 2 * 512 * 256 // 32 * 34}


def test_vocab_change_is_a_tokenizer_change() -> None:
    tokens = ["<unk>", "<s>", "</s>", "<|eot|>", *[f"t{i}" for i in range(97)]]
    diff = _diff(gguf_bytes(), gguf_bytes(tokens=tokens))
    (tok,) = _by(diff, "tokenizer")
    assert "vocab 100 -> 101" in tok.summary and "tokenizer.vocab" in tok.topics


def test_same_content_is_no_change_and_the_inverse_swaps() -> None:
    a, b = gguf_bytes(template=TEMPLATE_V1), gguf_bytes(template=TEMPLATE_V2, eos=3)
    assert _diff(a, a).changes == ()
    forward = {(c.kind, c.path, c.topics) for c in _diff(a, b).changes}
    backward = {(c.kind, c.path, c.topics) for c in _diff(b, a).changes}
    assert forward == backward  # changed both ways: same kinds, paths and topics


def test_a_gguf_only_repo_is_planned_from_its_header() -> None:
    from tracker.pipeline.plan_step import PlanStep

    a, b = gguf_bytes(ffn_type="Q4_K"), gguf_bytes(ffn_type="Q8_0", context=8192)
    base = extract_artifacts(_snap(a, "a" * 40))
    head = extract_artifacts(_snap(b, "b" * 40))
    first, _, _ = PlanStep().run(None, base, first=True)
    assert first is not None
    info = base.weights.files[0].gguf
    assert first["params"]["checkpoint"] == sum(t.numel for t in info.tensors)
    assert first["memory_bytes"]["serve_weights"] == sum(info.tensor_bytes.values())
    assert any(f["id"] == "gguf-weights" for f in first["findings"])
    new, delta, change = PlanStep().run(base, head, first=False)
    assert new["memory_bytes"]["serve_weights"] > first["memory_bytes"]["serve_weights"]  # Q8_0 > Q4_K
    assert change is not None and change.path == PATH and delta
    assert PlanStep().run(head, head, first=False) == (None, None, None)  # same files: no re-plan


def test_split_files_are_one_model_and_q4_k_m_is_planned_first() -> None:
    from tracker.extract.gguf_config import choose_gguf

    blob = gguf_bytes()
    digest = digest_gguf(parse_gguf_header(blob, file_size=len(blob), max_bytes=10**7))
    names = ["m-Q8_0-00001-of-00002.gguf", "m-Q8_0-00002-of-00002.gguf", "m-Q4_K_M.gguf"]
    snap = replace(snapshot_of(dict.fromkeys(names, blob)), weight_digests=dict.fromkeys(names, digest))
    model = choose_gguf(extract_artifacts(snap).weights)
    assert model is not None and model.path == "m-Q4_K_M.gguf" and len(model.content_ids) == 1
    only_split = replace(snap, files=tuple(f for f in snap.files if "Q8_0" in f.path))
    split = choose_gguf(extract_artifacts(only_split).weights)
    assert split is not None and split.path == names[0] and len(split.content_ids) == 2
    assert split.tensor_scalars == 2 * model.tensor_scalars
