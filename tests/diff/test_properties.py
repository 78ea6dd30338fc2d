"""Properties of the diff: identity, inversion, and single-key edits (hypothesis)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.diff.helpers import diff_files, view
from tests.extract.snapshots import lfs

KEYS = [
    "architectures", "model_type", "hidden_size", "rope_theta", "rope_scaling", "torch_dtype",
    "sliding_window", "max_position_embeddings", "eos_token_id", "auto_map", "_name_or_path",
    "transformers_version", "use_cache", "quantization_config", "custom key", "a.b", "id2label",
]  # fmt: skip
TEMPLATES = [
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}",
    "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
    "{% if add_generation_prompt %}[assistant]{% endif %}",
    "{% if tools %}{{ tools | tojson }}{% endif %}{{ messages | length }}",
    "{{ ''.__class__ }}",
    "{% for %}",
]

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.sampled_from([0.5, 8.0, 1e6])
    | st.text(max_size=4)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["factor", "type", "x", "0"]), inner, max_size=3)
    ),
    max_leaves=8,
)
configs = st.dictionaries(st.sampled_from(KEYS), values, max_size=6)


@st.composite
def repos(draw: st.DrawFn) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    if draw(st.booleans()):
        cfg = draw(configs)
        if draw(st.booleans()):
            cfg["auto_map"] = {
                "AutoModel": draw(
                    st.sampled_from(["modeling_x.M", "modeling_y.M", "other/repo--m.M"])
                )
            }
        files["config.json"] = json.dumps(cfg).encode()
    if draw(st.booleans()):
        files["generation_config.json"] = json.dumps(
            draw(
                st.dictionaries(
                    st.sampled_from(["eos_token_id", "temperature", "top_p", "alignment_heads"]),
                    values,
                    max_size=3,
                )
            )
        ).encode()
    if draw(st.booleans()):
        tc: dict[str, Any] = draw(
            st.dictionaries(
                st.sampled_from(["bos_token", "eos_token", "add_bos_token", "model_max_length"]),
                scalars,
                max_size=3,
            )
        )
        if draw(st.booleans()):
            tc["chat_template"] = draw(st.sampled_from(TEMPLATES))
        files["tokenizer_config.json"] = json.dumps(tc).encode()
    if draw(st.booleans()):
        files["chat_template.jinja"] = draw(st.sampled_from(TEMPLATES)).encode()
    for name in draw(
        st.lists(
            st.sampled_from(
                ["model.safetensors", "pytorch_model.bin", "model-00001-of-00002.safetensors"]
            ),
            unique=True,
            max_size=2,
        )
    ):
        files[name] = lfs(draw(st.sampled_from(["v1", "v2"])) + name, draw(st.integers(1, 10**10)))
    for name in draw(
        st.lists(
            st.sampled_from(["modeling_x.py", "modeling_y.py", "helper.py"]),
            unique=True,
            max_size=2,
        )
    ):
        files[name] = draw(
            st.sampled_from(["import torch\n", "from .helper import f\n", "x = 1\n"])
        ).encode()
    if draw(st.booleans()):
        files["README.md"] = draw(st.binary(max_size=20))
    for name in draw(
        st.lists(
            st.sampled_from(
                [
                    "config.json",
                    "tokenizer_config.json",
                    "chat_template.jinja",
                    "model.safetensors.index.json",
                ]
            ),
            unique=True,
            max_size=1,
        )
    ):
        files[name] = draw(st.sampled_from([b"{broken", b"\xff\xfe", b"[" * 40 + b"]" * 40]))
    if draw(st.booleans()):
        files["tokenizer.model"] = lfs(draw(st.sampled_from(["t1", "t2"])), 1000)
    return files


SETTINGS = settings(
    max_examples=120, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)


@SETTINGS
@given(repos())
def test_a_revision_against_itself_is_empty(repo: dict[str, bytes]) -> None:
    assert diff_files(repo, repo).changes == ()


@SETTINGS
@given(repos(), repos())
@example(
    {"config.json": b'{"auto_map": {"AutoModel": "modeling_x.M"}}', "modeling_x.py": b"x = 1\n"},
    {"modeling_x.py": b"x = 2\n"},
)
@example({"pytorch_model.bin": lfs("v1", 5)}, {"model.safetensors": lfs("v1", 5)})
@example({"tokenizer_config.json": b'{"chat_template": "a"}'}, {"chat_template.jinja": b"a"})
def test_the_reverse_diff_is_the_inverse(a: dict[str, bytes], b: dict[str, bytes]) -> None:
    assert view(diff_files(b, a)) == view(diff_files(a, b), invert=True)


@SETTINGS
@given(configs, st.sampled_from(KEYS), values | st.just("<remove>"))
@example(
    {"rope_scaling": {"factor": 8.0, "type": "llama3"}},
    "rope_scaling",
    {"factor": 32.0, "type": "llama3"},
)
def test_a_single_key_edit_touches_exactly_that_key(
    cfg: dict[str, Any], key: str, value: Any
) -> None:
    edited = dict(cfg)
    if value == "<remove>":
        edited.pop(key, None)
    else:
        edited[key] = value
    d = diff_files(
        {"config.json": json.dumps(cfg).encode()}, {"config.json": json.dumps(edited).encode()}
    )
    if json.dumps(cfg, sort_keys=True) == json.dumps(edited, sort_keys=True):
        assert d.changes == ()
        return
    assert [c.path for c in d.changes] == ["config.json"]
    fields = d.changes[0].detail["fields"]
    assert fields and all(f["keys"][0] == key for f in fields)
    expected_op = "removed" if key not in edited else "added" if key not in cfg else None
    if expected_op:
        assert [(f["keys"], f["op"]) for f in fields] == [([key], expected_op)]


@SETTINGS
@given(repos())
def test_a_root_commit_adds_everything(repo: dict[str, bytes]) -> None:
    d = diff_files(None, repo)
    assert {c.path for c in d.changes} >= set(repo)
    for c in d.changes:
        assert c.detail.get("op") == "added"
        assert not any(t.endswith(".removed") for t in c.topics)
