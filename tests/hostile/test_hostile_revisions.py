"""Hostile and broken revisions never crash a poll: each is recorded with what went wrong, the
poll is ok, and the commits after it are read as usual. Run through the daemon over the Hub
emulator and through ``hubwatch track`` over a local git repository."""

from __future__ import annotations

from tests.hubemu import hf_test_env

hf_test_env()

import json  # noqa: E402
import struct  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from datetime import UTC, datetime  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from storage import open_store  # noqa: E402
from storage.records import RevisionRecord  # noqa: E402
from tests.daemon.helpers import config_bytes, make_daemon  # noqa: E402
from tests.e2e.cli_helpers import Cli  # noqa: E402
from tests.hubemu import HubEmulator, RepoBuilder, safetensors_bytes  # noqa: E402

Check = Callable[[RevisionRecord], bool]


def said(*words: str) -> Check:
    """The revision's error or one of its change summaries says all of ``words``."""

    def check(rev: RevisionRecord) -> bool:
        texts = [rev.error or ""] + [c.summary for c in rev.changes]
        return any(all(w in t for w in words) for t in texts)

    return check


def template(text: str) -> bytes:
    return json.dumps({"chat_template": text}).encode()


PWNED = Path("/tmp/hubwatch-hostile-template-ran")
HOSTILE: dict[str, tuple[dict[str, bytes], Check]] = {
    "invalid json": ({"config.json": b'{"architectures": ["X"],'}, said("could not be read", "invalid JSON")),
    "nested json": ({"config.json": b'{"a":' * 200 + b"1" + b"}" * 200}, said("nests over")),
    "recursion bomb": ({"config.json": b"[" * 200_000 + b"]" * 200_000}, said("nests over")),
    "oversized file": ({"config.json": b'{"pad": "' + b"x" * 3_000_000 + b'"}'}, said("config.json", "could not be read")),
    "terabyte header": ({"model.safetensors": struct.pack("<Q", 2**42) + b"{}" + b" " * 64},
                        said("not read", "claims 4398046511104 bytes")),
    "header past the end": ({"model.safetensors": struct.pack("<Q", 5000) + b'{"w": 1}'},
                            said("not read", "past the end")),
    "sandbox escape": ({"tokenizer_config.json": template(
        "{{ cycler.__init__.__globals__.os.system('touch " + str(PWNED) + "') }}"
        "{{ ''.__class__.__mro__[1].__subclasses__() }}{{ messages }}")}, said("chat template")),
    "template loop": ({"tokenizer_config.json": template("{% for i in range(10**9) %}{{ i }}{% endfor %}")},
                      said("chat template")),
    "utf-16 config": ({"config.json": config_bytes(eos_token_id=4).decode().encode("utf-16")},
                      said("not valid UTF-8")),
    "latin-1 tokenizer config": ({"tokenizer_config.json": b'{"chat_template": "caf\xe9 {{ messages }}"}'},
                                 said("not valid UTF-8")),
    "nul bytes in a template": ({"chat_template.jinja": b"{{ messages }}\x00\x00\xff"}, said("chat_template.jinja")),
}


def build(path: Path) -> tuple[RepoBuilder, str]:
    b = RepoBuilder.init(path)
    b.commit({"config.json": config_bytes(), "model.safetensors": safetensors_bytes({"w": ("BF16", [4, 4])}),
              "tokenizer_config.json": template("{% for m in messages %}{{ m['content'] }}{% endfor %}")},
             title="baseline")
    for title, (files, _check) in HOSTILE.items():
        b.commit(files, title=title)
    final = b.commit({"config.json": config_bytes(eos_token_id=9),
                      "model.safetensors": safetensors_bytes({"w": ("BF16", [4, 4])})}, title="sane again")
    return b, final


def check_history(history: list[RevisionRecord], final: str) -> None:
    by_title = {r.title: r for r in history}
    assert len(history) == len(HOSTILE) + 2 and history[0].sha == final
    for title, (_files, check) in HOSTILE.items():
        assert check(by_title[title]), (title, by_title[title].error, [c.summary for c in by_title[title].changes])
    assert not PWNED.exists()  # the template ran in the sandbox, if at all
    sane = by_title["sane again"]
    assert sane.advisory_id is not None and any(c.kind.value == "config" for c in sane.changes)


def test_hostile_revisions_through_the_daemon_and_the_hub(tmp_path: Path) -> None:
    PWNED.unlink(missing_ok=True)
    b, final = build(tmp_path / "hostile.git")
    store = open_store(f"sqlite:///{tmp_path / 'hw.db'}")
    with HubEmulator() as hub:
        hub.add_repo("evil/model", b.path)
        store.add_repo("evil/model", source="evil/model", source_kind="hub")
        started = time.monotonic()
        (result,) = make_daemon(store, hub.url).run_once(datetime.now(UTC))
        assert time.monotonic() - started < 60
        assert not hub.internal_errors
    assert result.status == "ok" and result.new_revisions == len(HOSTILE) + 2, result
    repo = store.get_repo("evil/model")
    assert repo is not None and repo.last_error is None and repo.head_sha == final
    check_history(store.history("evil/model"), final)

    later = b.commit({"config.json": config_bytes(eos_token_id=10)}, title="later")
    with HubEmulator() as hub:
        hub.add_repo("evil/model", b.path)
        (more,) = make_daemon(store, hub.url).run_once(repo.next_check_at)
    assert more.status == "ok" and more.new_revisions == 1 and store.history("evil/model")[0].sha == later
    store.close()


def test_hostile_revisions_through_the_cli_and_git(tmp_path: Path) -> None:
    PWNED.unlink(missing_ok=True)
    b, final = build(tmp_path / "hostile.git")
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'hw.db'}")
    tracked = cli.ok("track", str(b.path), "--as", "evil/model", "--json").json()
    assert tracked["poll"]["status"] == "ok" and tracked["poll"]["new_revisions"] == len(HOSTILE) + 2
    store = open_store(f"sqlite:///{tmp_path / 'hw.db'}")
    check_history(store.history("evil/model"), final)
    store.close()


@pytest.mark.parametrize(
    ("limits", "files", "words"),
    [
        ("max_file_bytes = 1000", {"config.json": config_bytes(pad="x" * 2000)}, ("config.json", "could not be read")),
        ("max_header_bytes = 100", {"model.safetensors": safetensors_bytes({f"t{i}": ("F16", [1]) for i in range(9)})},
         ("not read", "over the cap of 100")),
        ("max_files = 5", {f"extra/{i}.txt": b"x" for i in range(6)}, ("over the cap of 5",)),
    ],
)
def test_the_limits_come_from_the_config(tmp_path: Path, limits: str, files: dict[str, bytes],
                                         words: tuple[str, ...]) -> None:
    b = RepoBuilder.init(tmp_path / "r.git")
    b.commit({"config.json": config_bytes(), "model.safetensors": safetensors_bytes({"w": ("BF16", [2])})},
             title="baseline")
    b.commit(files, title="over a limit")
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'hw.db'}", extra_config=f"[limits]\n{limits}\n")
    assert cli.ok("track", str(b.path), "--as", "org/limits", "--json").json()["poll"]["status"] == "ok"
    store = open_store(f"sqlite:///{tmp_path / 'hw.db'}")
    newest = store.history("org/limits")[0]
    store.close()
    assert newest.title == "over a limit" and said(*words)(newest), (newest.error, [c.summary for c in newest.changes])
