"""Audit input: a Hugging Face cache directory (``HF_HUB_CACHE`` layout), read without loading.

```
<cache>/models--<org>--<name>/refs/<branch>            the commit the branch pointed at
<cache>/models--<org>--<name>/snapshots/<commit>/...   one directory per downloaded revision
```

Every snapshot directory is a pinned revision (what the cache serves offline, whatever
``refs/`` says now). Datasets
and spaces (``datasets--``, ``spaces--``) are not models and are skipped. The default cache
is ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub`` (the order
huggingface_hub uses); the caller passes the environment in.

Imports: stdlib, tracker.audit.pins.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from tracker.audit.pins import COMMIT, REPO_ID, Pin

PREFIX = "models--"


def default_cache(env: Mapping[str, str], home: Path) -> Path:
    """Where huggingface_hub keeps its cache for this environment."""
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    base = Path(env["XDG_CACHE_HOME"]).expanduser() if env.get("XDG_CACHE_HOME") else home / ".cache"
    return base / "huggingface" / "hub"


def cache_root(path: Path) -> Path | None:
    """The cache directory ``path`` is (or holds as ``hub/``), or one repo folder of one."""
    if path.name.startswith(PREFIX) and (path / "snapshots").is_dir():
        return path
    for candidate in (path, path / "hub"):
        if candidate.is_dir() and any(p.name.startswith(PREFIX) for p in candidate.iterdir()):
            return candidate
    return None


def cache_pins(root: Path, source: str) -> list[Pin]:
    """One pin per snapshot of every model repo in the cache at ``root``."""
    folders = [root] if root.name.startswith(PREFIX) else sorted(root.iterdir())
    out: list[Pin] = []
    for folder in folders:
        repo = repo_of_folder(folder.name)
        snapshots = folder / "snapshots"
        if repo is None or not snapshots.is_dir():
            continue
        for snap in sorted(snapshots.iterdir()):
            if snap.is_dir() and COMMIT.match(snap.name):
                out.append(Pin(repo, snap.name, str(Path(source) / snap.relative_to(root)), "hf-cache"))
    return out


def repo_of_folder(name: str) -> str | None:
    """``models--org--name`` -> ``org/name`` (the Hub forbids ``--`` inside ids)."""
    if not name.startswith(PREFIX):
        return None
    repo = name[len(PREFIX):].replace("--", "/")
    return repo if REPO_ID.match(repo) else None
