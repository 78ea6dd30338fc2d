"""SBOMs written by the real libraries (cyclonedx-python-lib, spdx-tools), as tools write them."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from cyclonedx.model.bom import Bom
from cyclonedx.model.component import Component, ComponentType
from cyclonedx.output import make_outputter
from cyclonedx.schema import OutputFormat, SchemaVersion
from packageurl import PackageURL
from spdx_tools.spdx.model import (
    Actor,
    ActorType,
    CreationInfo,
    Document,
    ExternalPackageRef,
    ExternalPackageRefCategory,
    Package,
    Relationship,
    RelationshipType,
    SpdxNoAssertion,
)
from spdx_tools.spdx.writer.json.json_writer import write_document_to_file

VERSIONS = {"1.4": SchemaVersion.V1_4, "1.5": SchemaVersion.V1_5, "1.6": SchemaVersion.V1_6}


def hf_purl(repo: str, revision: str | None) -> PackageURL:
    org, name = repo.split("/")
    return PackageURL(type="huggingface", namespace=org, name=name, version=revision)


def cyclonedx_bom(path: Path, models: list[tuple[str, str | None]], *, spec: str = "1.6") -> Path:
    """A CycloneDX JSON SBOM with an application, a PyPI library and the models (one nested)."""
    kind = ComponentType.LIBRARY if spec == "1.4" else ComponentType.MACHINE_LEARNING_MODEL
    bom = Bom()
    app = Component(name="my-app", type=ComponentType.APPLICATION, version="1.0", bom_ref="app")
    bom.components.add(app)
    bom.components.add(Component(name="transformers", version="4.44.0", type=ComponentType.LIBRARY,
                                 purl=PackageURL(type="pypi", name="transformers", version="4.44.0")))
    for i, (repo, revision) in enumerate(models):
        model = Component(name=repo.split("/")[1], group=repo.split("/")[0], version=revision, type=kind,
                          purl=hf_purl(repo, revision), bom_ref=f"model-{i}")
        if i == len(models) - 1 and i > 0:
            app.components.add(model)  # nested: tools put models under the application too
        else:
            bom.components.add(model)
    text = make_outputter(bom, OutputFormat.JSON, VERSIONS[spec]).output_as_string(indent=2)
    path.write_text(text, encoding="utf-8")
    return path


def spdx_bom(path: Path, models: list[tuple[str, str | None]]) -> Path:
    """An SPDX 2.3 JSON document with one package per model, each with a purl external ref."""
    info = CreationInfo("SPDX-2.3", "SPDXRef-DOCUMENT", "my-app", "https://example.com/spdx/my-app-1",
                        [Actor(ActorType.TOOL, "spdx-tools-test")], datetime(2026, 11, 30, tzinfo=UTC))
    packages = [Package("SPDXRef-app", "my-app", SpdxNoAssertion(), version="1.0")]
    for i, (repo, revision) in enumerate(models):
        ref = ExternalPackageRef(ExternalPackageRefCategory.PACKAGE_MANAGER, "purl", hf_purl(repo, revision).to_string())
        packages.append(Package(f"SPDXRef-model-{i}", repo, SpdxNoAssertion(), version=revision,
                                files_analyzed=False, external_references=[ref]))
    rels = [Relationship("SPDXRef-DOCUMENT", RelationshipType.DESCRIBES, "SPDXRef-app")]
    rels += [Relationship("SPDXRef-app", RelationshipType.DEPENDS_ON, p.spdx_id) for p in packages[1:]]
    write_document_to_file(Document(info, packages=packages, relationships=rels), str(path))
    return path
