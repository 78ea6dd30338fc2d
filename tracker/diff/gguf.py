"""GGUF files compared inside: chat templates, tokenizer, architecture, quant mix.

Layer 1 (stage 4, diff), pure. For every ``.gguf`` path whose content changed (and whose
header was read on each side where it exists), the header's chat templates are diffed like
JSON ones (a unified text diff plus the prompts rendered in the sandbox on the probe
conversations, with that side's bos / eos texts) as ``chat_template`` changes on the GGUF
path; its tokenizer keys as a ``tokenizer`` change; its architecture keys as a ``config``
change; and its tensor types and shapes as a ``weights`` change that names the quant mix
("ffn_down Q4_K -> Q8_0 on 32 tensors") and the totals per type.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Any

from tracker.diff import topics as t
from tracker.diff.gguf_keys import config_change, tokenizer_change
from tracker.diff.probes import render_probes
from tracker.diff.sides import Sides
from tracker.diff.templates import MAX_RENDERED_TEMPLATES, change_hints, rendered_detail
from tracker.diff.textdiff import unified
from tracker.model import Change, ChangeKind, WeightFile
from tracker.model.inside import GgufInfo

MAX_GROUPS_SHOWN = 50
#: GGUF special-token names -> the template variables transformers / llama.cpp pass.
_TEMPLATE_TOKENS = {"bos": "bos_token", "eos": "eos_token", "unknown": "unk_token",
                    "padding": "pad_token", "seperator": "sep_token", "cls": "cls_token"}  # fmt: skip
_LAYER = re.compile(r"^blk\.\d+\.")
FILE_TYPES = {
    0: "ALL_F32", 1: "MOSTLY_F16", 2: "MOSTLY_Q4_0", 3: "MOSTLY_Q4_1", 7: "MOSTLY_Q8_0",
    8: "MOSTLY_Q5_0", 9: "MOSTLY_Q5_1", 10: "MOSTLY_Q2_K", 11: "MOSTLY_Q3_K_S",
    12: "MOSTLY_Q3_K_M", 13: "MOSTLY_Q3_K_L", 14: "MOSTLY_Q4_K_S", 15: "MOSTLY_Q4_K_M",
    16: "MOSTLY_Q5_K_S", 17: "MOSTLY_Q5_K_M", 18: "MOSTLY_Q6_K", 19: "MOSTLY_IQ2_XXS",
    20: "MOSTLY_IQ2_XS", 21: "MOSTLY_Q2_K_S", 22: "MOSTLY_IQ3_XS", 23: "MOSTLY_IQ3_XXS",
    24: "MOSTLY_IQ1_S", 25: "MOSTLY_IQ4_NL", 26: "MOSTLY_IQ3_S", 27: "MOSTLY_IQ3_M",
    28: "MOSTLY_IQ2_S", 29: "MOSTLY_IQ2_M", 30: "MOSTLY_IQ4_XS", 31: "MOSTLY_IQ1_M",
    32: "MOSTLY_BF16", 36: "MOSTLY_TQ1_0", 37: "MOSTLY_TQ2_0", 38: "MOSTLY_MXFP4_MOE",
}  # fmt: skip


def template_tokens(info: GgufInfo) -> dict[str, Any]:
    """The special-token texts a template sees, from the GGUF header's own vocab."""
    out: dict[str, Any] = {}
    for name, var in _TEMPLATE_TOKENS.items():
        tok = info.special_tokens.get(name)
        if tok is not None and tok[1] is not None:
            out[var] = tok[1]
    return out


def _template_change(
    path: str, name: str, old: GgufInfo | None, new: GgufInfo | None, allowed: bool
) -> Change:
    a = old.chat_templates.get(name) if old else None
    b = new.chat_templates.get(name) if new else None
    op = "added" if a is None else "removed" if b is None else "changed"
    rows, differ = rendered_detail(
        render_probes(a, template_tokens(old)) if a is not None and old and allowed else None,
        render_probes(b, template_tokens(new)) if b is not None and new and allowed else None,
    )
    detail: dict[str, Any] = {
        "op": op,
        "name": name,
        "sources": {"old": path if a is not None else None, "new": path if b is not None else None},
        "rendered": rows,
        "rendered_changed": differ,
    }
    if not allowed:
        detail["rendered_skipped"] = f"only the first {MAX_RENDERED_TEMPLATES} are rendered"
    if a is not None and b is not None:
        detail["text"] = unified(a, b, path, path)
        hints = change_hints(a, b, len(rows), differ, allowed)
        summary = f"chat template '{name}' in {path} changed: " + "; ".join(hints)
        topic = t.CHAT_TEMPLATE_CHANGED
    elif op == "added":
        summary, topic = f"chat template '{name}' added ({path})", t.CHAT_TEMPLATE_ADDED
    else:
        summary, topic = f"chat template '{name}' removed ({path})", t.CHAT_TEMPLATE_REMOVED
    return Change(ChangeKind.CHAT_TEMPLATE, path, summary, (topic,), detail=detail)


def _role(name: str) -> str:
    return _LAYER.sub("", name).removesuffix(".weight")


def _file_type(info: GgufInfo) -> str | None:
    ft = info.metadata.get("general.file_type")
    return FILE_TYPES.get(ft, f"type {ft}") if type(ft) is int else None


def quant_change(path: str, old: GgufInfo, new: GgufInfo) -> Change | None:
    """Tensor types and shapes, grouped by role across layers, plus file type and totals."""
    a = {x.name: (x.dtype, x.shape) for x in old.tensors}
    b = {x.name: (x.dtype, x.shape) for x in new.tensors}
    groups: Counter[tuple[str, str, str, str]] = Counter()
    for name in sorted(a.keys() | b.keys()):
        o, n = a.get(name), b.get(name)
        if o == n:
            continue
        if o is None or n is None:
            op = "added" if o is None else "removed"
            groups[(_role(name), op, (o or n or ("",))[0], "")] += 1
        elif o[0] != n[0]:
            groups[(_role(name), "type", o[0], n[0])] += 1
        else:
            groups[(_role(name), "shape", str(list(o[1])), str(list(n[1])))] += 1
    ft_old, ft_new = _file_type(old), _file_type(new)
    if not groups and ft_old == ft_new:
        return None
    parts = []
    for (role, op, x, y), count in sorted(groups.items(), key=lambda kv: (-kv[1], kv[0])):
        if op in ("type", "shape"):
            parts.append(f"{role} {x} -> {y} on {count} tensor{'s' * (count > 1)}")
        else:
            parts.append(f"{role} {op} ({x}) on {count} tensor{'s' * (count > 1)}")
    if ft_old != ft_new:
        parts.insert(0, f"file type {ft_old} -> {ft_new}")
    ob, nb = sum(old.tensor_bytes.values()), sum(new.tensor_bytes.values())
    elems: dict[str, dict[str, int]] = defaultdict(lambda: {"old": 0, "new": 0})
    for label, info in (("old", old), ("new", new)):
        for tensor in info.tensors:
            elems[tensor.dtype][label] += tensor.numel
    return Change(
        ChangeKind.WEIGHTS,
        path,
        "GGUF tensors: " + "; ".join(parts[:4]) + (f"; and {len(parts) - 4} more" if len(parts) > 4 else "")
        + f" ({ob / 1e9:.2f} GB -> {nb / 1e9:.2f} GB of tensor data)",
        (t.WEIGHTS_QUANT,),
        detail={
            "op": "changed",
            "file_type": {"old": ft_old, "new": ft_new},
            "groups": [
                {"role": r, "op": op, "old": x, "new": y, "tensors": c}
                for (r, op, x, y), c in sorted(groups.items())[:MAX_GROUPS_SHOWN]
            ],
            "groups_total": len(groups),
            "params_by_type": dict(sorted(elems.items())),
            "bytes_by_type": {
                k: {"old": old.tensor_bytes.get(k, 0), "new": new.tensor_bytes.get(k, 0)}
                for k in sorted(old.tensor_bytes.keys() | new.tensor_bytes.keys())
            },
            "tensor_bytes": {"old": ob, "new": nb},
        },
    )


def _gguf_files(files: tuple[WeightFile, ...]) -> dict[str, WeightFile]:
    return {f.path: f for f in files if f.format == "gguf" and f.path.lower().endswith(".gguf")}


def diff_gguf(sides: Sides) -> list[Change]:
    """Every inside change of every changed GGUF file whose header is known where it exists."""
    old, new = _gguf_files(sides.base.weights.files), _gguf_files(sides.head.weights.files)
    out: list[Change] = []
    rendered = 0
    for path in sorted(old.keys() | new.keys()):
        o, n = old.get(path), new.get(path)
        if o is not None and n is not None and o.content_id == n.content_id:
            continue
        if (o is not None and o.gguf is None) or (n is not None and n.gguf is None):
            continue  # unread on one side: the file change and the read error say so
        og, ng = o.gguf if o else None, n.gguf if n else None
        names = sorted((og.chat_templates.keys() if og else set()) | (ng.chat_templates.keys() if ng else set()))
        for name in names:
            if (og.chat_templates.get(name) if og else None) == (ng.chat_templates.get(name) if ng else None):
                continue
            out.append(_template_change(path, name, og, ng, rendered < MAX_RENDERED_TEMPLATES))
            rendered += 1
        if og is not None and ng is not None:
            for change in (tokenizer_change(path, og, ng), config_change(path, og, ng), quant_change(path, og, ng)):
                if change is not None:
                    out.append(change)
    return out
