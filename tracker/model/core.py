"""Revisions, files, parsed artifacts and changes: the values the pipeline passes along.

Layer 0. Everything is a frozen dataclass; mappings are plain dicts by convention and must
not be mutated after construction (they are produced once by a pure function).
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from tracker.model.inside import GgufInfo, PickleScan

BLOB_ID_EMPTY = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"

JsonValue = Any  # parsed JSON: dict / list / str / int / float / bool / None
_T = TypeVar("_T")


def _pickled_as_calls(cls: type[_T]) -> type[_T]:
    """Pickle instances as a call of ``cls`` with their field values (a slots dataclass's own
    pickling looks its fields up for every instance and sets each one through
    ``object.__setattr__``: sending a 2,500-tensor manifest to the analysis worker and back
    spent ~15 ms there; benchmarks/new_revision.py)."""
    values = operator.attrgetter(*[f.name for f in fields(cls)])  # type: ignore[arg-type]

    def __reduce__(self: _T) -> tuple[type[_T], tuple[Any, ...]]:
        return cls, values(self)

    setattr(cls, "__reduce__", __reduce__)  # noqa: B010
    return cls


@_pickled_as_calls
@dataclass(frozen=True, slots=True)
class CommitInfo:
    """One commit of a tracked branch, as the source reports it."""

    sha: str
    parents: tuple[str, ...]
    committed_at: datetime  # timezone-aware UTC
    title: str
    message: str = ""
    authors: tuple[str, ...] = ()


@_pickled_as_calls
@dataclass(frozen=True, slots=True)
class FileEntry:
    """One file of a revision's tree. ``size`` is the real size (the LFS object's for LFS files)."""

    path: str
    size: int
    blob_id: str  # git blob sha1 of what is committed (the pointer for LFS files)
    lfs_sha256: str | None = None

    @property
    def content_id(self) -> str:
        """Identity of the file's real content: the LFS sha256, else the git blob id."""
        return f"sha256:{self.lfs_sha256}" if self.lfs_sha256 else f"git:{self.blob_id}"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A revision's file tree plus the bytes of the small files that matter.

    ``contents`` holds the raw bytes of the files hubwatch reads (config, tokenizer, templates,
    index files, custom code); ``safetensors_headers`` the raw JSON header of each safetensors
    file (never any tensor bytes); ``read_errors`` what could not be read and why (size caps,
    source errors), keyed by path. ``transient_errors`` names the read errors that are no
    property of the content (a source that kept failing): they are never remembered by
    content id, so the next revision or repo with that content asks again.
    """

    sha: str
    files: tuple[FileEntry, ...]
    contents: Mapping[str, bytes] = field(default_factory=dict)
    safetensors_headers: Mapping[str, bytes] = field(default_factory=dict)
    read_errors: Mapping[str, str] = field(default_factory=dict)
    # GGUF header / pickle import digests (tracker.extract.gguf, .pickle_scan) and the Hub's
    # own per-file scan results (canonical JSON), keyed by path
    weight_digests: Mapping[str, bytes] = field(default_factory=dict)
    security: Mapping[str, bytes] = field(default_factory=dict)
    transient_errors: frozenset[str] = frozenset()
    #: the transient ones that failed over several polls and were recorded unreadable for now:
    #: a later poll reads them again and amends the revision (issue 10)
    unreadable: frozenset[str] = frozenset()

    def file(self, path: str) -> FileEntry | None:
        for entry in self.files:
            if entry.path == path:
                return entry
        return None


@_pickled_as_calls
@dataclass(frozen=True, slots=True)
class ParseIssue:
    """A file that was present but could not be parsed or was refused (too large, bad JSON)."""

    path: str
    message: str


@dataclass(frozen=True, slots=True)
class TokenizerSummary:
    """Structural summary of tokenizer.json: what changes a model's tokens, not the bytes."""

    model_type: str | None
    vocab_size: int
    vocab_hash: str
    merges_count: int
    merges_hash: str
    added_tokens: tuple[tuple[int, str, bool], ...]  # (id, content, special)
    normalizer: str  # canonical JSON of the section, "null" when absent
    pre_tokenizer: str
    post_processor: str
    decoder: str
    # canonical JSON of the model's other options (unk_token, byte_fallback, ...), truncation
    # and padding: settings that change the tokens without touching vocab or merges
    settings: str = "{}"


@_pickled_as_calls
@dataclass(frozen=True, slots=True)
class TensorInfo:
    """One tensor of a safetensors header."""

    name: str
    dtype: str
    shape: tuple[int, ...]

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@_pickled_as_calls
@dataclass(frozen=True, slots=True)
class WeightFile:
    """A weight file of the manifest: identity, format and, for safetensors, its tensors."""

    path: str
    size: int
    content_id: str
    format: str  # safetensors | pickle | gguf | onnx | tensorflow | flax | coreml | rust | other
    tensors: tuple[TensorInfo, ...] | None = None  # None when no header was read
    gguf: GgufInfo | None = None  # when the GGUF header was read
    pickle: PickleScan | None = None  # when the pickle's imports were listed
    hub_scan: Mapping[str, Any] | None = None  # the Hub's securityFileStatus, when reported


@dataclass(frozen=True, slots=True)
class WeightManifest:
    """Every weight file of a revision plus the sharding indexes."""

    files: tuple[WeightFile, ...] = ()
    index_weight_maps: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    index_total_sizes: Mapping[str, int] = field(default_factory=dict)  # metadata.total_size

    def by_path(self) -> dict[str, WeightFile]:
        return {f.path: f for f in self.files}


@dataclass(frozen=True, slots=True)
class Artifacts:
    """The parsed content of one revision, as the diff and the planner need it.

    JSON documents are kept parsed (``None`` when the file is absent). Chat templates are
    taken out of tokenizer_config.json and keyed by name ("default" for a single template),
    together with chat_template.jinja / chat_template.json. ``files`` is the whole tree,
    so the diff can report files no artifact covers.
    """

    files: tuple[FileEntry, ...] = ()
    config: JsonValue = None
    generation_config: JsonValue = None
    tokenizer_config: JsonValue = None  # chat templates removed
    special_tokens_map: JsonValue = None
    tokenizer: TokenizerSummary | None = None
    chat_templates: Mapping[str, str] = field(default_factory=dict)
    chat_template_sources: Mapping[str, str] = field(default_factory=dict)  # name -> path
    weights: WeightManifest = field(default_factory=WeightManifest)
    code: Mapping[str, str] = field(default_factory=dict)  # *.py path -> text
    issues: tuple[ParseIssue, ...] = ()


class Severity(enum.Enum):
    """Advisory severity, ordered: compare with :attr:`rank`."""

    LOW = "LOW"
    MODERATE = "MODERATE"
    HIGH = "HIGH"
    CRITICAL = "CRITICAL"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Severity.LOW: 1, Severity.MODERATE: 2, Severity.HIGH: 3, Severity.CRITICAL: 4}


def max_severity(values: Iterable[Severity | None]) -> Severity | None:
    """The highest severity among ``values``; None when all are None."""
    best: Severity | None = None
    for v in values:
        if v is not None and (best is None or v.rank > best.rank):
            best = v
    return best


class ChangeKind(enum.Enum):
    """The ``kind`` of a change in ``history --json``; the values are a public contract."""

    CONFIG = "config"
    GENERATION_CONFIG = "generation_config"
    TOKENIZER = "tokenizer"
    CHAT_TEMPLATE = "chat_template"
    WEIGHTS = "weights"
    CODE = "code"
    HISTORY = "history"
    RENAME = "rename"  # the Hub serves the repo under another id (a 307 to it)
    NAMESPACE_REUSE = "namespace_reuse"  # deleted and created again under the same id
    OTHER = "other"


@_pickled_as_calls
@dataclass(frozen=True, slots=True)
class Change:
    """One change of a revision against its parent.

    ``topics`` are the rule keys the severity policy (advisories.rules) matches on, e.g.
    ``config.auto_map`` or ``weights.pickle_added``; ``severity`` is filled in by that policy.
    ``detail`` is JSON-able structured data (field diffs, unified diff text, tensor tables)
    for ``show``, the HTML pages and the advisory's Markdown.
    """

    kind: ChangeKind
    path: str
    summary: str
    topics: tuple[str, ...] = ()
    severity: Severity | None = None
    detail: Mapping[str, JsonValue] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RevisionDiff:
    """All changes of one revision against a base revision (``base`` None: the root)."""

    base: str | None
    head: str
    changes: tuple[Change, ...] = ()

    @property
    def severity(self) -> Severity | None:
        return max_severity(c.severity for c in self.changes)
