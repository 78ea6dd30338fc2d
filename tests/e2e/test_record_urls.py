"""OSV records are shared data (issue 15 point 3, issue 12): the GIT range names the repo's
canonical URL, never the local path it was read from; a mirror's purl carries
``repository_url`` (as packageurl-python writes it) and queries honour it; a fixed range
lists the commits it holds in ``versions``, the same set the GIT range evaluation gives."""

from __future__ import annotations

import json
from pathlib import Path

from packageurl import PackageURL

from advisories.query import range_contains
from advisories.schema import validate
from tests.e2e.cli_helpers import Cli
from tests.e2e.gitrepo import ModelRepo
from tracker.api.osv_routes import parse_query, run_queries
from tracker.api.readers import MemoryAdvisoryReader

TEMPLATE_A = "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{% endfor %}"
TEMPLATE_B = "{{ bos_token }}" + TEMPLATE_A


def _history(tmp_path: Path) -> tuple[ModelRepo, list[str]]:
    repo = ModelRepo(tmp_path / "upstream checkout")
    tok = {"bos_token": "<s>", "eos_token": "</s>", "chat_template": TEMPLATE_A}
    shas = [
        repo.commit("initial", {"tokenizer_config.json": tok, "README.md": "a"}),
        repo.commit("template with bos", {"tokenizer_config.json": {**tok, "chat_template": TEMPLATE_B}}),
        repo.commit("readme", {"README.md": "b"}),
        repo.commit("readme again", {"README.md": "c"}),
        repo.commit("revert template", {"tokenizer_config.json": tok}),
        repo.commit("after the fix", {"README.md": "d"}),
    ]
    return repo, shas


def _records(cli: Cli) -> list[dict]:  # type: ignore[type-arg]
    """Every record, valid; the template change (the second commit) first."""
    records = cli.ok("advisories", "--json").json()
    assert records
    for r in records:
        validate(r)
    first = cli.ok("history", "org/model", "--json").json()[-2]["advisory_id"]
    return sorted(records, key=lambda r: r["id"] != first)  # type: ignore[no-any-return]


def test_a_bundle_tracked_as_a_hub_id_names_the_hub_url_not_the_path(tmp_path: Path) -> None:
    repo, shas = _history(tmp_path)
    bundle = tmp_path / "org__model.bundle"
    repo.git("bundle", "create", str(bundle), "main")
    cli = Cli(tmp_path / "hw", f"sqlite:///{tmp_path / 'hw.db'}")
    cli.ok("track", str(bundle), "--as", "org/model")
    record, *_ = _records(cli)
    text = json.dumps(record)
    assert str(tmp_path) not in text and "bundle" not in text
    (affected,) = record["affected"]
    assert affected["ranges"][0]["repo"] == "https://huggingface.co/org/model"
    assert {"type": "PACKAGE", "url": "https://huggingface.co/org/model"} in record["references"]
    assert {"type": "WEB", "url": f"https://huggingface.co/org/model/commit/{shas[1]}"} in record["references"]
    assert "repository_url" not in affected["database_specific"]["purl"]  # huggingface.co is the default


def test_repo_url_at_track_time_and_a_git_remote_are_named(tmp_path: Path) -> None:
    repo, _ = _history(tmp_path)
    cli = Cli(tmp_path / "hw", f"sqlite:///{tmp_path / 'hw.db'}")
    cli.ok("track", str(repo.path), "--as", "org/model", "--repo-url", "https://git.example.org/org/model/")
    record, *_ = _records(cli)
    assert record["affected"][0]["ranges"][0]["repo"] == "https://git.example.org/org/model"
    assert cli("track", str(repo.path), "--as", "org/other", "--repo-url", "/srv/models/x").code == 2

    clone = ModelRepo(tmp_path / "clone")
    clone.git("pull", "-q", str(repo.path), "main")
    clone.git("remote", "add", "origin", "https://user:s3cret@github.com/org/model.git")
    other = Cli(tmp_path / "hw2", f"sqlite:///{tmp_path / 'hw2.db'}")
    other.ok("track", str(clone.path), "--as", "org/model")
    record, *_ = _records(other)
    assert record["affected"][0]["ranges"][0]["repo"] == "https://github.com/org/model.git"
    assert "s3cret" not in json.dumps(record)


def test_a_mirror_purl_has_repository_url_and_queries_honour_it(tmp_path: Path) -> None:
    repo, shas = _history(tmp_path)
    mirror = "http://127.0.0.1:9/hf-mirror"
    cli = Cli(tmp_path / "hw", f"sqlite:///{tmp_path / 'hw.db'}", f'[hub]\nendpoint = "{mirror}"\n')
    cli.ok("track", str(repo.path), "--as", "org/model")
    record, *_ = _records(cli)
    (affected,) = record["affected"]
    assert affected["ranges"][0]["repo"] == f"{mirror}/org/model"
    expected = PackageURL(type="huggingface", namespace="org", name="model", version=shas[1],
                          qualifiers={"repository_url": mirror}).to_string()
    assert affected["database_specific"]["purl"] == expected
    assert PackageURL.from_string(expected).qualifiers == {"repository_url": mirror}

    reader = MemoryAdvisoryReader([record], {})

    def ids(purl: str) -> list[str]:
        query = parse_query({"package": {"purl": purl}})
        return [r["id"] for r in run_queries(reader, [query])[0]]

    on_mirror = PackageURL(type="huggingface", namespace="org", name="model",
                           qualifiers={"repository_url": mirror + "/"}).to_string()
    assert ids(on_mirror) == [record["id"]]
    assert ids("pkg:huggingface/org/model") == []  # huggingface.co's org/model is another package
    assert ids("pkg:huggingface/org/model?repository_url=https://other.example") == []


def test_a_fixed_range_lists_exactly_the_commits_it_holds(tmp_path: Path) -> None:
    repo, shas = _history(tmp_path)
    cli = Cli(tmp_path / "hw", f"sqlite:///{tmp_path / 'hw.db'}")
    cli.ok("track", str(repo.path), "--as", "org/model")
    record, *_ = _records(cli)
    (affected,) = record["affected"]
    events = affected["ranges"][0]["events"]
    assert events == [{"introduced": shas[1]}, {"fixed": shas[4]}]
    parents = {s: ([shas[i - 1]] if i else []) for i, s in enumerate(shas)}

    def ancestors(sha: str) -> set[str]:
        out, stack = set(), list(parents[sha])
        while stack:
            s = stack.pop()
            out.add(s)
            stack.extend(parents[s])
        return out

    held = sorted(s for s in shas if range_contains(events, s, ancestors))
    assert affected["versions"] == held == sorted(shas[1:4])
