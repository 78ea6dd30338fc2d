"""Safetensors headers: real-shaped headers parse, hostile ones raise InvalidContent only."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.extract.snapshots import st_header as header
from tracker.errors import InvalidContent
from tracker.extract.jsonsafe import MAX_JSON_DEPTH, json_depth, load_json
from tracker.extract.safetensors import DTYPE_BITS, parse_safetensors_header


def test_parses_tensors_sorted_by_name() -> None:
    raw = header(
        {
            "model.layers.0.mlp.down_proj.weight": ("BF16", [2048, 8192]),
            "lm_head.weight": ("BF16", [128256, 2048]),
            "model.norm.weight": ("F32", [2048]),
            "scalar": ("I64", []),
        },
        meta={"format": "pt"},
    )
    tensors = parse_safetensors_header(raw)
    assert [t.name for t in tensors] == sorted(t.name for t in tensors)
    by_name = {t.name: t for t in tensors}
    assert by_name["lm_head.weight"].shape == (128256, 2048)
    assert by_name["lm_head.weight"].numel == 128256 * 2048
    assert by_name["model.norm.weight"].dtype == "F32"
    assert by_name["scalar"].shape == () and by_name["scalar"].numel == 1


def test_unknown_but_well_formed_dtype_parses() -> None:
    raw = json.dumps({"x": {"dtype": "F8_E4M3FNUZ", "shape": [4], "data_offsets": [0, 99]}})
    assert parse_safetensors_header(raw.encode())[0].dtype == "F8_E4M3FNUZ"


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b"[]", "not a JSON object"),
        (b"{", "invalid JSON"),
        (b"\xff\xfe{}", "UTF-8"),
        (b'{"x": 1}', "not an object"),
        (b'{"x": {"dtype": 5, "shape": [1], "data_offsets": [0, 4]}}', "bad dtype"),
        (b'{"x": {"dtype": "f32", "shape": [1], "data_offsets": [0, 4]}}', "bad dtype"),
        (b'{"x": {"dtype": "F32; rm -rf", "shape": [1], "data_offsets": [0, 4]}}', "bad dtype"),
        (b'{"x": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}', "bad shape"),
        (b'{"x": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}}', "bad shape"),
        (b'{"x": {"dtype": "F32", "shape": [true], "data_offsets": [0, 4]}}', "bad shape"),
        (b'{"x": {"dtype": "F32", "shape": "4", "data_offsets": [0, 4]}}', "bad shape"),
        (
            b'{"x": {"dtype": "F32", "shape": [' + b"1," * 20 + b'1], "data_offsets": [0, 4]}}',
            "bad shape",
        ),
        (b'{"x": {"dtype": "F32", "shape": [1]}}', "data_offsets"),
        (b'{"x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}', "data_offsets"),
        (b'{"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}', "does not fit"),
        (b'{"__metadata__": {"a": 1}}', "__metadata__"),
        (b'{"": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}', "tensor name"),
        (b'{"x": {"dtype": "F32", "shape": [[[[[1]]]]], "data_offsets": [0, 4]}}', "levels deep"),
    ],
)
def test_hostile_headers_are_refused(raw: bytes, why: str) -> None:
    with pytest.raises(InvalidContent, match=why):
        parse_safetensors_header(raw)


def test_header_size_is_capped() -> None:
    raw = header({f"t{i}": ("F32", [1]) for i in range(100)})
    with pytest.raises(InvalidContent, match="byte cap"):
        parse_safetensors_header(raw, max_bytes=len(raw) - 1)
    assert len(parse_safetensors_header(raw, max_bytes=len(raw))) == 100


def test_deep_json_is_refused_without_recursing() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(InvalidContent, match="levels deep"):
        load_json(deep, max_bytes=1 << 20)
    ok = b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH
    assert json_depth(load_json(ok, max_bytes=1 << 20)) == MAX_JSON_DEPTH
    with pytest.raises(InvalidContent):
        load_json(b"[" + ok + b"]", max_bytes=1 << 20)


def test_json_edge_values() -> None:
    assert load_json(b'{"a": NaN}', max_bytes=100)["a"] != 0  # accepted, as Python's json does
    with pytest.raises(InvalidContent, match="invalid JSON"):
        load_json(b'{"a": ' + b"9" * 5000 + b"}", max_bytes=10_000)  # int digit limit
    assert load_json(b'\xef\xbb\xbf{"a": 1}', max_bytes=100) == {"a": 1}  # BOM tolerated


_DTYPES = st.sampled_from(sorted(DTYPE_BITS))
_SHAPES = st.lists(st.integers(min_value=0, max_value=64), max_size=4)


@settings(max_examples=60, database=None, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=20).filter(lambda s: s != "__metadata__"),
        st.tuples(_DTYPES, _SHAPES),
        max_size=8,
    )
)
def test_valid_headers_round_trip(tensors: dict[str, tuple[str, list[int]]]) -> None:
    parsed = parse_safetensors_header(header(tensors))
    assert {t.name: (t.dtype, list(t.shape)) for t in parsed} == {
        k: (d, s) for k, (d, s) in tensors.items()
    }


@settings(max_examples=200, database=None, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=300),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
            lambda inner: (
                st.lists(inner, max_size=4)
                | st.dictionaries(st.text(max_size=8), inner, max_size=4)
            ),
            max_leaves=20,
        ).map(lambda v: json.dumps(v).encode()),
    )
)
def test_garbage_only_ever_raises_invalid_content(raw: bytes) -> None:
    with contextlib.suppress(InvalidContent):
        parse_safetensors_header(raw)
