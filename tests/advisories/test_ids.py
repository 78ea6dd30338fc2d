"""Advisory ids: deterministic, of the documented shape, stable across processes."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys

import pytest

from advisories.ids import ALPHABET, advisory_id, is_advisory_id
from tests.advisories.osv_helpers import HISTORIES
from tests.corpus import REPO_ROOT


def _histories() -> list[tuple[str, str]]:
    pairs = []
    for path in sorted(HISTORIES.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        pairs += [(data["hf_repo_id"], c["sha"]) for c in data["commits"]]
    return pairs


def test_id_is_the_crockford_base32_of_sha256() -> None:
    # Independent derivation: RFC 4648 base32 of the first 8 digest bytes, whose first 12
    # symbols are the first 60 bits, re-spelt in Crockford's alphabet.
    repo_id, sha = "google/gemma-2b-it", "070afe6bcc9aa811d33bfadb368f09e90955bfa4"
    digest = hashlib.sha256(f"{repo_id}@{sha}".encode()).digest()
    rfc = base64.b32encode(digest[:8]).decode()[:12]
    crockford = rfc.translate(str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", ALPHABET))
    expected = f"x_HUBWATCH-{crockford[:4]}-{crockford[4:8]}-{crockford[8:]}"
    assert advisory_id("x_HUBWATCH", repo_id, sha) == expected
    assert is_advisory_id(expected)


def test_ids_are_unique_and_deterministic_over_the_corpus_histories() -> None:
    pairs = _histories()
    assert len(pairs) > 150
    first = [advisory_id("x_HUBWATCH", repo, sha) for repo, sha in pairs]
    again = [advisory_id("x_HUBWATCH", repo, sha) for repo, sha in pairs]
    assert first == again
    assert len(set(first)) == len(pairs)
    assert all(is_advisory_id(i) and i.startswith("x_HUBWATCH-") for i in first)
    assert all(len(i) == len("x_HUBWATCH-") + 14 for i in first)
    readable = set(ALPHABET)
    assert all(set(i.split("-", 1)[1].replace("-", "")) <= readable for i in first)


def test_ids_are_the_same_in_a_fresh_process() -> None:
    """A second daemon or a fresh database computes the same ids (no per-process salt)."""
    pairs = _histories()[:40]
    script = (
        "import json, sys\n"
        "from advisories.ids import advisory_id\n"
        "pairs = json.load(sys.stdin)\n"
        "print(json.dumps([advisory_id('x_HUBWATCH', r, s) for r, s in pairs]))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(REPO_ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(pairs),
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=REPO_ROOT,
    )
    assert json.loads(out.stdout) == [advisory_id("x_HUBWATCH", r, s) for r, s in pairs]


def test_sha_case_does_not_matter_but_repo_and_prefix_do() -> None:
    sha = "f8dac3fff96d5debd43edf56fb4e1abcfffbef28"
    base = advisory_id("x_HUBWATCH", "tiiuae/falcon-7b-instruct", sha)
    assert advisory_id("x_HUBWATCH", "tiiuae/falcon-7b-instruct", sha.upper()) == base
    assert advisory_id("x_HUBWATCH", "tiiuae/falcon-7b", sha) != base
    other = advisory_id("x_OTHER", "tiiuae/falcon-7b-instruct", sha)
    assert other.startswith("x_OTHER-") and other.split("-", 1)[1] == base.split("-", 1)[1]


@pytest.mark.parametrize(
    ("prefix", "repo_id", "sha"),
    [
        ("", "org/name", "a" * 40),
        ("x-BAD", "org/name", "a" * 40),
        ("x_HUBWATCH", "", "a" * 40),
        ("x_HUBWATCH", "org/na me", "a" * 40),
        ("x_HUBWATCH", "org/name", "a" * 39),
        ("x_HUBWATCH", "org/name", "g" * 40),
    ],
)
def test_bad_input_is_refused(prefix: str, repo_id: str, sha: str) -> None:
    with pytest.raises(ValueError):
        advisory_id(prefix, repo_id, sha)
