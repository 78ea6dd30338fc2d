"""Inside weight files over HTTP (issue 13): a GGUF repo's template and eos fix, pickle imports,
and only header / member ranges read from weight files (the emulator's log says so)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.e2e.cli_helpers import Cli
from tests.hubemu import HubEmulator, RepoBuilder, hf_test_env
from tests.inside.ggufs import TEMPLATE_V1, TEMPLATE_V2, gguf_bytes
from tests.inside.pickles import allowed_regions, inside, padded_zip
from tracker.extract.gguf_reader import parse_gguf_header

_RANGE = re.compile(r"^bytes=(\d+)-(\d+)$")


def _ranges(hub: HubEmulator, suffix: str) -> list[tuple[int, int]]:
    out = []
    for r in hub.requests:
        if "/resolve/" in r.path and r.path.endswith(suffix) and r.method == "GET":
            m = _RANGE.match(r.headers.get("range", ""))
            assert m, f"a weight file was read without a Range: {r.path}"
            out.append((int(m.group(1)), int(m.group(2))))
    return out


def _cli(tmp_path: Path, hub: HubEmulator) -> Cli:
    return Cli(tmp_path / "w", f"sqlite:///{tmp_path / 'hw.db'}",
               extra_config=f'[hub]\nendpoint = "{hub.url}"\ntimeout_seconds = 10\n')


def test_a_republished_gguf_template_and_eos_fix_is_in_the_history(tmp_path: Path) -> None:
    hf_test_env()
    b = RepoBuilder.init(tmp_path / "acme.git")
    first = gguf_bytes(template=TEMPLATE_V1, eos=2)
    b.commit({"tiny-Q4_K_M.gguf": first, "README.md": b"# tiny\n"}, title="initial")
    second = gguf_bytes(template=TEMPLATE_V2, eos=3)
    sha = b.commit({"tiny-Q4_K_M.gguf": second}, title="fix chat template and eos")
    with HubEmulator() as hub:
        hub.add_repo("acme/tiny-gguf", tmp_path / "acme.git")
        cli = _cli(tmp_path, hub)
        cli.ok("track", "acme/tiny-gguf")
        ranges = _ranges(hub, ".gguf")
    entry = {e["sha"]: e for e in cli.ok("history", "acme/tiny-gguf", "--json").json()}[sha]
    by_kind = {}
    for c in entry["changes"]:
        by_kind.setdefault(c["kind"], []).append(c)
    (template,) = by_kind["chat_template"]
    assert template["path"] == "tiny-Q4_K_M.gguf" and template["severity"] == "HIGH"
    assert "now uses eos_token" in template["summary"]
    (tok,) = by_kind["tokenizer"]
    assert tok["path"] == "tiny-Q4_K_M.gguf"
    assert "eos '</s>' (2) -> '<|eot|>' (3)" in tok["summary"] and tok["severity"] == "HIGH"
    shown = cli.ok("show", "acme/tiny-gguf", sha, "--json").json()
    assert shown["plan"]["params"]["checkpoint"] and shown["plan"]["memory_bytes"]["serve_weights"]
    (detail,) = [c for c in shown["changes"] if c["kind"] == "chat_template"]
    rows = detail["detail"]["rendered"]
    assert any(r["changed"] and "+" in r.get("diff", "") and "<|eot|>" in r["new"] for r in rows)
    # only header bytes: every range ends inside the header of the file it read
    ends = [parse_gguf_header(x, file_size=len(x), max_bytes=10**7).header_end for x in (first, second)]
    assert ranges and all(hi < max(ends) for _, hi in ranges)
    assert sum(hi - lo + 1 for lo, hi in ranges) < (len(first) + len(second)) // 4


def test_pickle_imports_are_named_and_only_members_are_read(tmp_path: Path) -> None:
    hf_test_env()
    b = RepoBuilder.init(tmp_path / "acme.git")
    benign, evil = padded_zip("state_dict.bin"), padded_zip("evil.bin")
    first = b.commit({"pytorch_model.bin": benign}, title="initial")
    sha = b.commit({"pytorch_model.bin": evil}, title="update weights")
    with HubEmulator() as hub:
        hub.add_repo("acme/pkl", tmp_path / "acme.git")
        cli = _cli(tmp_path, hub)
        cli.ok("track", "acme/pkl")
        ranges = _ranges(hub, ".bin")
    history = {e["sha"]: e for e in cli.ok("history", "acme/pkl", "--json").json()}
    (root,) = [c for c in history[first]["changes"] if c["kind"] == "weights"]
    assert "imports only tensor-rebuild globals" in root["summary"]
    assert "DANGEROUS" not in root["summary"]
    (change,) = [c for c in history[sha]["changes"] if c["kind"] == "weights"]
    assert change["severity"] == "CRITICAL" and "posix.system" in change["summary"]
    advisory = cli.ok("advisory", history[sha]["advisory_id"]).json()
    (entry,) = advisory["database_specific"]["changes"]
    assert "weights.pickle.dangerous_imports" in entry["topics"]
    assert "posix.system" in advisory["details"]
    # the summary names the change itself (issue 11), dangerous import included
    assert advisory["summary"].startswith("acme/pkl ") and "DANGEROUS imports: posix.system" in advisory["summary"]
    regions = allowed_regions(benign) + allowed_regions(evil)
    assert len(ranges) >= 8 and inside(ranges, regions), ranges
    assert sum(hi - lo + 1 for lo, hi in ranges) < (len(benign) + len(evil)) // 20


def test_the_hubs_own_scan_results_are_recorded_and_changes_reported(tmp_path: Path) -> None:
    import hashlib

    hf_test_env()
    b = RepoBuilder.init(tmp_path / "acme.git")
    benign, evil = padded_zip("state_dict.bin"), padded_zip("evil.bin")
    b.commit({"pytorch_model.bin": benign}, title="initial")
    readme = b.commit({"README.md": b"# card\n"}, title="card only")
    sha = b.commit({"pytorch_model.bin": evil}, title="update weights")
    flagged = {
        "status": "unsafe",
        "avScan": {"status": "safe", "virusNames": None},
        "pickleImportScan": {"status": "unsafe", "pickleImports": [
            {"module": "posix", "name": "system", "safety": "dangerous"}]},
    }
    with HubEmulator() as hub:
        hub.set_security(hashlib.sha256(evil).hexdigest(), flagged)
        hub.add_repo("acme/scan", tmp_path / "acme.git")
        cli = _cli(tmp_path, hub)
        cli.ok("track", "acme/scan")
        asked = [r for r in hub.requests if r.route == "paths_info"]
    # one paths-info per revision that brought new weight content; none for the card-only one
    assert len(asked) == 2
    history = {e["sha"]: e for e in cli.ok("history", "acme/scan", "--json").json()}
    assert not [c for c in history[readme]["changes"] if c["kind"] == "weights"]
    (scan,) = [c for c in history[sha]["changes"] if "now flagged" in c["summary"]]
    assert scan["path"] == "pytorch_model.bin" and scan["severity"] == "CRITICAL"
    assert "pickleImportScan" in scan["summary"] and "avScan" not in scan["summary"]


def test_hostile_weight_files_are_recorded_not_fatal(tmp_path: Path) -> None:
    import struct

    hf_test_env()
    b = RepoBuilder.init(tmp_path / "acme.git")
    terabyte = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 4) + b"name"
    terabyte += struct.pack("<IQ", 8, 1 << 40) + b"x" * 4096
    big = gguf_bytes()
    b.commit({"README.md": b"# x\n"}, title="initial")
    sha = b.commit({
        "evil.gguf": terabyte, "cut.gguf": big[:1500], "big.gguf": big,
        "pytorch_model.bin": b"PK\x03\x04" + b"\0" * 5000, "model.pt": b"\x80\x04garbage" * 100,
    }, title="hostile")
    with HubEmulator() as hub:
        hub.add_repo("acme/hostile", tmp_path / "acme.git")
        cli = Cli(tmp_path / "w", f"sqlite:///{tmp_path / 'hw.db'}",
                  extra_config=f'[hub]\nendpoint = "{hub.url}"\ntimeout_seconds = 10\n'
                               "[limits]\nmax_gguf_header_bytes = 1000\n")
        cli.ok("track", "acme/hostile")
        ranges = _ranges(hub, "evil.gguf")
    entry = {e["sha"]: e for e in cli.ok("history", "acme/hostile", "--json").json()}[sha]
    errors = {c["path"]: c["summary"] for c in entry["changes"] if c["summary"].startswith("not read")}
    assert set(errors) == {"evil.gguf", "cut.gguf", "big.gguf", "pytorch_model.bin", "model.pt"}
    assert "1000" in errors["big.gguf"]  # over the [limits] cap
    assert sum(hi - lo + 1 for lo, hi in ranges) < 100  # the terabyte claim is refused at once
