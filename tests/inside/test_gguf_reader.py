"""The GGUF header reader against files written by the gguf package, and hostile headers."""

from __future__ import annotations

import struct

import gguf
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.inside.ggufs import TEMPLATE_V1, gguf_bytes
from tracker.errors import InvalidContent
from tracker.extract.gguf import digest_gguf, load_gguf_digest
from tracker.extract.gguf_reader import NeedMore, parse_gguf_header

CAP = 10**7
FILE = gguf_bytes(named_templates={"tool_use": "{{ tools }}"})


def test_it_reads_what_the_gguf_package_reads(tmp_path) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(FILE)
    theirs = gguf.GGUFReader(str(path))
    ours = parse_gguf_header(FILE, file_size=len(FILE), max_bytes=CAP)
    assert set(ours.metadata) == {k for k in theirs.fields if not k.startswith("GGUF.")}
    assert ours.metadata["llama.context_length"] == theirs.fields["llama.context_length"].contents()
    assert ours.metadata["tokenizer.chat_template"] == TEMPLATE_V1
    assert [(t.name, t.type_name, t.dims) for t in ours.tensors] == [
        (t.name, t.tensor_type.name, tuple(int(d) for d in t.shape)) for t in theirs.tensors
    ]
    # the header ends where the gguf package's tensor data (after alignment padding) begins
    first_data = min(int(t.data_offset) for t in theirs.tensors)
    assert ours.header_end <= first_data < ours.header_end + 32


def test_the_digest_keeps_templates_special_tokens_and_tensors() -> None:
    info = load_gguf_digest(digest_gguf(parse_gguf_header(FILE, file_size=len(FILE), max_bytes=CAP)))
    assert info.chat_templates == {"default": TEMPLATE_V1, "tool_use": "{{ tools }}"}
    assert info.special_tokens == {"bos": (1, "<s>"), "eos": (2, "</s>")}
    assert info.architecture == "llama"
    assert info.metadata["tokenizer.ggml.tokens"]["count"] == 100  # a count and a hash, not the list
    assert {t.dtype for t in info.tensors} == {"F16", "Q4_K", "F32"}
    assert info.tensor_bytes["Q4_K"] == 2 * 256 * 512 // 256 * 144


@settings(max_examples=60, deadline=None, database=None)
@given(st.integers(0, 2300))
def test_every_prefix_asks_for_more_and_never_past_the_header(n: int) -> None:
    end = parse_gguf_header(FILE, file_size=len(FILE), max_bytes=CAP).header_end
    if n >= end:
        assert parse_gguf_header(FILE[:n], file_size=len(FILE), max_bytes=CAP).header_end == end
        return
    with pytest.raises(NeedMore) as e:
        parse_gguf_header(FILE[:n], file_size=len(FILE), max_bytes=CAP)
    assert n < e.value.needed and e.value.header_at_least <= end  # a lower bound: no tensor byte


def _header(n_tensors: int, n_kv: int, body: bytes = b"", version: int = 3) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv) + body


def _key(name: str) -> bytes:
    return struct.pack("<Q", len(name)) + name.encode()


HOSTILE = {
    "terabyte string": _header(0, 1, _key("general.name") + struct.pack("<IQ", 8, 1 << 40) + b"x" * 64),
    "billion tensors": _header(10**9, 0),
    "huge kv count": _header(0, 1 << 40),
    "array claims a trillion items": _header(0, 1, _key("a") + struct.pack("<IIQ", 9, 4, 10**12)),
    "unknown value type": _header(0, 1, _key("a") + struct.pack("<I", 77) + b"\0" * 16),
    "array of unknown type": _header(0, 1, _key("a") + struct.pack("<IIQ", 9, 99, 1) + b"\0" * 8),
    "nested array": _header(0, 1, _key("a") + struct.pack("<IIQ", 9, 9, 1) + struct.pack("<IQ", 4, 1)),
    "bad magic": b"GGML" + b"\0" * 40,
    "version 1": _header(0, 0, version=1),
    "too many dims": _header(1, 0, _key("t") + struct.pack("<I", 1000) + b"\0" * 64),
    "truncated at end of file": FILE[:1000],
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_headers_are_refused_without_reading_what_they_claim(name: str) -> None:
    blob = HOSTILE[name]
    with pytest.raises(InvalidContent):
        parse_gguf_header(blob, file_size=len(blob), max_bytes=CAP)


def test_a_header_over_the_cap_is_refused() -> None:
    with pytest.raises(InvalidContent, match="cap"):
        parse_gguf_header(FILE[:300], file_size=len(FILE), max_bytes=200)


def test_growing_reads_resume_and_end_exactly_at_the_header() -> None:
    full = parse_gguf_header(FILE, file_size=len(FILE), max_bytes=CAP)
    want, resume, reads = 24, None, []
    while True:
        reads.append(want)
        try:
            got = parse_gguf_header(FILE[:want], file_size=len(FILE), max_bytes=CAP, resume=resume)
            break
        except NeedMore as e:
            want, resume = e.header_at_least, e.resume
    assert got == full and max(reads) == full.header_end and len(reads) < 12


def test_a_duplicate_key_is_refused() -> None:
    blob = _header(0, 2, (_key("a") + struct.pack("<IB", 0, 1)) * 2)
    with pytest.raises(InvalidContent, match="twice"):
        parse_gguf_header(blob, file_size=len(blob), max_bytes=CAP)
