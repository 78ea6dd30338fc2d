"""``benchmarks/template_compile.py`` times a template's compile stage by stage: its staged
compile must be the sandbox's own (the same template, rendering the same prompts), or its
figures would be of something else."""

from __future__ import annotations

from benchmarks.template_compile import corpus_templates, staged_compile
from tracker.diff.bounds import FUEL, Budget
from tracker.diff.probes import PROBES
from tracker.diff.sandbox import BoundedSandbox, render_stream


def _renders(env: BoundedSandbox, template: object, tokens: dict[str, object]) -> list[tuple[str, int]]:
    """Each probe's prompt (or refusal) and the fuel it spent: an uninstrumented template
    renders the same text but spends less."""
    out = []
    for probe in PROBES:
        env.budget = Budget(FUEL)
        try:
            text = render_stream(template, {**tokens, **probe.context()}, env.budget)
        except Exception as e:  # a refusal must be the same refusal
            text = f"{type(e).__name__}: {e}"
        out.append((text, FUEL - env.budget.fuel))
    return out


def test_the_corpus_templates_are_found() -> None:
    names = [name for name, _, _ in corpus_templates()]
    assert "openai/gpt-oss-20b" in names
    assert len(names) >= 10


def test_the_staged_compile_is_the_sandboxs_own() -> None:
    for name, source, tokens in corpus_templates():
        staged_env, whole_env = BoundedSandbox(), BoundedSandbox()
        times, staged = staged_compile(staged_env, source)
        assert set(times) == {"lex + parse", "instrument", "generate", "Python compile", "module"}
        whole = whole_env.compile_bounded(source)
        assert _renders(staged_env, staged, tokens) == _renders(whole_env, whole, tokens), name
