"""The CLI's text for people: sentences, the rule's reason, ellipsis, quiet pipes, --version."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.e2e.cli_helpers import Cli
from tests.hubemu import clone_bundle
from tracker import __version__

REPO = "google/gemma-2b-it"


def test_history_and_show_speak_in_sentences(tmp_path: Path) -> None:
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'hw.db'}")
    cli.ok("track", str(clone_bundle(REPO, tmp_path / "mirror")), "--as", REPO)
    plain = cli.ok("history", REPO).out
    why = cli.ok("history", REPO, "--why").out
    sentence = "Chat template 'default' changed: now starts with bos_token"
    assert sentence in plain and "why:" not in plain
    assert "why: A chat template's text changed (see its rendered diff)." in why
    assert "1 change with no severity: README.md changed." in plain
    assert all(len(line) <= 120 for line in why.splitlines())
    assert any(line.endswith("…") for line in why.splitlines())  # cut lines say so
    sha = next(e["sha"] for e in cli.ok("history", REPO, "--json").json() if e["advisory_id"]
               and any(c["kind"] == "chat_template" for c in e["changes"]))
    shown = cli.ok("show", REPO, sha).out
    assert "- [HIGH] Chat template (tokenizer_config.json): " in shown
    assert "why: A chat template's text changed" in shown and "prompt for a multi-turn conversation:" in shown
    assert "rendered_changed" not in shown and "old_error" not in shown


def test_version_and_a_closed_pipe(tmp_path: Path) -> None:
    version = subprocess.run([sys.executable, "-m", "tracker.cli", "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.strip() == f"hubwatch {__version__}"
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[storage]\nurl = "sqlite:///{tmp_path / "hw.db"}"\n', encoding="utf-8")
    # the reader is gone before the command writes (as `| head` is once it has its lines)
    proc = subprocess.Popen([sys.executable, "-m", "tracker.cli", "--config", str(cfg), "repos"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0
    assert "Broken pipe" not in err and "Traceback" not in err and err == ""
