"""advisories.export: {id}.json, all.json newest first, a deterministic all.zip."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from advisories.export import index, record_bytes, write_export, zip_bytes
from advisories.osv import add_fixed, withdraw
from tests.advisories.osv_helpers import NOW, assert_valid, examples


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    out = []
    for i, example in enumerate(examples().values()):
        record = example.record()
        assert record is not None
        out.append(record)
        if i == 1:  # one edited record, newer than the rest
            out[-1] = withdraw(record, "test withdrawal", NOW + timedelta(days=2))
    return out


def test_write_export_layout_and_bytes(records: list[dict[str, Any]], tmp_path: Path) -> None:
    out = tmp_path / "osv"
    written = write_export(records, out)
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted([f"{r['id']}.json" for r in records] + ["all.json", "all.zip"])
    assert sorted(p.name for p in written) == names
    for record in records:
        data = (out / f"{record['id']}.json").read_bytes()
        assert data == record_bytes(record)
        assert json.loads(data) == record
        assert_valid(json.loads(data))
        assert data.endswith(b"\n") and b'"affected"' in data


def test_all_json_is_newest_first(records: list[dict[str, Any]], tmp_path: Path) -> None:
    write_export(records, tmp_path)
    listed = json.loads((tmp_path / "all.json").read_text())
    assert {e["id"] for e in listed} == {r["id"] for r in records}
    assert all(set(e) == {"id", "modified"} for e in listed)
    assert listed[0]["id"] == records[1]["id"]  # the withdrawn one was modified last
    keys = [(e["modified"], e["id"]) for e in listed]
    assert [m for m, _ in keys] == sorted((m for m, _ in keys), reverse=True)
    same_time = [i for m, i in keys if m == keys[-1][0]]
    assert same_time == sorted(same_time)  # ties by id


def test_all_zip_is_deterministic_and_complete(records: list[dict[str, Any]]) -> None:
    data = zip_bytes(records)
    assert zip_bytes(list(reversed(records))) == data
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        infos = archive.infolist()
        assert [i.filename for i in infos] == sorted(f"{r['id']}.json" for r in records)
        assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
        for record in records:
            assert archive.read(f"{record['id']}.json") == record_bytes(record)
    edited = [
        add_fixed(records[0], "eb410fb6ffa9028e97adb801f0d6ec46d02f8b07", NOW + timedelta(days=3))
    ]
    assert zip_bytes(edited + records[1:]) != data


def test_rewriting_an_export_is_stable_and_keeps_old_files(
    records: list[dict[str, Any]], tmp_path: Path
) -> None:
    write_export(records, tmp_path)
    first = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    write_export(records[:2], tmp_path)  # a partial export never deletes a record's file
    assert {p.name for p in tmp_path.iterdir()} == set(first)
    write_export(records, tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == first
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize("bad_id", ["../escape", "a/b", ".hidden", "", "all"])
def test_ids_that_cannot_name_a_file_are_refused(
    records: list[dict[str, Any]], tmp_path: Path, bad_id: str
) -> None:
    bad = {**records[0], "id": bad_id}
    with pytest.raises(ValueError):
        write_export([bad], tmp_path)
    assert not (tmp_path.parent / "escape.json").exists()


def test_duplicates_are_refused(records: list[dict[str, Any]], tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        write_export([records[0], records[0]], tmp_path)


def test_index_of_nothing_is_empty(tmp_path: Path) -> None:
    assert index([]) == []
    write_export([], tmp_path)
    assert json.loads((tmp_path / "all.json").read_text()) == []
    with zipfile.ZipFile(tmp_path / "all.zip") as archive:
        assert archive.namelist() == []
