"""A tiny model repo built with real git commands, for tests that rewrite history."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "tester", "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "tester", "GIT_COMMITTER_EMAIL": "t@example.com",
}


class ModelRepo:
    def __init__(self, path: Path):
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        return subprocess.run(["git", *args], cwd=self.path, check=True, capture_output=True, text=True,
                              env=ENV).stdout.strip()

    def write(self, files: dict[str, str | bytes | dict]) -> None:  # type: ignore[type-arg]
        for name, content in files.items():
            p = self.path / name
            p.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, dict):
                content = json.dumps(content, indent=2)
            p.write_bytes(content if isinstance(content, bytes) else content.encode())

    def commit(self, title: str, files: dict | None = None, *, date: str = "2024-01-01T00:00:00Z") -> str:  # type: ignore[type-arg]
        if files:
            self.write(files)
        self.git("add", "-A")
        env_date = {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
        subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", title], cwd=self.path, check=True,
                       env={**ENV, **env_date})
        return self.git("rev-parse", "HEAD")

    def reset_hard(self, rev: str) -> None:
        self.git("reset", "-q", "--hard", rev)
