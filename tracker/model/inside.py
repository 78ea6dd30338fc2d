"""What hubwatch reads inside weight files: GGUF headers, pickle imports, the Hub's own scans.

Layer 0, data only. Each is attached to a :class:`~tracker.model.WeightFile` by the extract
stage when the snapshot holds its digest (read by HTTP Range, never the tensor data).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tracker.model.core import TensorInfo


@dataclass(frozen=True, slots=True)
class GgufInfo:
    """A GGUF file's header: metadata, chat templates, special tokens, tensor infos.

    ``metadata`` holds every key but the chat templates; arrays longer than a few items
    (token lists, merges, scores) are kept as ``{"array", "count", "sha256"}``.
    ``special_tokens`` maps ``bos`` / ``eos`` / ``pad`` / ``eot`` ... to ``(id, text)``;
    tensors carry the ggml type name (``Q4_K``) as their dtype and GGUF's dimension order.
    """

    version: int
    metadata: Mapping[str, Any] = field(default_factory=dict)
    chat_templates: Mapping[str, str] = field(default_factory=dict)
    special_tokens: Mapping[str, tuple[int, str | None]] = field(default_factory=dict)
    tensors: tuple[TensorInfo, ...] = ()
    tensor_bytes: Mapping[str, int] = field(default_factory=dict)  # ggml type -> data bytes

    @property
    def architecture(self) -> str | None:
        arch = self.metadata.get("general.architecture")
        return arch if isinstance(arch, str) else None


@dataclass(frozen=True, slots=True)
class PickleImport:
    """One global a pickle imports (``posix.system``) and its verdict from the policy table."""

    module: str
    name: str
    verdict: str  # safe | dangerous | unknown

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.name}"


@dataclass(frozen=True, slots=True)
class PickleScan:
    """The globals the pickle(s) of a checkpoint import, listed without unpickling.

    ``container`` is ``zip`` (torch.save's format: the ``*/data.pkl`` members) or ``legacy``
    (a bare pickle stream, read from a bounded prefix). ``complete`` is False when the read
    stopped before the pickle ended, so an import past that point could be missing.
    """

    container: str
    members: tuple[str, ...] = ()
    imports: tuple[PickleImport, ...] = ()
    complete: bool = True
    error: str | None = None

    def by_verdict(self, verdict: str) -> tuple[PickleImport, ...]:
        return tuple(i for i in self.imports if i.verdict == verdict)
