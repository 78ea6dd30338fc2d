"""Fixtures for the tracker.hub tests: a fresh Hub emulator per test and a small built repo."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.hubemu import hf_test_env

hf_test_env()  # before huggingface_hub's constants are imported

import pytest  # noqa: E402

from tests.hubemu import HubEmulator, RepoBuilder, safetensors_bytes  # noqa: E402

REPO = "acme/tiny-model"
WEIGHTS = safetensors_bytes({"w": ("F16", [4, 4]), "b": ("F32", [4])}, metadata={"format": "pt"})


@dataclass
class Tiny:
    """A two-commit repo served as ``acme/tiny-model``."""

    builder: RepoBuilder
    first: str
    head: str


@pytest.fixture
def hub() -> Iterator[HubEmulator]:
    with HubEmulator(commits_page=2) as emu:
        yield emu
    assert not emu.internal_errors, emu.internal_errors


@pytest.fixture
def tiny(tmp_path: Path, hub: HubEmulator) -> Tiny:
    b = RepoBuilder.init(tmp_path / "tiny.git")
    first = b.commit(
        {"config.json": b'{"model_type": "tiny"}', "model.safetensors": WEIGHTS}, title="init"
    )
    head = b.commit({"README.md": b"# tiny\n"}, title="card")
    hub.add_repo(REPO, b.path)
    return Tiny(b, first, head)
