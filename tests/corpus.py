"""Where the shared real-data corpus lives: ../shared/hf-corpus beside the checkout."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def _find_shared() -> Path:
    env = os.environ.get("HUBWATCH_SHARED")
    candidates = [Path(env)] if env else []
    candidates += [REPO_ROOT.parent / "shared", REPO_ROOT / "shared", Path("/work/shared")]
    for c in candidates:
        if (c / "hf-corpus").is_dir():
            return c
    raise RuntimeError("cannot find shared/hf-corpus beside the checkout; set HUBWATCH_SHARED")


SHARED = _find_shared()
CORPUS = SHARED / "hf-corpus"
OSV_SCHEMA = SHARED / "osv" / "schema.json"
SEEDS = SHARED / "seeds"
