"""First track of a long history: CPU per commit at several history lengths (issue 17).

Builds a synthetic model repo with ``git fast-import`` (config.json, generation_config.json,
tokenizer_config.json, README.md), in which every commit changes a sampling default (an
advisory) and every tenth puts earlier files back (a ``fixed`` event on the advisory it
undoes), so open advisories pile up as the history grows. Then
runs ``hubwatch track PATH --as bench/long`` in-process on a fresh SQLite database and
reports wall time, CPU time (this process and the git commands it runs) and CPU per commit. Flat per-commit CPU across lengths is the
goal (the lifecycle used to re-read every open advisory per revision), with a progress bar on a
terminal: stderr is a stand-in that says it is a terminal, and the bar's updates are counted.

    .venv/bin/python benchmarks/first_track.py --lengths 100,500,1000,2000
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tracker.cli import main as hubwatch


def files_at(i: int) -> dict[str, str]:
    """The files at commit ``i``: each commit moves the sampling default on (an advisory);
    every tenth puts back the files of two commits before (fixing the previous advisory)."""
    s = i - 2 if i % 10 == 9 else i
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
              "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 512, "vocab_size": 1000,
              "eos_token_id": 2 + (s // 5) % 3}
    generation = {"temperature": round(0.5 + s / 10000, 4), "top_p": 0.9}
    tokenizer = {"bos_token": "<s>", "eos_token": "</s>", "model_max_length": 2048 + 1024 * ((s // 11) % 2)}
    return {
        "config.json": json.dumps(config, indent=2),
        "generation_config.json": json.dumps(generation, indent=2),
        "tokenizer_config.json": json.dumps(tokenizer, indent=2),
        "README.md": f"# bench model\n\nrevision {s}\n",
    }


def build_repo(path: Path, n: int) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    stream = io.BytesIO()
    for i in range(n):
        when = 1_700_000_000 + 60 * i
        msg = f"update {i}".encode()
        stream.write(b"commit refs/heads/main\n")
        stream.write(f"committer bench <bench@example.invalid> {when} +0000\n".encode())
        stream.write(b"data %d\n%s\n" % (len(msg), msg))
        for name, text in files_at(i).items():
            data = text.encode()
            stream.write(f"M 100644 inline {name}\n".encode() + b"data %d\n%s\n" % (len(data), data))
        stream.write(b"\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=path, input=stream.getvalue(), check=True)


def cpu() -> float:
    """CPU of this process and its finished children (the git commands of the source)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


class Terminal(io.StringIO):
    """stderr as a terminal: ``hubwatch track`` draws its progress bar only on one."""

    def isatty(self) -> bool:
        return True


def track(n: int, root: Path) -> dict[str, float]:
    repo = root / f"long-{n}"
    build_repo(repo, n)
    config = root / f"config-{n}.toml"
    config.write_text(f'[storage]\nurl = "sqlite:///{root / f"hw-{n}.db"}"\n[advisories]\nosv_api = ""\n')
    out, err = io.StringIO(), Terminal()
    wall, used = time.perf_counter(), cpu()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = hubwatch(["--config", str(config), "track", str(repo), "--as", "bench/long"])
    wall, used = time.perf_counter() - wall, cpu() - used
    if code != 0:
        raise RuntimeError(f"track failed: {err.getvalue()}")
    with contextlib.redirect_stdout(out := io.StringIO()):
        hubwatch(["--config", str(config), "advisories", "bench/long", "--json"])
    records = json.loads(out.getvalue())
    bar = [line for line in err.getvalue().split("\r") if line.startswith("bench/long [")]
    fixed = sum(1 for r in records if any("fixed" in e for e in r["affected"][0]["ranges"][0]["events"]))
    return {"commits": n, "wall_s": wall, "cpu_s": used, "cpu_ms_per_commit": 1000 * used / n,
            "advisories": len(records), "fixed": fixed, "bar_updates": len(bar),
            "bar_last": bar[-1].strip() if bar else ""}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lengths", default="100,500,1000,2000")
    args = p.parse_args(argv)
    lengths = [int(x) for x in args.lengths.split(",")]
    command = " ".join(["benchmarks/first_track.py", *(sys.argv[1:] if argv is None else argv)])
    started, load = datetime.now(UTC), os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in lengths:
            rows.append(track(n, Path(tmp)))
    print(f"Command: `.venv/bin/python {command}`")
    print(f"CPython {sys.version.split()[0]}, {os.cpu_count()} CPUs shared with other work, "
          f"{started:%Y-%m-%d %H:%M}-{datetime.now(UTC):%H:%M} UTC, 1-minute load average {load:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end")
    print("| commits | advisories | fixed | wall s | CPU s | CPU ms per commit | progress bar updates (last) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        print(f"| {r['commits']:,} | {r['advisories']:,} | {r['fixed']:,} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | "
              f"{r['cpu_ms_per_commit']:.0f} | {r['bar_updates']:,} (`{r['bar_last']}`) |")
    base = rows[0]["cpu_ms_per_commit"]
    worst = max(r["cpu_ms_per_commit"] for r in rows)
    verdict = "not judged: one length" if len(rows) < 2 else "met" if worst / base < 1.5 else "NOT met"
    print(f"goal: per-commit CPU flat across lengths; largest / smallest-length ratio {worst / base:.2f} "
          f"({verdict} at < 1.5)")
    drawn = all(f" {r['commits']}/{r['commits']} " in r["bar_last"] for r in rows)
    print(f"goal: a progress bar on a terminal; drawn to {'the end' if drawn else 'NOT the end'} at every length "
          f"({'met' if drawn else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
