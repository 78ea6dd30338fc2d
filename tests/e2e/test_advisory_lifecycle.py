"""Advisories through the pipeline: ids stable across databases, `fixed` when a later revision
restores the content, history rewrites mark records, every record valid OSV."""

from __future__ import annotations

from pathlib import Path

from advisories.schema import validate
from tests.e2e.cli_helpers import Cli
from tests.e2e.gitrepo import ModelRepo

TEMPLATE_A = "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{% endfor %}"
TEMPLATE_B = "{{ bos_token }}" + TEMPLATE_A


def _repo(tmp_path: Path) -> tuple[ModelRepo, list[str]]:
    repo = ModelRepo(tmp_path / "up")
    tok = {"bos_token": "<s>", "eos_token": "</s>", "chat_template": TEMPLATE_A}
    shas = [
        repo.commit("initial", {"tokenizer_config.json": tok, "README.md": "a"}),
        repo.commit("template with bos", {"tokenizer_config.json": {**tok, "chat_template": TEMPLATE_B}}),
        repo.commit("readme", {"README.md": "b"}),
        repo.commit("revert template", {"tokenizer_config.json": tok}),
    ]
    return repo, shas


def test_revert_adds_fixed_event_and_ids_are_stable(tmp_path: Path) -> None:
    repo, shas = _repo(tmp_path)
    cli = Cli(tmp_path / "one", f"sqlite:///{tmp_path / 'one.db'}")
    cli.ok("track", str(repo.path), "--as", "org/model")
    history = {e["sha"]: e for e in cli.ok("history", "org/model", "--json").json()}
    assert history[shas[0]]["advisory_id"] is None  # the baseline
    assert history[shas[2]]["advisory_id"] is None  # README only
    adv_id = history[shas[1]]["advisory_id"]
    assert adv_id and history[shas[1]]["severity"] == "HIGH"
    record = cli.ok("advisory", adv_id).json()
    events = record["affected"][0]["ranges"][0]["events"]
    assert {"introduced": shas[1]} in events and {"fixed": shas[3]} in events
    assert record["modified"] >= record["published"]
    assert history[shas[3]]["advisory_id"] is None and history[shas[3]]["severity"] is None  # a revert: no new one
    assert any(c["summary"].startswith(f"restores tokenizer_config.json as it was at {shas[0][:12]} (fixes {adv_id})")
               for c in history[shas[3]]["changes"])
    shown = cli.ok("show", "org/model", shas[1]).out
    assert "prompt for a user message" in shown or "prompt for a multi-turn conversation" in shown
    assert "\n        +<s>" in shown  # the prompt now starts with bos
    assert "why: A chat template's text changed (see its rendered diff)." in shown
    records = cli.ok("advisories", "--json").json()
    assert {r["id"] for r in records} == {e["advisory_id"] for e in history.values() if e["advisory_id"]}
    for r in records:
        validate(r)

    again = Cli(tmp_path / "two", f"sqlite:///{tmp_path / 'two.db'}")
    again.ok("track", str(repo.path), "--as", "org/model")
    assert {r["id"] for r in again.ok("advisories", "--json").json()} == {r["id"] for r in records}


def test_a_semantic_restore_fixes_and_publishes_nothing(tmp_path: Path) -> None:
    """Restored with other bytes (keys re-ordered, re-indented, a bookkeeping key changed): same meaning."""
    import json

    repo = ModelRepo(tmp_path / "up")
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "eos_token_id": 2,
              "transformers_version": "4.40.0"}
    shas = [
        repo.commit("initial", {"config.json": config}),
        repo.commit("eos 3", {"config.json": {**config, "eos_token_id": 3}}),
        repo.commit("back to eos 2", {"config.json": json.dumps(
            dict(reversed(list({**config, "transformers_version": "4.41.0"}.items()))), indent=4)}),
    ]
    cli = Cli(tmp_path / "w", f"sqlite:///{tmp_path / 'hw.db'}")
    cli.ok("track", str(repo.path), "--as", "org/model")
    history = {e["sha"]: e for e in cli.ok("history", "org/model", "--json").json()}
    adv_id = history[shas[1]]["advisory_id"]
    assert adv_id and history[shas[1]]["severity"] == "MODERATE"
    record = cli.ok("advisory", adv_id).json()
    assert {"fixed": shas[2]} in record["affected"][0]["ranges"][0]["events"]
    assert history[shas[2]]["advisory_id"] is None and history[shas[2]]["severity"] is None
    restore = next(c for c in history[shas[2]]["changes"] if c["path"] == "config.json" and "restores" in c["summary"])
    assert restore["summary"].startswith(f"restores config.json as it was at {shas[0][:12]} (fixes {adv_id})")
    assert "eos_token_id" in restore["summary"]
    assert [r["id"] for r in cli.ok("advisories", "--json").json()] == [adv_id]


def test_export_holds_exactly_the_advisories(tmp_path: Path) -> None:
    import json
    import zipfile

    repo, _ = _repo(tmp_path)
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'hw.db'}")
    cli.ok("track", str(repo.path), "--as", "org/model")
    out = tmp_path / "osv"
    cli.ok("export", "osv", str(out))
    ids = {r["id"] for r in cli.ok("advisories", "--json").json()}
    index = json.loads((out / "all.json").read_text())
    assert {e["id"] for e in index} == ids
    assert {p.stem for p in out.glob("*.json")} - {"all"} == ids
    with zipfile.ZipFile(out / "all.zip") as z:
        assert {Path(n).stem for n in z.namelist()} == ids
