"""Which files of a revision's tree hubwatch reads, and how big they may be: data, not I/O.

Layer 1 (stage 3, extract), pure; imports only tracker.model (file-name tables shared with the diff). The snapshot layer
(stage 2) asks :func:`wants_content` before fetching a file and records a ``TooLarge`` read
error for a wanted file over :func:`max_content_bytes`; extraction and the diff use the same
tables, so what is fetched and what is read can never drift apart.

Model files are read at the top level only (a ``config.json`` in a subfolder belongs to a
sub-model such as a sentence-transformers pooling layer, and is reported as an "other"
file); custom code (``*.py``) is read at any depth, because ``auto_map`` may point into a
package folder.
"""

from __future__ import annotations

import posixpath

from tracker.model.files import VOCAB_FILES

MIB = 1024 * 1024
#: Default cap for every read file but tokenizer.json (configs, templates, indexes, code).
DEFAULT_MAX_FILE_BYTES = 2 * MIB
#: tokenizer.json carries the whole vocabulary: gemma-2b's is 17.5 MB, Llama-3's 9 MB.
DEFAULT_MAX_TOKENIZER_BYTES = 24 * MIB
#: The safetensors JSON header cap huggingface_hub applies (``SAFETENSORS_MAX_HEADER_LENGTH``).
DEFAULT_MAX_HEADER_BYTES = 25_000_000

CONFIG = "config.json"
GENERATION_CONFIG = "generation_config.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
SPECIAL_TOKENS_MAP = "special_tokens_map.json"
TOKENIZER_JSON = "tokenizer.json"
ADDED_TOKENS = "added_tokens.json"
CHAT_TEMPLATE_JINJA = "chat_template.jinja"
CHAT_TEMPLATE_JSON = "chat_template.json"
#: transformers reads extra named templates from this folder (``<name>.jinja``).
ADDITIONAL_TEMPLATES_DIR = "additional_chat_templates"

#: Top-level files whose content is read.
TOP_LEVEL_FILES = frozenset(
    {
        CONFIG,
        GENERATION_CONFIG,
        TOKENIZER_CONFIG,
        SPECIAL_TOKENS_MAP,
        TOKENIZER_JSON,
        ADDED_TOKENS,
        CHAT_TEMPLATE_JINJA,
        CHAT_TEMPLATE_JSON,
    }
)


_WEIGHT_INDEX_SUFFIXES = (
    ".safetensors.index.json",
    ".bin.index.json",
    ".h5.index.json",
    ".msgpack.index.json",
)

_SUFFIX_FORMATS: tuple[tuple[str, str], ...] = (
    (".safetensors", "safetensors"),
    (".gguf", "gguf"),
    (".ggml", "gguf"),
    (".onnx", "onnx"),
    (".onnx_data", "onnx"),
    (".onnx.data", "onnx"),
    (".ort", "onnx"),
    (".h5", "tensorflow"),
    (".hdf5", "tensorflow"),
    (".keras", "tensorflow"),
    (".tflite", "tensorflow"),
    (".msgpack", "flax"),
    (".mlmodel", "coreml"),
    (".ot", "rust"),
    # Everything torch.load / pickle.load reads can run code while loading.
    (".bin", "pickle"),
    (".pt", "pickle"),
    (".pth", "pickle"),
    (".pt2", "pickle"),
    (".ptl", "pickle"),
    (".ckpt", "pickle"),
    (".pkl", "pickle"),
    (".pickle", "pickle"),
    (".joblib", "pickle"),
    (".dill", "pickle"),
    (".nemo", "pickle"),
    (".mar", "pickle"),
    (".pdparams", "pickle"),
    (".npy", "other"),
    (".npz", "other"),
    (".pte", "other"),
    (".engine", "other"),
    (".llamafile", "other"),
)


def _name(path: str) -> str:
    return posixpath.basename(path)


def is_weight_index(path: str) -> bool:
    """A sharding index (``model.safetensors.index.json``, ``pytorch_model.bin.index.json``, ...)."""
    return path.endswith(_WEIGHT_INDEX_SUFFIXES)


def is_custom_code(path: str) -> bool:
    """Python files at any depth: candidates for ``trust_remote_code``."""
    return path.endswith(".py")


def is_additional_template(path: str) -> bool:
    """``additional_chat_templates/<name>.jinja``: one named chat template each."""
    head, name = posixpath.split(path)
    return head == ADDITIONAL_TEMPLATES_DIR and name.endswith(".jinja") and len(name) > 6


def is_vocab_file(path: str) -> bool:
    """Top-level tokenizer vocabularies hubwatch compares by content id (never parsed)."""
    return "/" not in path and (path in VOCAB_FILES or path.endswith(".tiktoken"))


def is_content_path(path: str) -> bool:
    """Whether hubwatch reads this file's bytes at all (size aside)."""
    if is_custom_code(path) or is_additional_template(path):
        return True
    if "/" in path:
        return False
    return path in TOP_LEVEL_FILES or is_weight_index(path)


def max_content_bytes(path: str) -> int:
    """The size cap for a read file: tokenizer.json is big by nature, the rest is small."""
    return DEFAULT_MAX_TOKENIZER_BYTES if path == TOKENIZER_JSON else DEFAULT_MAX_FILE_BYTES


def wants_content(path: str, size: int) -> bool:
    """Fetch this file's bytes? Only read paths within their cap (a bigger one: ``TooLarge``)."""
    return is_content_path(path) and 0 <= size <= max_content_bytes(path)


def is_safetensors(path: str) -> bool:
    """A safetensors weight file, whose JSON header the snapshot reads by HTTP range."""
    return path.endswith(".safetensors")


def weight_format(path: str) -> str | None:
    """The serialisation of a weight file, or None when the path is not a weight file.

    ``pickle`` means loading it can execute code (torch.load / pickle.load); ``other`` is a
    known weight container with no finer class. Core ML packages are folders whose every file
    is part of the model.
    """
    if ".mlpackage/" in path.lower():
        return "coreml"
    if is_weight_index(path) or path.endswith(".json"):
        return None
    name = _name(path).lower()
    if name.endswith(".bin"):
        # ggml-era llama.cpp / whisper.cpp files and OpenVINO IR weights are raw tensors.
        if name.startswith("ggml"):
            return "gguf"
        if name.startswith("openvino"):
            return "other"
    if name == "saved_model.pb" or ".data-0" in name or name.endswith(".ckpt.index"):
        return "tensorflow"
    for suffix, fmt in _SUFFIX_FORMATS:
        if name.endswith(suffix):
            return fmt
    return None


#: Pickle files whose imports are listed (torch.save checkpoints, training_args.bin, pickles).
_PICKLE_READ_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")


def reads_inside(path: str) -> str | None:
    """``gguf`` / ``pickle`` when the snapshot reads inside this weight file by Range, else None."""
    name = _name(path).lower()
    if name.endswith(".gguf"):
        return "gguf"
    if weight_format(path) == "pickle" and name.endswith(_PICKLE_READ_SUFFIXES):
        return "pickle"
    return None
