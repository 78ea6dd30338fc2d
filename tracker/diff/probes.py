"""Fixed probe conversations a chat template is rendered on, and the rendering itself.

Layer 1 (stage 4, diff), pure. The probes cover what templates branch on: a system prompt,
a multi-turn chat, a tool call with its result (tools passed as JSON schema, the way
``apply_chat_template(tools=...)`` passes them), and a render without the generation
prompt. Each side's special tokens (bos_token, eos_token, ...) are passed as transformers
passes them, so the rendered prompt is what a user of that revision actually sends.
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tracker.diff.sandbox import BoundedSandbox, describe_error, render_stream

_SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
_USER = {"role": "user", "content": "What is the capital of France?"}
_ASSISTANT = {"role": "assistant", "content": "The capital of France is Paris."}
_USER_2 = {"role": "user", "content": "And of Italy?"}
_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "The city name."}},
                "required": ["city"],
            },
        },
    }
]
_TOOL_CALL = {
    "role": "assistant",
    "content": "",
    "tool_calls": [
        {
            "id": "call_0",
            "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
        }
    ],
}
_TOOL_RESULT = {
    "role": "tool",
    "tool_call_id": "call_0",
    "name": "get_weather",
    "content": '{"temperature_c": 18, "sky": "clear"}',
}
SPECIAL_TOKENS = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token")
MAX_RENDER_CHARS = 4000  # of each rendered prompt kept in a change's detail


@dataclass(frozen=True, slots=True)
class Probe:
    """One conversation and the flags it is rendered with."""

    name: str
    messages: tuple[Mapping[str, Any], ...]
    add_generation_prompt: bool
    tools: tuple[Mapping[str, Any], ...] | None = None

    def context(self) -> dict[str, Any]:
        # transformers always passes tools and documents, None when the caller has none
        return {
            "messages": copy.deepcopy([dict(m) for m in self.messages]),
            "tools": None if self.tools is None else copy.deepcopy([dict(t) for t in self.tools]),
            "documents": None,
            "add_generation_prompt": self.add_generation_prompt,
        }


PROBES = (
    Probe("system_user", (_SYSTEM, _USER), add_generation_prompt=True),
    Probe("multi_turn", (_USER, _ASSISTANT, _USER_2), add_generation_prompt=True),
    Probe("tool_call", (_USER, _TOOL_CALL, _TOOL_RESULT), True, tuple(_TOOLS)),
    Probe("no_generation_prompt", (_USER, _ASSISTANT), add_generation_prompt=False),
)


@dataclass(frozen=True, slots=True)
class Rendered:
    """The prompt a probe rendered to, or why it did not render."""

    probe: str
    text: str | None
    error: str | None


def _content(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def special_tokens(tokenizer_config: Any, special_tokens_map: Any) -> dict[str, Any]:
    """Template variables for the special tokens; special_tokens_map.json wins, as in transformers."""
    out: dict[str, Any] = {}
    for doc in (tokenizer_config, special_tokens_map):
        if not isinstance(doc, dict):
            continue
        for key in SPECIAL_TOKENS:
            text = _content(doc.get(key))
            if text is not None:
                out[key] = text
        extra = doc.get("additional_special_tokens")
        if isinstance(extra, list):
            out["additional_special_tokens"] = [
                t for t in (_content(x) for x in extra[:1000]) if t is not None
            ]
    return out


#: Renders kept (by template text and special tokens): a template is rendered when it comes
#: (as the new side of a change, or as what a first read found) and again as the old side of
#: the next change; the second time is this cache's (the gpt-oss template's compile and renders
#: were most of a revision's analysis; benchmarks/new_revision.py). Rendering is a function of
#: the two (fuel, not time, bounds it), except where memory or the stack ran out: not kept.
MAX_KEPT_RENDERS = 32
_KEPT: OrderedDict[tuple[str, str], tuple[Rendered, ...]] = OrderedDict()
_KEPT_LOCK = threading.Lock()
_UNKEPT = ("stopped: out of memory", "stopped: recursion too deep")


def render_probes(template: str, tokens: Mapping[str, Any]) -> list[Rendered]:
    """Render ``template`` on every probe under one fuel budget; errors become strings."""
    key = (hashlib.sha256(template.encode("utf-8", "surrogatepass")).hexdigest(),
           json.dumps(tokens, sort_keys=True, default=repr))
    with _KEPT_LOCK:
        kept = _KEPT.get(key)
        if kept is not None:
            _KEPT.move_to_end(key)
            return list(kept)
    out = _render_probes(template, tokens)
    if not any(r.error is not None and r.error.startswith(_UNKEPT) for r in out):
        with _KEPT_LOCK:
            _KEPT[key] = tuple(out)
            while len(_KEPT) > MAX_KEPT_RENDERS:
                _KEPT.popitem(last=False)
    return out


def _render_probes(template: str, tokens: Mapping[str, Any]) -> list[Rendered]:
    env = BoundedSandbox()
    try:
        compiled = env.compile_bounded(template)
    except Exception as e:  # TemplateSyntaxError, RenderLimit, RecursionError, ...
        err = describe_error(e)
        return [Rendered(p.name, None, err) for p in PROBES]
    out: list[Rendered] = []
    for probe in PROBES:
        try:
            text = render_stream(compiled, {**tokens, **probe.context()}, env.budget)
            out.append(Rendered(probe.name, text, None))
        except Exception as e:
            out.append(Rendered(probe.name, None, describe_error(e)))
    return out
