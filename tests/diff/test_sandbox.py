"""Chat templates render in a sandbox that refuses escapes and stops runaway templates."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from jinja2 import nodes

from tests.diff.helpers import diff_files, only
from tracker.diff import probes
from tracker.diff.probes import PROBES, render_probes, special_tokens
from tracker.diff.sandbox import FIXED_NOW, BoundedSandbox, _Instrument

ESCAPES = {
    "str_mro": "{{ ''.__class__.__mro__ }}",
    "cycler_globals": "{{ cycler.__init__.__globals__ }}",
    "joiner_globals": "{{ joiner.__init__.__globals__.os }}",
    "namespace_init": "{{ namespace.__init__.__globals__ }}",
    "format_attr": "{{ '{0.__class__}'.format(1) }}",
    "format_map_attr": "{{ '{x.__class__}'.format_map({'x': 1}) }}",
    "mutate_list": "{{ messages.append(1) }}",
    "mutate_dict": "{{ messages[0].update({'role': 'x'}) }}",
    "self_context": "{{ self._TemplateReference__context }}",
    "function_globals": "{{ raise_exception.__globals__ }}",
    "attr_filter": "{{ messages | attr('__class__') }}",
    "map_attribute": "{{ messages | map(attribute='__class__') | list }}",
    "getitem_dunder": "{{ messages['__class__'] }}",
}


@pytest.mark.parametrize("source", ESCAPES.values(), ids=ESCAPES.keys())
def test_escapes_are_refused_not_rendered_empty(source: str) -> None:
    for r in render_probes(source, {}):
        assert r.text is None
        assert r.error is not None and r.error.startswith("refused by the sandbox"), r.error


RUNAWAY = {
    "nested_loops": (
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "step budget",
    ),
    "string_doubling": (
        "{% set ns = namespace(s='a') %}{% for i in range(60) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
        "",  # too large, or out of fuel first: each doubling pays for its size
    ),
    "plus_doubling": (
        "{% set ns = namespace(s='a') %}{% for i in range(60) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
        "too large",
    ),
    "set_block_doubling": (
        "{% set ns = namespace(s='a') %}{% for i in range(60) %}{% set x %}{{ ns.s }}{{ ns.s }}{% endset %}{% set ns.s = x %}{% endfor %}",
        "over",
    ),
    "repeat": ("{{ 'a' * 1000000000 }}", "too large"),
    "power": ("{{ 2 ** 100000000 }}", "too large"),
    "int_squaring": (
        "{% set ns = namespace(n=3) %}{% for i in range(64) %}{% set ns.n = ns.n * ns.n %}{% endfor %}",
        "too large",
    ),
    "center": ("{{ 'a' | center(1000000000) }}", "too large"),
    "ljust": ("{{ 'a'.ljust(1000000000) }}", "too large"),
    "printf_width": ("{{ '%1000000000s' % 'a' }}", "too large"),
    "format_width": ("{{ '{:>1000000000}'.format('a') }}", "too large"),
    "format_filter": ("{{ '%999999999d' | format(1) }}", "too large"),
    "shared_list_dag": (
        "{% set ns = namespace(x=[1]) %}{% for i in range(40) %}{% set ns.x = [ns.x, ns.x] %}{% endfor %}{{ ns.x | tojson }}",
        "",
    ),
    "namespace_dag": (
        "{% set o = namespace(v=1) %}{% for i in range(40) %}{% set o.v = namespace(a=o.v, b=o.v) %}{% endfor %}{{ o.v }}",
        "",
    ),
    "exponential_macro": (
        "{% macro m(n) %}{% if n > 0 %}{{ m(n-1) }}{{ m(n-1) }}{% endif %}{% endmacro %}{{ m(40) }}",
        "step budget",
    ),
    "infinite_recursion": ("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", "recursion"),
    "huge_output": ("{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}", "rendered output"),
    "replace_growth": (
        "{% set ns = namespace(s='ab') %}{% for i in range(30) %}{% set ns.s = ns.s | replace('a', ns.s) %}{% endfor %}",
        "too large",
    ),
    "join_growth": ("{{ range(10000) | join('x' * 100000) }}", "too large"),
    "wordwrap_growth": ("{{ ('a ' * 100000) | wordwrap(1, wrapstring='x' * 10000) }}", "too large"),
    "tojson_indent": ("{{ messages | tojson(indent=100000000) }}", "indent"),
    "big_range": ("{{ range(10 ** 9) | list }}", "MAX_RANGE"),
    "compare_big_values": (
        "{% set a = namespace(v=1) %}{% set b = namespace(v=1) %}{% for i in range(13) %}"
        "{% set a.v = [a.v, a.v] %}{% set b.v = [b.v, b.v] %}{% endfor %}"
        "{% for i in range(100000) %}{% if a.v == b.v %}{% endif %}{% endfor %}",
        "step budget",
    ),
    "slice_copies": (
        "{% set s = 'x' * 200000 %}{% for i in range(100000) %}{% set t = s[1:] %}{% endfor %}",
        "step budget",
    ),
    "substring_scans": (
        "{% set s = 'x' * 200000 %}{% for i in range(100000) %}{% if 'y' in s %}{% endif %}{% endfor %}",
        "step budget",
    ),
    "hash_big_keys": (
        "{% set a = namespace(v=1) %}{% for i in range(14) %}{% set a.v = (a.v, a.v) %}{% endfor %}"
        "{% set d = {a.v: 1} %}{% for i in range(100000) %}{% if d[a.v] %}{% endif %}{% endfor %}",
        "step budget",
    ),
    # issue 16, point 4: work proportional to an operand's size is paid for by that size
    **{f"{name}_loop": ("{% set s = 'ab ' * 80000 %}{% for i in range(100000) %}{% if " + expr
                        + " %}{% endif %}{% endfor %}", "") for name, expr in {
        "wordcount": "s | wordcount", "split": "s.split()", "find": "s.find('z')", "list": "s | list",
        "count": "s.count('a')", "striptags": "s | striptags", "upper": "s.upper()"}.items()},
    "sort_loop": ("{% set l = range(50000) | list %}{% for i in range(100000) %}{% if l | sort %}{% endif %}"
                  "{% endfor %}", "step budget"),
    "deep_parens": ("{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}", "recursion"),
}


@pytest.mark.parametrize(("source", "why"), RUNAWAY.values(), ids=RUNAWAY.keys())
def test_runaway_templates_stop_quickly(source: str, why: str) -> None:
    start = time.perf_counter()
    results = render_probes(source, {})
    elapsed = time.perf_counter() - start
    assert elapsed < 5, elapsed
    assert all(r.text is None for r in results), [r.text[:50] for r in results if r.text]
    assert all(why in (r.error or "") for r in results), results[0].error


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("{% for %}", "template error"),
        ("{% include 'other.jinja' %}", "no loader"),
        (
            "{{ raise_exception('Only user and assistant roles are supported!') }}",
            "Only user and assistant",
        ),
        ("{{ [1, 2] | random }}", "No filter named 'random'"),
        ("{{ lipsum(10) }}", "undefined"),
    ],
)
def test_failures_are_strings(source: str, why: str) -> None:
    for r in render_probes(source, {}):
        assert r.text is None and why in (r.error or "")


def test_rendering_is_deterministic_and_clock_free() -> None:
    src = "{{ strftime_now('%d %b %Y') }}|{{ bos_token }}|{{ messages | length }}|{{ tools | tojson }}"
    first = render_probes(src, {"bos_token": "<s>"})
    assert first == probes._render_probes(src, {"bos_token": "<s>"})  # rendered again, not the kept one
    by = {r.probe: r for r in first}
    assert by["system_user"].text == f"{FIXED_NOW:%d %b %Y}|<s>|2|null"
    tools = json.loads(by["tool_call"].text.split("|", 3)[3])
    assert tools[0]["function"]["name"] == "get_weather"
    assert {p.name for p in PROBES} == {
        "system_user",
        "multi_turn",
        "tool_call",
        "no_generation_prompt",
    }


def test_transformers_features_work() -> None:
    src = (
        "{% for m in messages %}{% if loop.index0 > 5 %}{% break %}{% endif %}"
        "{% generation %}{{ m.content | trim }}{% endgeneration %}{% endfor %}"
        "{{ '%s-%d' % ('x', 3) }}{{ 'a,b' .split(',') | join('+') }}{{ {'k': [1, 2]} | tojson }}"
    )
    r = render_probes(src, {})[0]
    assert r.error is None
    assert r.text is not None and r.text.endswith('x-3a+b{"k": [1, 2]}')


def test_special_tokens_come_from_the_revision() -> None:
    tc = {
        "bos_token": {"content": "<s>", "normalized": False},
        "eos_token": "</s>",
        "additional_special_tokens": ["<x>"],
    }
    stm = {"eos_token": "<|eot|>"}
    assert special_tokens(tc, stm) == {
        "bos_token": "<s>",
        "eos_token": "<|eot|>",
        "additional_special_tokens": ["<x>"],
    }


def test_a_template_turned_hostile_is_reported_with_its_error() -> None:
    good = json.dumps(
        {"chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}"}
    ).encode()
    evil = json.dumps(
        {"chat_template": "{{ cycler.__init__.__globals__.os.system('id') }}"}
    ).encode()
    d = diff_files({"tokenizer_config.json": good}, {"tokenizer_config.json": evil})
    c = only(d, "tokenizer_config.json")
    assert c.topics == ("chat_template.changed",)
    for row in c.detail["rendered"]:
        assert row["old"] and row["new"] is None
        assert row["new_error"].startswith("refused by the sandbox")
    assert "rendered prompt differs on 4 of 4 probes" in c.summary


@pytest.fixture(scope="module")
def corpus_templates() -> dict[str, tuple[str, dict[str, object]]]:
    from tests.extract.snapshots import CHANGES, TOKENIZERS, read_tree

    out: dict[str, tuple[str, dict[str, object]]] = {}
    files = {f"tokenizers/{k}": v for k, v in read_tree(TOKENIZERS).items()}
    files.update(
        {
            f"changes/{k}": v
            for k, v in read_tree(CHANGES).items()
            if "template" in k or "tokenizer_config" in k
        }
    )
    for name, data in files.items():
        if name.endswith(".jinja"):
            out[name] = (data.decode(), {})
        elif name.endswith(".json"):
            doc = json.loads(data)
            if isinstance(doc.get("chat_template"), str):
                out[name] = (doc["chat_template"], special_tokens(doc, None))
    return out


def test_bounded_rendering_matches_a_plain_sandbox(
    corpus_templates: dict[str, tuple[str, dict[str, object]]],
) -> None:
    """The instrumentation changes nothing for real templates: same prompts as transformers' setup."""
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    from tracker.diff.sandbox import _raise_exception, _strftime_now, _tojson

    plain = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]
    )
    plain.filters["tojson"] = _tojson
    plain.globals.update(raise_exception=_raise_exception, strftime_now=_strftime_now)
    assert len(corpus_templates) >= 20
    for name, (source, tokens) in corpus_templates.items():
        template = plain.from_string(source)
        for probe, got in zip(PROBES, render_probes(source, tokens), strict=True):
            try:
                want: str | None = template.render(**tokens, **probe.context())
            except Exception:
                want = None
            assert got.text == want, (name, probe.name, got.error)


def _body_cost(body: list[Any]) -> int:
    """A block body's fuel per run, counted over the tree as parsed: its nodes and text."""
    n = 0
    for node in body:
        for sub in (node, *node.find_all(nodes.Node)):
            n += 1 + (len(sub.data) // 64 if isinstance(sub, nodes.TemplateData) else 0)
    return 1 + n // 8


def test_each_block_pays_its_parsed_body_and_every_node_has_the_environment() -> None:
    source = (
        "{% macro m(x) %}{{ x ~ 'y' * 3 }}" + "z" * 3000 + "{% endmacro %}"
        "{% for a in [1, 2] %}{% for b in (a, 3) if b > 1 %}{{ m(b) }}{{ {'k': b}['k'] }}"
        "{{ 'abc'[1:] }}{% endfor %}{% call m(a) %}inner{% endcall %}{% endfor %}"
    )
    env = BoundedSandbox()
    parsed = env.parse(source)
    blocks = (nodes.For, nodes.Macro, nodes.CallBlock)
    expected = [_body_cost(b.body) for b in parsed.find_all(blocks)]
    tree = env.parse(source)
    _Instrument(env).visit(tree)
    ticks = []
    for block in tree.find_all(blocks):
        first = block.body[0]
        assert isinstance(first, nodes.Output)
        call = first.nodes[0]
        assert isinstance(call, nodes.Call) and call.node.name == "__hw_tick"
        ticks.append(call.args[0].value)
    assert ticks == expected and len(ticks) == 4 and max(ticks) > 5
    for node in (tree, *tree.find_all(nodes.Node)):
        assert node.environment is env and node.lineno is not None
    calls = {c.node.name for c in tree.find_all(nodes.Call) if isinstance(c.node, nodes.Name)}
    assert {"__hw_concat", "__hw_list", "__hw_tuple", "__hw_dict", "__hw_slice",
            "__hw_compare"} <= calls
