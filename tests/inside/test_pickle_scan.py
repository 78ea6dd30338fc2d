"""Pickle imports listed with pickletools, judged by the policy table, and compared with the
verdicts of picklescan and fickling on the same real torch.save files."""

from __future__ import annotations

import io
import pickle
import zipfile
from pathlib import Path

import pytest
from fickling.analysis import Severity, check_safety
from fickling.fickle import Pickled
from picklescan.scanner import SafetyLevel, scan_file_path

from tests.hubemu import RepoBuilder
from tests.inside.pickles import PICKLES, fixture, padded_zip
from tracker.errors import InvalidContent, TooLarge
from tracker.extract.pickle_policy import verdict
from tracker.extract.pickle_scan import digest_scan, load_pickle_digest, scan_pickles
from tracker.hub.localgit import GitSource
from tracker.hub.weight_ranges import read_pickle_digest

FILES = ["state_dict.bin", "evil.bin", "state_dict_legacy.pt", "evil_legacy.pt"]


def _data_pkl(blob: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        (name,) = [n for n in z.namelist() if n.endswith("/data.pkl")]
        return z.read(name)


def _ours(name: str) -> dict[str, str]:
    blob = fixture(name)
    data = _data_pkl(blob) if zipfile.is_zipfile(io.BytesIO(blob)) else blob
    scan = load_pickle_digest(digest_scan("zip", [], scan_pickles(data, whole=True)))
    return {i.qualname: i.verdict for i in scan.imports}


@pytest.mark.parametrize("name", FILES)
def test_the_same_globals_as_picklescan_and_the_same_verdict(name: str) -> None:
    theirs = scan_file_path(str(PICKLES / name))
    ours = _ours(name)
    assert set(ours) == {f"{g.module}.{g.name}" for g in theirs.globals}
    for g in theirs.globals:
        dangerous = g.safety == SafetyLevel.Dangerous
        assert (ours[f"{g.module}.{g.name}"] == "dangerous") == dangerous
        assert (ours[f"{g.module}.{g.name}"] == "safe") == (g.safety == SafetyLevel.Innocuous)
    assert ("dangerous" in ours.values()) == (theirs.infected_files > 0)


@pytest.mark.parametrize("benign, evil", [("state_dict.bin", "evil.bin"), ("state_dict_legacy.pt", "evil_legacy.pt")])
def test_fickling_ranks_the_payload_worse_and_we_name_it(benign: str, evil: str) -> None:
    def fickling_severity(name: str) -> Severity:
        blob = fixture(name)
        if zipfile.is_zipfile(io.BytesIO(blob)):
            return check_safety(Pickled.load(_data_pkl(blob))).severity
        stream = io.BytesIO(blob)
        return max((check_safety(Pickled.load(stream)).severity for _ in range(4)), key=lambda s: s.value)

    # fickling's generic check doubts torch's rebuild helpers too (LIKELY_UNSAFE); it calls
    # the os.system payload overtly malicious. Ours: benign = only safe imports, evil = named.
    assert fickling_severity(evil) == Severity.LIKELY_OVERTLY_MALICIOUS
    assert fickling_severity(benign).value < fickling_severity(evil).value
    assert set(_ours(benign).values()) == {"safe"}
    assert [q for q, v in _ours(evil).items() if v == "dangerous"] == ["posix.system"]


class _Hidden:
    def __reduce__(self):  # what a pickle that hides its import looks like after pickling
        return (getattr, (dict, "fromkeys"))


def test_policy_table() -> None:
    assert verdict("torch._utils", "_rebuild_tensor_v2") == "safe"
    assert verdict("torch", "BFloat16Storage") == "safe"
    assert verdict("posix", "system") == "dangerous"
    assert verdict("builtins", "exec") == "dangerous"
    assert verdict("builtins", "getattr") == "dangerous"
    assert verdict("subprocess", "Popen") == "dangerous"
    assert verdict("runpy", "_run_code") == "dangerous"
    assert verdict("webbrowser", "open") == "dangerous"
    assert verdict("transformers.training_args", "TrainingArguments") == "unknown"
    scan = scan_pickles(pickle.dumps(_Hidden(), protocol=4), whole=True)
    assert ("builtins", "getattr") in scan.globals


def test_stack_global_from_memo_and_non_literal_names() -> None:
    # STACK_GLOBAL whose module comes back from the memo (BINGET), as pickle writes repeats
    data = b"\x80\x04\x8c\x05posix\x94\x8c\x06system\x94\x93h\x00\x8c\x04path\x94\x93."
    assert scan_pickles(data, whole=True).globals == {("posix", "system"), ("posix", "path")}
    # module and name built at run time: recorded as unresolved, which the table calls dangerous
    data = b"\x80\x04K\x01K\x02\x93."
    (found,) = scan_pickles(data, whole=True).globals
    assert found[0] == "<unresolved>" and verdict(*found) == "dangerous"


@pytest.mark.parametrize("blob", [b"", b"\x80\x04\xff\xff", b"not a pickle at all"])
def test_garbage_is_invalid_content(blob: bytes) -> None:
    with pytest.raises(InvalidContent):
        scan_pickles(blob, whole=True)


def test_a_cut_prefix_is_incomplete_and_keeps_what_it_saw() -> None:
    data = _data_pkl(fixture("evil.bin"))
    cut = scan_pickles(data[: len(data) // 2], whole=False)
    assert not cut.complete and ("torch._utils", "_rebuild_tensor_v2") in cut.globals


@pytest.mark.parametrize("name", ["state_dict_legacy.pt", "evil_legacy.pt", "evil.bin"])
def test_the_range_reader_over_git(tmp_path: Path, name: str) -> None:
    blob = fixture(name) if name.endswith(".pt") else padded_zip(name)
    if name.endswith(".pt"):
        blob += b"\0" * 300_000  # the storages after the pickles
    b = RepoBuilder.init(tmp_path / "r.git")
    sha = b.commit({name: blob})
    src = GitSource(str(tmp_path / "r.git"), "acme/r", work_dir=tmp_path / "work")
    try:
        (entry,) = [f for f in src.list_files(sha) if f.path == name]
        scan = load_pickle_digest(read_pickle_digest(src, sha, entry, 1 << 20))
    finally:
        src.close()
    assert scan.complete and scan.container == ("legacy" if name.endswith(".pt") else "zip")
    assert ("posix.system" in {i.qualname for i in scan.by_verdict("dangerous")}) == ("evil" in name)


def test_a_zip_member_over_the_cap_is_refused(tmp_path: Path) -> None:
    b = RepoBuilder.init(tmp_path / "r.git")
    sha = b.commit({"pytorch_model.bin": fixture("state_dict.bin")})
    src = GitSource(str(tmp_path / "r.git"), "acme/r", work_dir=tmp_path / "work")
    try:
        (entry,) = [f for f in src.list_files(sha) if f.path == "pytorch_model.bin"]
        with pytest.raises(TooLarge):
            read_pickle_digest(src, sha, entry, 100)
    finally:
        src.close()
