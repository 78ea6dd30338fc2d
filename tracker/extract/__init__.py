"""Stage 3, extract: parse a revision's snapshot into artifacts (pure, layer 1).

Imports only the standard library, :mod:`tracker.model` and :mod:`tracker.errors`. The
snapshot layer uses :mod:`tracker.extract.paths` to decide what to fetch.
"""

from tracker.extract.artifacts import extract_artifacts
from tracker.extract.paths import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_HEADER_BYTES,
    DEFAULT_MAX_TOKENIZER_BYTES,
    is_content_path,
    is_safetensors,
    max_content_bytes,
    wants_content,
    weight_format,
)
from tracker.extract.safetensors import parse_safetensors_header

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_HEADER_BYTES",
    "DEFAULT_MAX_TOKENIZER_BYTES",
    "extract_artifacts",
    "is_content_path",
    "is_safetensors",
    "max_content_bytes",
    "parse_safetensors_header",
    "wants_content",
    "weight_format",
]
