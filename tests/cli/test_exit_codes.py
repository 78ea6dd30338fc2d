"""The CLI contract: exit codes 0/1/2, one-line errors, --json prints only JSON."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.cli_helpers import Cli


def test_usage_error_exits_2(tmp_path: Path) -> None:
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'hw.db'}")
    assert cli("no-such-command").code == 2
    assert cli("history").code == 2  # missing SOURCE
    r = cli("track", "org/model", "--backfill", "bogus")
    assert r.code == 2 and r.err.count("\n") == 1


def test_errors_are_one_line_without_traceback(tmp_path: Path) -> None:
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'hw.db'}")
    r = cli("history", "org/not-tracked", "--json")
    assert r.code == 1
    assert r.out == ""
    assert r.err.startswith("hubwatch: error:") and r.err.count("\n") == 1
    assert "Traceback" not in r.err
    r = cli("track", str(tmp_path / "missing-repo"), "--as", "org/x")
    assert r.code == 1 and "Traceback" not in r.err and r.err.count("\n") == 1


def test_json_output_is_one_document(tmp_path: Path) -> None:
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'hw.db'}")
    r = cli.ok("repos", "--json")
    assert json.loads(r.out) == []
    r = cli.ok("poll", "--json")
    assert json.loads(r.out) == []


def test_bad_config_is_an_error(tmp_path: Path) -> None:
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'hw.db'}", extra_config="[nonsense]\nx = 1\n")
    r = cli("repos")
    assert r.code == 1 and "unknown section" in r.err
