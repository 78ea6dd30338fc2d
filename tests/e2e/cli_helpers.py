"""Run the real ``hubwatch`` CLI in-process against a config file, capturing stdout/stderr."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracker.cli import main


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


class Cli:
    """``cli("history", "org/x", "--json")`` runs ``hubwatch --config <file> history org/x --json``."""

    def __init__(self, workdir: Path, db_url: str, extra_config: str = ""):
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.config = workdir / "config.toml"
        self.config.write_text(
            f'[storage]\nurl = "{db_url}"\n[advisories]\nosv_api = ""\n{extra_config}', encoding="utf-8"
        )

    def __call__(self, *args: str) -> Run:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["--config", str(self.config), *args])
        return Run(code, out.getvalue(), err.getvalue())

    def ok(self, *args: str) -> Run:
        r = self(*args)
        assert r.code == 0, f"hubwatch {' '.join(args)} exited {r.code}: {r.err}"
        return r
