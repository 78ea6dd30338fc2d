"""Audit inputs, each detected by its content: read files and directories into pins.

- a file: JSON (CycloneDX or SPDX), else TOML with ``[[model]]`` (models.lock), else Python
  source (``ast.parse``); anything else is an :class:`InputError`;
- a directory: a Hugging Face cache (``models--*`` folders, here or under ``hub/``), else a
  source tree, whose ``*.py`` files and ``models.lock`` files are read (virtualenvs, VCS and
  cache folders skipped);
- ``-``: standard input, as a file.

Imports: stdlib, tracker.audit.
"""

from __future__ import annotations

import ast
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

from tracker.audit.inputs.cache import cache_pins, cache_root, default_cache
from tracker.audit.inputs.lockfile import LockError, is_lockfile, lock_pins, render_lock
from tracker.audit.inputs.pysource import python_pins
from tracker.audit.inputs.sbom import cyclonedx_pins, is_cyclonedx, is_spdx, spdx_pins
from tracker.audit.pins import Pin

__all__ = ["InputError", "Scanned", "default_cache", "read_input", "read_text", "render_lock"]

MAX_INPUT_BYTES = 64 * 1024 * 1024
_SKIP_DIRS = {".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__", "site-packages",
              ".tox", ".nox", ".mypy_cache", ".ruff_cache", ".pytest_cache", "build", "dist"}


class InputError(ValueError):
    """An input that cannot be read or is of no kind audit knows (exit code 1)."""


@dataclass(frozen=True, slots=True)
class Scanned:
    """What one input held: its kind(s) and pins."""

    source: str
    kind: str
    pins: tuple[Pin, ...]


def read_input(path: str, stdin_text: str | None = None) -> Scanned:
    """Detect what ``path`` is by its content and read its pins."""
    if path == "-":
        return read_text(stdin_text or "", "-")
    p = Path(path).expanduser()
    if p.is_dir():
        root = cache_root(p)
        if root is not None:
            shown = path if root == p else str(Path(path) / root.relative_to(p))
            return Scanned(path, "hf-cache", tuple(cache_pins(root, shown)))
        return _read_tree(p, path)
    try:
        if p.stat().st_size > MAX_INPUT_BYTES:
            raise InputError(f"{path}: larger than {MAX_INPUT_BYTES} bytes")
        raw = p.read_bytes()
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from e
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text, so no SBOM, lock file or Python source") from e
    return read_text(text, path)


def read_text(text: str, source: str) -> Scanned:
    """Detect and read one file's text: SBOM JSON, models.lock TOML or Python source."""
    stripped = text.lstrip()
    doc: object = None
    if stripped.startswith(("{", "[")):
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError) as e:
            if stripped.startswith("{"):  # "[" may open a TOML table instead
                raise InputError(f"{source}: invalid JSON: {e}") from e
        if doc is not None:
            if is_cyclonedx(doc):
                return Scanned(source, "cyclonedx", tuple(cyclonedx_pins(doc, text, source)))  # type: ignore[arg-type]
            if is_spdx(doc):
                return Scanned(source, "spdx", tuple(spdx_pins(doc, text, source)))  # type: ignore[arg-type]
            raise InputError(f"{source}: JSON, but neither a CycloneDX nor an SPDX document")
    try:
        toml = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        toml = None
    if is_lockfile(toml):
        assert toml is not None
        try:
            return Scanned(source, "lockfile", tuple(lock_pins(toml, text, source)))
        except LockError as e:
            raise InputError(str(e)) from e
    try:
        tree = ast.parse(text, filename=source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise InputError(
            f"{source}: not a CycloneDX/SPDX JSON SBOM, a models.lock or Python source"
        ) from e
    return Scanned(source, "python", tuple(python_pins(tree, source)))


def _read_tree(root: Path, source: str) -> Scanned:
    pins: list[Pin] = []
    for path in sorted(_tree_files(root)):
        shown = str(Path(source) / path.relative_to(root))
        try:
            scanned = read_input(str(path))
        except InputError:
            if path.name == "models.lock":
                raise
            continue  # a .py file that does not parse is not ours to judge
        pins.extend(
            Pin(p.repo, p.revision, shown, p.kind, p.line, p.ref) for p in scanned.pins
        )
    return Scanned(source, "tree", tuple(pins))


def _tree_files(root: Path) -> list[Path]:
    out = []
    stack = [root]
    while stack:
        current = stack.pop()
        try:
            entries = list(current.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink():
                continue
            if entry.is_dir():
                if entry.name not in _SKIP_DIRS and not entry.name.endswith(".egg-info"):
                    stack.append(entry)
            elif entry.suffix == ".py" or entry.name == "models.lock":
                out.append(entry)
    return out
