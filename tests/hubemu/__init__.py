"""A Hugging Face Hub emulator for tests, plus helpers that build the git repos it serves.

    from tests.hubemu import HubEmulator, RepoBuilder, clone_bundle, safetensors_bytes

    with HubEmulator() as hub:                       # 127.0.0.1, free port, starts in ms
        hub.add_repo("google/gemma-2b-it", clone_bundle("google__gemma-2b-it", tmp_path))
        src = HfSource("google/gemma-2b-it", endpoint=hub.url)
        ...
        assert hub.count("model_info") == 1          # requests per route; hub.bytes_sent(...)
        hub.faults.add("rate_limit", route="commits", retry_after=3)

See server.py (HubEmulator), faults.py (fault kinds), repos.py (RepoBuilder, clone_bundle) and
``hf_test_env()`` below, which every test using huggingface_hub should call first.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

from tests.hubemu.faults import Fault, FaultSet
from tests.hubemu.repos import (
    Lfs,
    LfsPointer,
    RepoBuilder,
    bundle_names,
    bundle_path,
    clone_bundle,
    safetensors_bytes,
)
from tests.hubemu.server import HubEmulator, RequestRecord

_HF_HOME: str | None = None


def hf_test_env() -> str:
    """Make huggingface_hub safe for tests; returns the throwaway HF_HOME.

    Sets HF_HUB_DISABLE_TELEMETRY, HF_HUB_DISABLE_XET, HF_HUB_DISABLE_IMPLICIT_TOKEN and a temporary
    HF_HOME. huggingface_hub reads these once, when ``huggingface_hub.constants`` is first imported,
    so when it already was the values are patched on the module as well. Idempotent.
    """
    global _HF_HOME
    if _HF_HOME is None:
        _HF_HOME = tempfile.mkdtemp(prefix="hubwatch-hfhome-")
        atexit.register(shutil.rmtree, _HF_HOME, True)
    env = {
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_XET": "1",
        "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "HF_HOME": _HF_HOME,
        "HF_HUB_CACHE": os.path.join(_HF_HOME, "hub"),
    }
    os.environ.update(env)
    for key in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_ENDPOINT", "HF_HUB_OFFLINE"):
        os.environ.pop(key, None)
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:
        for name in (
            "HF_HUB_DISABLE_TELEMETRY",
            "HF_HUB_DISABLE_XET",
            "HF_HUB_DISABLE_IMPLICIT_TOKEN",
            "HF_HUB_DISABLE_PROGRESS_BARS",
        ):
            setattr(constants, name, True)
        constants.HF_HUB_OFFLINE = False
        constants.HF_HOME = _HF_HOME
        constants.HF_HUB_CACHE = env["HF_HUB_CACHE"]
        constants.HF_TOKEN_PATH = os.path.join(_HF_HOME, "token")
        constants.HF_STORED_TOKENS_PATH = os.path.join(_HF_HOME, "stored_tokens")
    return _HF_HOME


__all__ = [
    "Fault",
    "FaultSet",
    "HubEmulator",
    "Lfs",
    "LfsPointer",
    "RepoBuilder",
    "RequestRecord",
    "bundle_names",
    "bundle_path",
    "clone_bundle",
    "hf_test_env",
    "safetensors_bytes",
]
