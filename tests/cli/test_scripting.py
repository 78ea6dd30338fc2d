"""The CLI as scripts use it (issue 15 point 7): errors that say what is wrong with the exit
code a script can branch on, labelled ``plan --json`` output, ``--debug`` anywhere,
``show X main``, ``poll --strict``, and a busy port as one error line."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

from tests.e2e.cli_helpers import Cli
from tests.e2e.gitrepo import ModelRepo

CONFIG = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 1000,
          "max_position_embeddings": 256, "torch_dtype": "bfloat16"}


def _cli(tmp_path: Path, extra: str = "") -> Cli:
    return Cli(tmp_path / "hw", f"sqlite:///{tmp_path / 'hw.db'}", extra)


def _one_error_line(err: str) -> str:
    (line,) = err.splitlines()
    assert line.startswith("hubwatch: error: ") and "Traceback" not in err
    return line


def test_plan_names_a_missing_file_and_bad_json_is_an_error_not_usage(tmp_path: Path) -> None:
    cli = _cli(tmp_path)
    missing = cli("plan", "missing.json")
    assert missing.code == 1 and _one_error_line(missing.err) == "hubwatch: error: no such file: missing.json"
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    r = cli("plan", str(bad))
    assert r.code == 1 and "not a JSON config" in _one_error_line(r.err)
    listy = tmp_path / "list.json"
    listy.write_text("[1, 2]", encoding="utf-8")
    assert cli("plan", str(listy)).code == 1


def test_plan_json_labels_every_element_with_its_input(tmp_path: Path) -> None:
    cli = _cli(tmp_path)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(CONFIG), encoding="utf-8")
    b.write_text(json.dumps({**CONFIG, "num_hidden_layers": 4}), encoding="utf-8")
    one = cli.ok("plan", str(a), "--json").json()
    assert isinstance(one, dict) and one["input"] == str(a)
    both = cli.ok("plan", str(a), str(b), "--json").json()
    assert [d["input"] for d in both] == [str(a), str(b)]
    assert {k: v for k, v in both[0].items()} == one
    assert both[1]["params"]["total"] > both[0]["params"]["total"]


def test_debug_works_after_the_command(tmp_path: Path) -> None:
    cli = _cli(tmp_path)
    plain = cli("history", "org/none")
    assert plain.code == 1 and "Traceback" not in plain.err
    for args in (("history", "org/none", "--debug"), ("--debug", "history", "org/none")):
        r = cli(*args)
        assert r.code == 1 and "Traceback" in r.err and r.err.rstrip().endswith("not tracked: org/none")


def test_show_takes_the_branch_name_or_head(tmp_path: Path) -> None:
    repo = ModelRepo(tmp_path / "up")
    repo.commit("one", {"config.json": CONFIG})
    head = repo.commit("two", {"config.json": {**CONFIG, "hidden_size": 128}})
    cli = _cli(tmp_path)
    cli.ok("track", str(repo.path), "--as", "org/m")
    for rev in ("main", "HEAD", head[:8]):
        assert cli.ok("show", "org/m", rev, "--json").json()["sha"] == head
    assert cli.ok("diff", "org/m", f"{head[:8]}", "HEAD", "--json").json()["head"] == head
    assert cli("show", "org/m", "nope").code == 1


def test_poll_strict_fails_when_any_repo_failed(tmp_path: Path) -> None:
    good, bad = ModelRepo(tmp_path / "good"), ModelRepo(tmp_path / "bad")
    good.commit("one", {"config.json": CONFIG})
    bad.commit("one", {"config.json": CONFIG})
    cli = _cli(tmp_path)
    cli.ok("track", str(good.path), "--as", "org/good")
    cli.ok("track", str(bad.path), "--as", "org/bad")
    assert cli.ok("poll", "--strict").code == 0
    shutil.rmtree(bad.path)
    lenient = cli("poll", "--json")
    assert lenient.code == 0 and {p["repo"]: p["status"] for p in lenient.json()} == {
        "org/bad": "error", "org/good": "unchanged"}
    strict = cli("poll", "--strict")
    assert strict.code == 1 and "1 of 2 repo(s) failed: org/bad" in strict.err


def test_serve_on_a_busy_port_is_one_error_line(tmp_path: Path) -> None:
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    try:
        port = busy.getsockname()[1]
        for command in ("serve", "run"):
            cli = _cli(tmp_path / command, f'[server]\nhost = "127.0.0.1"\nport = {port}\n')
            r = cli(command)
            assert r.code == 1, (command, r.err)
            assert f"could not listen on 127.0.0.1:{port}" in _one_error_line(r.err)
            assert not (tmp_path / command / "hw.db").exists()  # refused before the store opened
    finally:
        busy.close()
