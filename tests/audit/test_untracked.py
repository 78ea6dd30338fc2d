"""An untracked Hub repo in an input is read once through the Hub (the emulator), not tracked."""

from __future__ import annotations

import json
from pathlib import Path

from tests.audit.conftest import write_lock
from tests.e2e.cli_helpers import Cli
from tests.hubemu import HubEmulator, RepoBuilder

TOK = {"bos_token": "<s>", "eos_token": "</s>", "chat_template": "{{ messages }}"}


def test_untracked_repo_is_read_once_and_not_tracked(tmp_path: Path) -> None:
    b = RepoBuilder.init(tmp_path / "up.git")
    base = b.commit({"tokenizer_config.json": json.dumps(TOK).encode(), "README.md": b"a"})
    b.commit({"tokenizer_config.json": json.dumps({**TOK, "eos_token": "<eot>"}).encode()})
    readme = b.commit({"README.md": b"b"})
    lock = write_lock(tmp_path / "models.lock", [("acme/tiny", base), ("acme/tiny", readme), ("acme/gone", base)])
    with HubEmulator() as hub:
        hub.add_repo("acme/tiny", b.path)
        cli = Cli(tmp_path / "cli", f"sqlite:///{tmp_path / 'hw.db'}", extra_config=f'[hub]\nendpoint = "{hub.url}"\n')
        r = cli("audit", "--format", "json", str(lock))
        assert r.code == 3, r.err
        first, second, gone = json.loads(r.out)["models"]
        assert first["advisories"] == [] and first["behind"] == 2 and first["upstream_head"] == readme
        assert first["severities_since"] and second["behind"] == 0
        (adv,) = second["advisories"]
        assert adv["severity"] in ("HIGH", "CRITICAL")
        assert gone["known"] is False and "not on the Hub" in gone["note"]
        assert cli.ok("repos", "--json").json() == []  # nothing got tracked
        offline = cli("audit", "--offline", "--format", "json", str(lock))
        assert offline.code == 0 and all(m["known"] is False for m in json.loads(offline.out)["models"])


def test_unreachable_hub_leaves_untracked_repos_unknown(tmp_path: Path) -> None:
    from tests.api.data import free_port

    lock = write_lock(tmp_path / "models.lock", [("acme/tiny", "8" * 40)])
    endpoint = f"http://127.0.0.1:{free_port()}"
    cli = Cli(tmp_path / "cli", f"sqlite:///{tmp_path / 'hw.db'}",
              extra_config=f'[hub]\nendpoint = "{endpoint}"\ntimeout_seconds = 5\n')
    r = cli("audit", "--format", "json", str(lock))
    assert r.code == 0, r.err
    (model,) = json.loads(r.out)["models"]
    assert model["known"] is False and "could not be read" in model["note"]
    assert cli("audit", "--fail-on", "unknown", str(lock)).code == 3
