"""Audit tests: one tracked repo with a HIGH advisory and a revert, shared per module.

``tracked`` holds the repo's git path, its four shas (initial, template change = HIGH
advisory, README only, revert plus a new vocabulary file = an advisory of its own: a pure
revert publishes none), the advisory ids and a CLI bound to the store. The history is tracked once per module (it is the slow part).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.hubemu import hf_test_env

hf_test_env()  # before huggingface_hub's constants are imported

import pytest  # noqa: E402

from tests.e2e.cli_helpers import Cli  # noqa: E402
from tests.e2e.gitrepo import ModelRepo  # noqa: E402
from tests.e2e.test_advisory_lifecycle import TEMPLATE_A, TEMPLATE_B  # noqa: E402


def _repo(base: Path) -> tuple[ModelRepo, list[str]]:
    repo = ModelRepo(base / "up")
    tok = {"bos_token": "<s>", "eos_token": "</s>", "chat_template": TEMPLATE_A}
    shas = [
        repo.commit("initial", {"tokenizer_config.json": tok, "README.md": "a"}),
        repo.commit("template with bos", {"tokenizer_config.json": {**tok, "chat_template": TEMPLATE_B}}),
        repo.commit("readme", {"README.md": "b"}),
        repo.commit("revert template, add a vocabulary", {"tokenizer_config.json": tok, "tokenizer.model": b"vocab"}),
    ]
    return repo, shas


@dataclass
class Tracked:
    repo: ModelRepo
    shas: list[str]
    adv: str  # introduced at shas[1], fixed at shas[3]
    revert: str  # introduced at shas[3]
    cli: Cli
    db_url: str


@pytest.fixture(scope="module")
def tracked(tmp_path_factory: pytest.TempPathFactory) -> Tracked:
    base = tmp_path_factory.mktemp("audit")
    repo, shas = _repo(base)
    url = f"sqlite:///{base / 'hw.db'}"
    cli = Cli(base / "cli", url)
    cli.ok("track", str(repo.path), "--as", "org/model")
    ids = {e["sha"]: e["advisory_id"] for e in cli.ok("history", "org/model", "--json").json()}
    assert ids[shas[1]] and ids[shas[3]]
    return Tracked(repo, shas, ids[shas[1]], ids[shas[3]], cli, url)


def write_lock(path: Path, entries: list[tuple[str, str]]) -> Path:
    """A models.lock by hand, the way a person would write one."""
    text = "".join(f'[[model]]\nrepo = "{r}"\nrevision = "{v}"\n\n' for r, v in entries)
    path.write_text(text, encoding="utf-8")
    return path
