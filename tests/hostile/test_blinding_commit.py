"""A commit the store cannot take as it is never hides the commits after it (issue 16,
point 3): a file name that is not UTF-8, a NUL and terminal escapes in a commit message,
``NaN`` in config.json and a 2 MB commit message are each recorded, and the CRITICAL commit
after them (auto_map plus pickle weights) is recorded with its advisory, on SQLite and
PostgreSQL. A revision that the database refuses even cleaned is recorded bare."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from sqlalchemy.exc import DataError

from storage import open_store
from storage.records import NewRevision
from storage.sanitise import clean_json, clean_text
from tests.daemon.helpers import config_bytes
from tests.e2e.cli_helpers import Cli
from tests.hubemu import RepoBuilder
from tests.hubemu.repos import Lfs


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True, check=True).stdout.strip()


def _raw_commit(b: RepoBuilder, message: bytes, extra: tuple[bytes, bytes] | None = None) -> str:
    """A commit object written byte for byte: any message, any file name."""
    parent = _git(b.path, "rev-parse", "refs/heads/main").decode()
    tree = _git(b.path, "rev-parse", f"{parent}^{{tree}}").decode()
    if extra is not None:
        name, data = extra
        oid = _git(b.path, "hash-object", "-w", "--stdin", stdin=data)
        listing = _git(b.path, "ls-tree", "-z", tree) + b"\0"
        entries = [e for e in listing.split(b"\0") if e] + [b"100644 blob " + oid + b"\t" + name]
        tree = _git(b.path, "mktree", "-z", stdin=b"\0".join(entries) + b"\0").decode()
    obj = (f"tree {tree}\nparent {parent}\nauthor Mallory <m@x> 1710000000 +0000\n"
           f"committer Mallory <m@x> 1710000000 +0000\n\n").encode() + message
    sha = _git(b.path, "hash-object", "-t", "commit", "-w", "--literally", "--stdin", stdin=obj).decode()
    _git(b.path, "update-ref", "refs/heads/main", sha)
    return sha


def _hostile_history(path: Path) -> tuple[RepoBuilder, dict[str, str]]:
    b = RepoBuilder.init(path)
    shas = {"baseline": b.commit({"config.json": config_bytes()}, title="baseline")}
    shas["nul"] = _raw_commit(b, b"title with a NUL \x00 and \x1b]0;pwned\x07 escapes\n\nbody \x00\x1b[2J\n")
    nan = json.loads(config_bytes())
    nan_text = json.dumps({**nan, "max_position_embeddings": 4096})[:-1] + ', "rope_theta": NaN, "x": -Infinity}'
    shas["nan"] = b.commit({"config.json": nan_text.encode()}, title="NaN in config.json")
    shas["huge"] = b.commit({"README.md": b"x"}, title="huge message", message="m" * 2_000_000)
    shas["bad name"] = _raw_commit(b, b"a file name that is not UTF-8\n",
                                   (b"modeling_\xff\xfe.py", b"print('hi')\n"))
    remote = {**nan, "auto_map": {"AutoModelForCausalLM": "modeling_evil.EvilForCausalLM"}}
    shas["critical"] = b.commit({"config.json": json.dumps(remote).encode(),
                                 "modeling_evil.py": b"import os\nos.system('id')\n",
                                 "pytorch_model.bin": Lfs(b"\x80\x04pickle")}, title="backdoor", replace=True)
    return b, shas


def test_no_commit_blinds_the_tracker(tmp_path: Path, db_url: str) -> None:
    b, shas = _hostile_history(tmp_path / "evil.git")
    cli = Cli(tmp_path / "cli", db_url)
    tracked = cli.ok("track", str(b.path), "--as", "evil/model", "--json").json()
    assert tracked["poll"]["status"] == "ok" and tracked["poll"]["new_revisions"] == len(shas), tracked
    store = open_store(db_url)
    try:
        repo = store.get_repo("evil/model")
        assert repo is not None and repo.head_sha == shas["critical"]
        by_sha = {r.sha: r for r in store.history("evil/model")}
        assert set(by_sha) == set(shas.values())
        assert "\x00" not in by_sha[shas["nul"]].title and "\x1b" not in by_sha[shas["nul"]].message
        assert "\\x00" in by_sha[shas["nul"]].title
        assert any("\\xff" in c.path for c in by_sha[shas["bad name"]].changes)
        assert len(by_sha[shas["huge"]].message) < 70_000 and "characters cut" in by_sha[shas["huge"]].message
        critical = by_sha[shas["critical"]]
        assert critical.severity == "CRITICAL" and critical.advisory_id is not None
        assert store.get_advisory(critical.advisory_id) is not None
    finally:
        store.close()
    shown = cli.ok("show", "evil/model", shas["nan"], "--json").json()
    assert shown["sha"] == shas["nan"]


def test_clean_json_encodes_what_json_columns_refuse() -> None:
    assert clean_json({"a": float("nan"), "b": [float("inf"), -float("inf"), 1.5], "k\x00": "v\udcff"}) == {
        "a": "NaN", "b": ["Infinity", "-Infinity", 1.5], "k\\x00": "v\\xff"}
    assert clean_text("ok\ttab\nline\r") == "ok\ttab\nline\r"
    assert clean_text("\ud800 lone") == "\\ud800 lone"


def test_a_revision_the_database_still_refuses_is_recorded_bare(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    from storage.store import Store

    store = open_store(f"sqlite:///{tmp_path / 'hw.db'}")
    store.add_repo("org/x", source="org/x", source_kind="hub")
    real = Store._record_revision
    calls: list[str] = []

    def refuse_once(self: Store, rev: NewRevision, now: datetime) -> bool:
        calls.append(rev.error or "")
        if len(calls) == 1:
            raise DataError("INSERT", {}, ValueError("refused"))
        return real(self, rev, now)

    monkeypatch.setattr(Store, "_record_revision", refuse_once)
    rev = NewRevision(repo_id="org/x", sha="a" * 40, parent=None, parents=(), committed_at=datetime.now(UTC),
                      title="t", message="m", authors=("a",), changes=(), severity="HIGH", tree=None,
                      new_head="a" * 40)
    assert store.record_revision(rev)
    (stored,) = store.history("org/x")
    assert stored.error is not None and "refused" in stored.error and "INSERT" not in stored.error
    assert [c.topics for c in stored.changes] == [("store.error",)]
    repo = store.get_repo("org/x")
    assert repo is not None and repo.head_sha == "a" * 40
    store.close()


def test_terminal_escapes_never_reach_the_operator(tmp_path: Path) -> None:
    """Issue 16, point 13: ``history`` and ``show`` print hostile titles, messages and diffs."""
    b = RepoBuilder.init(tmp_path / "esc.git")
    b.commit({"config.json": config_bytes()}, title="baseline")
    evil = "\x1b]0;owned\x07\x1b[2J\x9b31m\u202e"
    sha = b.commit({"config.json": config_bytes(eos_token_id=7),
                    "chat_template.jinja": f"{{{{ messages }}}}{evil}".encode()},
                   title=f"title {evil}", message=f"body {evil}")
    cli = Cli(tmp_path / "cli", f"sqlite:///{tmp_path / 'hw.db'}")
    cli.ok("track", str(b.path), "--as", "evil/esc")
    outputs = [cli.ok("history", "evil/esc").out, cli.ok("show", "evil/esc", sha).out,
               cli.ok("history", "evil/esc", "--json").out, cli.ok("show", "evil/esc", sha, "--json").out,
               cli("show", "evil/esc", f"{evil}").err]
    for out in outputs:
        assert not any(ch in out for ch in "\x1b\x07\x9b\u202e"), out
    assert "\\x1b" in outputs[1] and "\\u202e" in outputs[1]  # the store escapes C0/C1, the CLI the rest
    shown = json.loads(outputs[3])
    assert shown["sha"] == sha and "title" in shown["title"]


def test_the_cli_writer_escapes_what_a_terminal_acts_on() -> None:
    import io

    from tracker.cli.safe_output import TerminalSafe

    out = io.StringIO()
    TerminalSafe(out).write('{"t": "a\x1b[2J\x9b\u202eb\r"}\n\tok')  # type: ignore[arg-type]
    assert out.getvalue() == '{"t": "a\\u001b[2J\\u009b\\u202eb\\u000d"}\n\tok'
    assert json.loads(out.getvalue().split("\n")[0])["t"] == "a\x1b[2J\x9b\u202eb\r"
