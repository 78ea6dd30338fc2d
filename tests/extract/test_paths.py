"""What the snapshot layer fetches and how weight files are classified."""

from __future__ import annotations

import pytest

from tracker.diff import templates as diff_templates
from tracker.diff import tokenizer as diff_tokenizer
from tracker.diff import weights as diff_weights
from tracker.extract import paths
from tracker.extract.paths import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_HEADER_BYTES,
    DEFAULT_MAX_TOKENIZER_BYTES,
    is_safetensors,
    wants_content,
    weight_format,
)


@pytest.mark.parametrize(
    "path",
    [
        "config.json",
        "generation_config.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "tokenizer.json",
        "added_tokens.json",
        "chat_template.jinja",
        "chat_template.json",
        "model.safetensors.index.json",
        "pytorch_model.bin.index.json",
        "modeling_falcon.py",
        "custom/pkg/helpers.py",
        "additional_chat_templates/tool_use.jinja",
    ],
)
def test_wanted_files_are_fetched(path: str) -> None:
    assert wants_content(path, 1000)


@pytest.mark.parametrize(
    "path",
    [
        "README.md",
        ".gitattributes",
        "1_Pooling/config.json",  # a sub-model's config: reported as an "other" file
        "unet/config.json",
        "text_encoder/tokenizer_config.json",
        "model.safetensors",  # headers only, by range
        "pytorch_model.bin",
        "tokenizer.model",
        "additional_chat_templates/nested/x.jinja",
        "additional_chat_templates/.jinja",
    ],
)
def test_other_files_are_not_fetched(path: str) -> None:
    assert not wants_content(path, 10)


def test_size_caps() -> None:
    assert DEFAULT_MAX_HEADER_BYTES == 25_000_000
    assert wants_content("config.json", DEFAULT_MAX_FILE_BYTES)
    assert not wants_content("config.json", DEFAULT_MAX_FILE_BYTES + 1)
    # tokenizer.json gets its own, bigger cap: gemma-2b's is 17.5 MB
    assert wants_content("tokenizer.json", 17_518_497)
    assert not wants_content("tokenizer.json", DEFAULT_MAX_TOKENIZER_BYTES + 1)
    assert not wants_content("modeling.py", DEFAULT_MAX_FILE_BYTES + 1)
    assert not wants_content("config.json", -1)


@pytest.mark.parametrize(
    ("path", "fmt"),
    [
        ("model.safetensors", "safetensors"),
        ("model-00001-of-00002.safetensors", "safetensors"),
        ("unet/diffusion_pytorch_model.safetensors", "safetensors"),
        ("pytorch_model.bin", "pickle"),
        ("pytorch_model-00001-of-00003.bin", "pickle"),
        ("training_args.bin", "pickle"),
        ("model.pt", "pickle"),
        ("model.PTH", "pickle"),
        ("last.ckpt", "pickle"),
        ("sklearn_model.pkl", "pickle"),
        ("model.joblib", "pickle"),
        ("model.nemo", "pickle"),
        ("llama-2-7b.Q4_K_M.gguf", "gguf"),
        ("ggml-model-q4_0.bin", "gguf"),
        ("onnx/model.onnx", "onnx"),
        ("onnx/model.onnx_data", "onnx"),
        ("tf_model.h5", "tensorflow"),
        ("saved_model/saved_model.pb", "tensorflow"),
        ("variables/variables.data-00000-of-00001", "tensorflow"),
        ("model.tflite", "tensorflow"),
        ("flax_model.msgpack", "flax"),
        ("coreml/model.mlmodel", "coreml"),
        ("coreml/float32_model.mlpackage/Data/com.apple.CoreML/weights/weight.bin", "coreml"),
        ("coreml/float32_model.mlpackage/Manifest.json", "coreml"),
        ("rust_model.ot", "rust"),
        ("openvino_model.bin", "other"),
        ("weights.npz", "other"),
    ],
)
def test_weight_format(path: str, fmt: str) -> None:
    assert weight_format(path) == fmt


@pytest.mark.parametrize(
    "path",
    [
        "config.json",
        "model.safetensors.index.json",
        "pytorch_model.bin.index.json",
        "README.md",
        "tokenizer.model",
        "modeling.py",
        "binary.txt",
    ],
)
def test_not_weights(path: str) -> None:
    assert weight_format(path) is None


def test_is_safetensors() -> None:
    assert is_safetensors("model-00001-of-00002.safetensors")
    assert is_safetensors("unet/diffusion_pytorch_model.safetensors")
    assert not is_safetensors("model.safetensors.index.json")
    assert not is_safetensors("pytorch_model.bin")


def test_the_diff_knows_the_same_files() -> None:
    """tracker.diff may not import tracker.extract: its copies of the path tables must agree."""
    assert diff_tokenizer.VOCAB_FILES == paths.VOCAB_FILES
    for name in ["config.json", "a.safetensors.index.json", "x.bin.index.json", "b.h5.index.json"]:
        assert diff_weights.is_weight_index(name) == paths.is_weight_index(name)
    for name in ["chat_template.json", "chat_template.jinja", "tokenizer_config.json"]:
        assert diff_templates.is_template_file(name)
    assert diff_templates.is_template_file("additional_chat_templates/tool_use.jinja")
    assert paths.is_additional_template("additional_chat_templates/tool_use.jinja")
