"""Renders are kept by template text and special tokens (tracker.diff.probes): the old side of
a template change was rendered when it came; what is kept is what rendering gives."""

from __future__ import annotations

import pytest

from tracker.diff import probes
from tracker.diff.probes import Rendered, render_probes

TEMPLATE = "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"


@pytest.fixture(autouse=True)
def _empty() -> None:
    probes._KEPT.clear()


def test_a_template_rendered_again_is_the_kept_render() -> None:
    first = render_probes(TEMPLATE, {"bos_token": "<s>"})
    assert len(probes._KEPT) == 1
    fresh = probes._render_probes(TEMPLATE, {"bos_token": "<s>"})
    assert render_probes(TEMPLATE, {"bos_token": "<s>"}) == first == fresh
    other = render_probes(TEMPLATE, {"bos_token": "<bos>"})  # other tokens: rendered, kept apart
    assert other != first and other[0].text is not None and other[0].text.startswith("<bos>")
    assert len(probes._KEPT) == 2


def test_errors_are_kept_but_not_running_out_of_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    assert render_probes("{% for %}", {})[0].error is not None  # a syntax error: kept
    assert len(probes._KEPT) == 1
    oom = [Rendered("system", None, "stopped: out of memory")]
    monkeypatch.setattr(probes, "_render_probes", lambda *_: oom)  # the fault
    assert render_probes("{{ 1 }}", {}) == oom
    assert len(probes._KEPT) == 1


def test_the_kept_renders_are_bounded() -> None:
    for i in range(probes.MAX_KEPT_RENDERS + 5):
        render_probes(f"{{{{ {i} }}}}", {})
    assert len(probes._KEPT) == probes.MAX_KEPT_RENDERS
