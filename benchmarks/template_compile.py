"""A chat template seen for the first time: what compiling and rendering it costs, per stage,
beside Jinja's own sandbox compiling the same text the way transformers does.

    .venv/bin/python benchmarks/template_compile.py             # every corpus template, 9 rounds
    .venv/bin/python benchmarks/template_compile.py --rounds 21 --only gpt-oss

Why: in ``benchmarks/new_revision.py`` a template change's new side is compiled and rendered
in the analysis worker (the old side's renders are kept), and for the large templates that is
most of the revision's CPU. This says how much of it is Jinja's own lexing, parsing and code
generation, which any renderer pays once per text (transformers compiles the same way on a
template's first ``apply_chat_template``), and how much the bounded sandbox adds: its
instrumentation pass and the charges it puts into the generated code.

Templates: every chat template of the repos in shared/hf-corpus/tokenizers, as the product
extracts them (``tracker.extract``: chat_template.jinja, or tokenizer_config.json's string or
named list). Stages, CPU of this process, the best of
``--rounds``: Jinja's lexer and parser (``env.parse``), the instrumentation pass, Jinja's code
generator, Python's ``compile`` of the generated source, and the module's execution
(``Template.from_code``); then the four probes rendered under one fuel budget
(``tracker.diff.probes``). The ratio is the median of the rounds' own, each round compiling
with both sandboxes back to back. "Jinja's own" is ``ImmutableSandboxedEnvironment(trim_blocks=True,
lstrip_blocks=True)`` with loopcontrols, ``from_string`` of the text, as transformers builds it.

Goal: the bounded compile within 1.5x of Jinja's own sandboxed compile of the same text, for
every template (what is left is Jinja's, the floor of a first-time render).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from jinja2.ext import loopcontrols  # noqa: E402
from jinja2.sandbox import ImmutableSandboxedEnvironment  # noqa: E402

from tests.extract.snapshots import TOKENIZERS, snapshot_of  # noqa: E402
from tracker.diff.probes import PROBES, special_tokens  # noqa: E402
from tracker.diff.sandbox import (  # noqa: E402
    BoundedSandbox,
    _GenerationTag,
    _Instrument,
    _raise_exception,
    _strftime_now,
    _tojson,
    render_stream,
)
from tracker.extract import extract_artifacts  # noqa: E402

GOAL = 1.5
STAGES = ("lex + parse", "instrument", "generate", "Python compile", "module")


def corpus_templates() -> list[tuple[str, str, dict[str, Any]]]:
    """(name, template text, its repo's special tokens) of every chat template in the corpus,
    as the product extracts them from each repo's files (``tracker.extract``)."""
    repos: dict[str, dict[str, bytes]] = defaultdict(dict)
    for path in sorted(TOKENIZERS.iterdir()):
        for file in ("chat_template.jinja", "tokenizer_config.json"):
            if path.name.endswith("." + file):
                repos[path.name.removesuffix("." + file)][file] = path.read_bytes()
    out: list[tuple[str, str, dict[str, Any]]] = []
    for stem, files in sorted(repos.items()):
        arts = extract_artifacts(snapshot_of(files))
        tokens = special_tokens(arts.tokenizer_config, arts.special_tokens_map)
        repo = stem.replace("__", "/")
        for name, text in arts.chat_templates.items():
            out.append((repo if name == "default" else f"{repo} ({name})", text, tokens))
    return out


def cpu_ms(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.process_time_ns()
    result = fn()
    return (time.process_time_ns() - start) / 1e6, result


def staged_compile(env: BoundedSandbox, source: str) -> tuple[dict[str, float], Any]:
    """``env.compile_bounded(source)`` stage by stage: (CPU ms of each, the template)."""
    times: dict[str, float] = {}
    times["lex + parse"], tree = cpu_ms(lambda: env.parse(source))
    times["instrument"], _ = cpu_ms(lambda: _Instrument(env).visit(tree))
    times["generate"], code = cpu_ms(lambda: env._generate(tree, None, None))
    times["Python compile"], compiled = cpu_ms(lambda: env._compile(code, "<template>"))
    times["module"], template = cpu_ms(
        lambda: env.template_class.from_code(env, compiled, env.make_globals(None), None))
    return times, template


def bounded_stages(source: str, tokens: dict[str, Any]) -> dict[str, float]:
    """One bounded compile, stage by stage, then the probes' renders (CPU ms)."""
    env = BoundedSandbox()
    times, template = staged_compile(env, source)

    def renders() -> None:
        for probe in PROBES:
            with suppress(Exception):  # a probe the template refuses still cost its render
                render_stream(template, {**tokens, **probe.context()}, env.budget)

    times["renders"], _ = cpu_ms(renders)
    return times


def jinja_own(source: str, tokens: dict[str, Any]) -> dict[str, float]:
    """Jinja's sandbox as transformers builds it: the compile, then the same probes rendered."""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols, _GenerationTag])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception  # raises TemplateError, as transformers' does
    env.globals["strftime_now"] = _strftime_now
    compile_ms, template = cpu_ms(lambda: env.from_string(source))

    def renders() -> None:
        for probe in PROBES:
            with suppress(Exception):
                template.render(**tokens, **probe.context())

    render_ms, _ = cpu_ms(renders)
    return {"compile": compile_ms, "renders": render_ms}


def best(rounds: list[dict[str, float]]) -> dict[str, float]:
    return {k: min(r[k] for r in rounds) for k in rounds[0]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--only", help="templates whose name contains this")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    templates = [t for t in corpus_templates() if not args.only or args.only.lower() in t[0].lower()]
    load = os.getloadavg()[0]
    rows = []
    for name, source, tokens in templates:
        ours, theirs = [], []
        for _ in range(args.rounds):  # alternated, so a change of load falls on both
            ours.append(bounded_stages(source, tokens))
            theirs.append(jinja_own(source, tokens))
        o, t = best(ours), best(theirs)
        # the ratio of each round's pair (run back to back), the median of them: a change of
        # the machine's speed between rounds falls on both sides of a pair
        paired = [sum(a[s] for s in STAGES) / b["compile"] for a, b in zip(ours, theirs, strict=True)]
        rows.append({"template": name, "chars": len(source), **o, "compile": sum(o[s] for s in STAGES),
                     "jinja compile": t["compile"], "jinja renders": t["renders"],
                     "ratio": statistics.median(paired)})
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"A template's first compile and renders, CPU ms, best of {args.rounds}; compile / Jinja's: the median "
          f"of the {args.rounds} rounds' pairs (CPython "
          f"{platform.python_version()}, {os.cpu_count()} CPUs, load average {load:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end, {stamp}):\n")
    print("| template | chars | " + " | ".join(STAGES) + " | compile | renders (4 probes) "
          "| Jinja's own: compile, renders | compile / Jinja's |")
    print("| --- | ---: | " + " | ".join("---:" for _ in STAGES) + " | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['template']} | {r['chars']:,} | " + " | ".join(f"{r[s]:.1f}" for s in STAGES)
              + f" | {r['compile']:.1f} | {r['renders']:.1f} | {r['jinja compile']:.1f}, "
              f"{r['jinja renders']:.1f} | {r['ratio']:.2f}x |")
    worst = max(rows, key=lambda r: r["ratio"])
    ratios = [r["ratio"] for r in rows]
    met = "met" if worst["ratio"] <= GOAL else "NOT met"
    print(f"\nGoal: the bounded compile within {GOAL}x of Jinja's own sandboxed compile, every template: "
          f"worst {worst['ratio']:.2f}x ({worst['template']}), median {statistics.median(ratios):.2f}x ({met}).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
