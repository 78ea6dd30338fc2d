"""Audit input: Python sources, parsed with ``ast`` (never imported or run).

Finds the calls that download a model from the Hub, with the repo as a string literal:

- ``<anything>.from_pretrained("org/name", revision=...)`` (transformers, diffusers, peft, ...)
- ``hf_hub_download("org/name", filename, revision=...)``, ``snapshot_download("org/name", ...)``
  (``repo_id=`` too; ``repo_type`` other than ``"model"`` is skipped)
- ``pipeline(..., model="org/name", revision=...)``

A literal hex ``revision`` pins the call; no ``revision``, a branch or tag name, or a value
computed at run time leaves it unpinned: a finding (bandit B615), since what it loads moves.
Local paths and ids that are not ``org/name`` are not Hub references and are skipped.

Imports: stdlib, tracker.audit.pins.
"""

from __future__ import annotations

import ast

from tracker.audit.pins import REPO_ID, Pin, revision_of

_DOWNLOADS = {"hf_hub_download", "snapshot_download"}
RUNTIME = "<computed at run time>"


def python_pins(tree: ast.AST, source: str) -> list[Pin]:
    """The Hub model references of a parsed module, in source order."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            pin = _pin_of_call(node, source)
            if pin is not None:
                out.append(pin)
    return sorted(out, key=lambda p: (p.line or 0, p.repo))


def _pin_of_call(call: ast.Call, source: str) -> Pin | None:
    name = _callee(call.func)
    kwargs = {k.arg: k.value for k in call.keywords if k.arg}
    if name == "from_pretrained":
        repo_node = call.args[0] if call.args else kwargs.get("pretrained_model_name_or_path")
    elif name in _DOWNLOADS:
        repo_node = call.args[0] if call.args else kwargs.get("repo_id")
        repo_type = _literal(kwargs.get("repo_type"))
        if "repo_type" in kwargs and repo_type not in ("model", None):
            return None
    elif name == "pipeline":
        repo_node = kwargs.get("model")
    else:
        return None
    repo = _literal(repo_node)
    if repo is None or not REPO_ID.match(repo):
        return None
    if "revision" not in kwargs:
        return Pin(repo, None, source, "python", call.lineno)
    node = kwargs["revision"]
    if isinstance(node, ast.Constant) and node.value is None:
        return Pin(repo, None, source, "python", call.lineno)
    value = _literal(node)
    if value is None:
        return Pin(repo, None, source, "python", call.lineno, RUNTIME)
    revision, ref = revision_of(value)
    return Pin(repo, revision, source, "python", call.lineno, ref)


def _callee(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _literal(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None
