"""Collect a revision's chat templates by name, from every file transformers reads them from.

Layer 1 (stage 3, extract), pure. A template can live in tokenizer_config.json (a string, or
a list of ``{"name", "template"}``), in chat_template.json (``{"chat_template": ...}``, what
processors save), in chat_template.jinja and in ``additional_chat_templates/<name>.jinja``.
Later sources win for the same name, as in transformers: tokenizer_config.json, then
chat_template.json, then the .jinja files. A single template is named ``default``.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tracker.errors import InvalidContent
from tracker.extract import paths
from tracker.extract.jsonsafe import decode_utf8
from tracker.model import ParseIssue

DEFAULT = "default"
MAX_TEMPLATES = 64


@dataclass
class TemplateSet:
    """Templates found so far, where each came from, and what could not be used."""

    templates: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    issues: list[ParseIssue] = field(default_factory=list)

    def add(self, name: str, text: str, source: str) -> None:
        if name not in self.templates and len(self.templates) >= MAX_TEMPLATES:
            self.issues.append(ParseIssue(source, f"more than {MAX_TEMPLATES} chat templates"))
            return
        self.templates[name] = text
        self.sources[name] = source


def parse_template_value(value: Any) -> dict[str, str]:
    """A ``chat_template`` value (string, list of {name, template}, or name -> template)."""
    if isinstance(value, str):
        return {DEFAULT: value}
    items: list[tuple[Any, Any]]
    if isinstance(value, list):
        items = []
        for entry in value:
            if not isinstance(entry, dict):
                raise InvalidContent("chat_template list entry is not an object")
            items.append((entry.get("name"), entry.get("template")))
    elif isinstance(value, dict):
        items = list(value.items())
    else:
        raise InvalidContent(f"chat_template is a {type(value).__name__}, not a string or list")
    out: dict[str, str] = {}
    for name, text in items:
        if not isinstance(name, str) or not name or not isinstance(text, str):
            raise InvalidContent("chat_template entry needs a non-empty name and a template string")
        out[name] = text
    return out


def take_from_tokenizer_config(doc: Any, found: TemplateSet) -> Any:
    """Move ``chat_template`` out of a parsed tokenizer_config.json; returns the rest."""
    if not isinstance(doc, dict) or "chat_template" not in doc:
        return doc
    rest = {k: v for k, v in doc.items() if k != "chat_template"}
    try:
        for name, text in parse_template_value(doc["chat_template"]).items():
            found.add(name, text, paths.TOKENIZER_CONFIG)
    except InvalidContent as e:
        found.issues.append(ParseIssue(paths.TOKENIZER_CONFIG, str(e)))
    return rest


def take_from_json_file(doc: Any, found: TemplateSet) -> None:
    """chat_template.json: ``{"chat_template": <value>}``."""
    if not isinstance(doc, dict) or "chat_template" not in doc:
        found.issues.append(ParseIssue(paths.CHAT_TEMPLATE_JSON, "no chat_template key"))
        return
    try:
        for name, text in parse_template_value(doc["chat_template"]).items():
            found.add(name, text, paths.CHAT_TEMPLATE_JSON)
    except InvalidContent as e:
        found.issues.append(ParseIssue(paths.CHAT_TEMPLATE_JSON, str(e)))


def take_jinja_files(contents: Mapping[str, bytes], found: TemplateSet) -> None:
    """chat_template.jinja (``default``) and ``additional_chat_templates/<name>.jinja``."""
    jinja = [p for p in contents if paths.is_additional_template(p)]
    jinja.sort()
    if paths.CHAT_TEMPLATE_JINJA in contents:
        jinja.insert(0, paths.CHAT_TEMPLATE_JINJA)
    for path in jinja:
        if path == paths.CHAT_TEMPLATE_JINJA:
            name = DEFAULT
        else:
            name = posixpath.basename(path)[: -len(".jinja")]
        try:
            found.add(name, decode_utf8(contents[path], "chat template"), path)
        except InvalidContent as e:
            found.issues.append(ParseIssue(path, str(e)))
