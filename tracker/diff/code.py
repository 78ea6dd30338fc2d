"""Custom code changes: unified diffs of ``*.py`` and whether ``auto_map`` loads them.

Layer 1 (stage 4, diff), pure. With ``trust_remote_code=True`` transformers imports the
modules that ``auto_map`` (config.json, tokenizer_config.json) and ``custom_pipelines`` name,
plus whatever those import relatively (``from .x import y``, the same rule transformers'
``get_relative_imports`` uses). A file in that closure runs at load time; one outside it is
reported too, but as code nothing loads by itself.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from tracker.diff import topics as t
from tracker.diff.sides import Sides
from tracker.diff.textdiff import unified
from tracker.model import Artifacts, Change, ChangeKind

_REL_IMPORT = re.compile(r"^\s*import\s+\.(\S+)\s*$", re.MULTILINE)
_REL_FROM = re.compile(r"^\s*from\s+\.(\S+)\s+import", re.MULTILINE)


def _refs(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [v for v in items if isinstance(v, str)]


def auto_map_entries(arts: Artifacts) -> list[tuple[str, str]]:
    """(where, reference) for every class reference: ``("config.json auto_map.AutoModel", "modeling_x.M")``."""
    out: list[tuple[str, str]] = []
    for name, doc in (
        ("config.json", arts.config),
        ("tokenizer_config.json", arts.tokenizer_config),
    ):
        if not isinstance(doc, dict):
            continue
        am = doc.get("auto_map")
        if isinstance(am, dict):
            for key, value in am.items():
                out.extend((f"{name} auto_map.{key}", r) for r in _refs(value))
        elif isinstance(am, list):  # old tokenizer configs: a bare [slow, fast] pair
            out.extend((f"{name} auto_map", r) for r in _refs(am))
        pipes = doc.get("custom_pipelines")
        if isinstance(pipes, dict):
            for task, spec in pipes.items():
                if isinstance(spec, dict):
                    out.extend(
                        (f"{name} custom_pipelines.{task}", r) for r in _refs(spec.get("impl"))
                    )
    return out


def module_file(reference: str) -> str | None:
    """``modeling_x.Model`` -> ``modeling_x.py``; None for another repo's code (``org/repo--mod.C``)."""
    if "--" in reference:
        return None
    module = reference.rpartition(".")[0]
    return module.replace(".", "/") + ".py" if module else None


def loaded_code(arts: Artifacts) -> dict[str, list[str]]:
    """Code files transformers would import for this revision -> why (the auto_map entries)."""
    files = {f.path for f in arts.files}
    why: dict[str, list[str]] = {}
    queue: list[str] = []
    for where, ref in auto_map_entries(arts):
        path = module_file(ref)
        if path is not None and path in files:
            if path not in why:
                queue.append(path)
            why.setdefault(path, []).append(where)
    while queue:
        path = queue.pop()
        text = arts.code.get(path, "")
        folder = posixpath.dirname(path)
        for mod in _REL_IMPORT.findall(text) + _REL_FROM.findall(text):
            base = posixpath.join(folder, mod.replace(".", "/"))
            for cand in (base + ".py", base + "/__init__.py"):
                if cand in files and cand not in why:
                    why[cand] = [f"imported by {path}"]
                    queue.append(cand)
    return {p: sorted(set(w)) for p, w in why.items()}


def diff_code(sides: Sides, *, text_diffs: bool = True) -> list[Change]:
    """One change per added, removed or edited ``*.py`` file; ``text_diffs=False``: without
    the unified diff (``detail["diff"]`` None, ``detail["not_diffed"]`` says why)."""
    old_loaded, new_loaded = loaded_code(sides.base), loaded_code(sides.head)
    out: list[Change] = []
    for path, op in sides.changed_paths().items():
        if not path.endswith(".py"):
            continue
        if op == "added":
            why = new_loaded.get(path, [])
        elif op == "removed":
            why = old_loaded.get(path, [])
        else:
            why = sorted(set(new_loaded.get(path, [])) | set(old_loaded.get(path, [])))
        if why:
            topic = t.by_op(
                op, t.CODE_AUTO_MAP_ADDED, t.CODE_AUTO_MAP_CHANGED, t.CODE_AUTO_MAP_REMOVED
            )
        else:
            topic = t.by_op(op, t.CODE_ADDED, t.CODE_CHANGED, t.CODE_REMOVED)
        old_text = sides.base.code.get(path) if op != "added" else ""
        new_text = sides.head.code.get(path) if op != "removed" else ""
        detail: dict[str, Any] = {"op": op, "loaded_by": why}
        stats = ""
        if not text_diffs:
            detail["diff"] = None
            detail["not_diffed"] = "reduced analysis: the revision ran over its analysis budget"
        elif old_text is not None and new_text is not None:
            detail["diff"] = unified(old_text, new_text, path, path)
            stats = f" (+{detail['diff']['added']}/-{detail['diff']['removed']} lines)"
        else:
            detail["diff"] = None
            detail["unreadable"] = {
                s: sides.issue(s, path) or "not read"
                for s, txt in (("base", old_text), ("head", new_text))
                if txt is None
            }
        load = f", loaded by {why[0]}" if why else ", not referenced by auto_map"
        verb = {"changed": "changed"}.get(op, op)
        out.append(
            Change(
                ChangeKind.CODE,
                path,
                f"custom code {verb}: {path}{stats}{load}",
                (topic,),
                detail=detail,
            )
        )
    return out
