"""Keys of the content-addressed blob store, shared by the snapshot stage and storage."""

from __future__ import annotations

from tracker.model.core import FileEntry


def content_key(entry: FileEntry) -> str:
    """Key of a small file's bytes: its git blob id."""
    return f"git:{entry.blob_id}"


def header_key(entry: FileEntry) -> str:
    """Key of a safetensors header: the content id of the weights it describes."""
    return f"sthdr:{entry.content_id}"


def header_error_key(entry: FileEntry) -> str:
    """Key of the reason a safetensors header could not be read (not retried per revision)."""
    return f"sthdr-err:{entry.content_id}"


def content_error_key(entry: FileEntry) -> str:
    """Key of the reason a small file could not be read (an LFS object the source lacks)."""
    return f"git-err:{entry.blob_id}"


def digest_key(entry: FileEntry) -> str:
    """Key of what was read inside a GGUF / pickle weight file (its header or imports digest)."""
    return f"wdig:{entry.content_id}"


def digest_error_key(entry: FileEntry) -> str:
    """Key of the reason a GGUF / pickle weight file could not be read inside."""
    return f"wdig-err:{entry.content_id}"


def security_key(entry: FileEntry) -> str:
    """Key of the Hub's own scan result for a file's content (securityFileStatus)."""
    return f"hubscan:{entry.content_id}"
