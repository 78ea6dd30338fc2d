"""Audit inputs: CycloneDX (1.4-1.6) and SPDX 2.3 JSON SBOMs, read as the tools write them.

CycloneDX: every component (nested ones, and ``metadata.component``, too) whose ``purl`` is
a ``pkg:huggingface`` purl, whatever its ``type`` (``machine-learning-model`` is usual). SPDX: every package whose
``externalRefs`` hold such a purl (``referenceType: purl``, category ``PACKAGE-MANAGER`` or
``PACKAGE_MANAGER``). The line of each pin is the line where its purl first appears after the
previous one, so a report can point into the file.

Imports: stdlib, tracker.audit.pins.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tracker.audit.pins import Pin, line_of, pin_from_purl


def is_cyclonedx(doc: Any) -> bool:
    return isinstance(doc, Mapping) and doc.get("bomFormat") == "CycloneDX"


def is_spdx(doc: Any) -> bool:
    return isinstance(doc, Mapping) and str(doc.get("spdxVersion", "")).startswith("SPDX-")


def cyclonedx_pins(doc: Mapping[str, Any], text: str, source: str) -> list[Pin]:
    """The huggingface pins of a CycloneDX document (an ML-BOM's own model in
    ``metadata.component`` too)."""
    metadata = doc.get("metadata")
    subject = metadata.get("component") if isinstance(metadata, Mapping) else None

    def purls() -> Iterator[str]:
        yield from _cyclonedx_purls([subject] if isinstance(subject, Mapping) else None)
        yield from _cyclonedx_purls(doc.get("components"))

    return _located(purls(), text, source, "cyclonedx")


def spdx_pins(doc: Mapping[str, Any], text: str, source: str) -> list[Pin]:
    """The huggingface pins of an SPDX 2.x JSON document."""

    def purls() -> Iterator[str]:
        for package in doc.get("packages") or []:
            if not isinstance(package, Mapping):
                continue
            for ref in package.get("externalRefs") or []:
                if isinstance(ref, Mapping) and str(ref.get("referenceType", "")).lower() == "purl":
                    yield str(ref.get("referenceLocator", ""))

    return _located(purls(), text, source, "spdx")


def _cyclonedx_purls(components: Any, depth: int = 0) -> Iterator[str]:
    if not isinstance(components, list) or depth > 32:
        return
    for component in components:
        if not isinstance(component, Mapping):
            continue
        if isinstance(component.get("purl"), str):
            yield component["purl"]
        yield from _cyclonedx_purls(component.get("components"), depth + 1)


def _located(purls: Iterator[str], text: str, source: str, kind: str) -> list[Pin]:
    out: list[Pin] = []
    offset = 0
    for purl in purls:
        if not purl.lower().startswith("pkg:huggingface/"):
            continue
        # the purl as the file spells it (JSON may escape '/'); fall back to no line
        line, offset = line_of(text, purl, offset)
        if line is None:  # written before the previous one (metadata after components)
            line, _ = line_of(text, purl)
        pin = pin_from_purl(purl, source=source, kind=kind, line=line)
        if pin is not None:
            out.append(pin)
    return out
