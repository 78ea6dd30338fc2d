"""deploy/: the files parse, agree with each other and with the application (config keys that
load, probe paths that answer, a non-root user, the secrets the Deployment reads)."""

from __future__ import annotations

import configparser
from pathlib import Path
from typing import Any

import yaml
from fastapi.testclient import TestClient

from storage import open_store
from tests.corpus import REPO_ROOT
from tracker.api.app import create_app
from tracker.config import load_settings

DEPLOY = REPO_ROOT / "deploy"
ENV = {"HUBWATCH_DATABASE_URL": "postgresql+psycopg://u:p@db:5432/hubwatch", "HF_TOKEN": "hf_x"}


def manifests() -> dict[str, dict[str, Any]]:
    docs: dict[str, dict[str, Any]] = {}
    kustomization = yaml.safe_load((DEPLOY / "kubernetes" / "kustomization.yaml").read_text())
    for name in kustomization["resources"]:
        for doc in yaml.safe_load_all((DEPLOY / "kubernetes" / name).read_text()):
            docs[doc["kind"]] = doc
    return docs


def test_the_image_runs_hubwatch_as_a_user_with_its_own_config() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    lines = [ln.strip() for ln in text.splitlines()]
    user = [ln for ln in lines if ln.startswith("USER ")][-1].split()[1]
    assert user.split(":")[0] not in ("root", "0")
    assert 'ENTRYPOINT ["hubwatch"]' in lines and 'CMD ["run"]' in lines
    assert "EXPOSE 8080" in lines and "/healthz" in text
    assert "COPY deploy/config.toml /etc/hubwatch/config.toml" in lines
    ignored = (DEPLOY / "Dockerfile.dockerignore").read_text()
    assert "!deploy/config.toml" in ignored and "!tracker/**" in ignored
    settings = load_settings(DEPLOY / "config.toml", env=ENV)
    assert (settings.server.host, settings.server.port) == ("0.0.0.0", 8080)
    assert settings.storage.url.startswith("postgresql")  # the environment's URL wins


def test_compose_runs_two_replicas_on_postgres() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    app, db = services["hubwatch"], services["postgres"]
    assert app["deploy"]["replicas"] == 2
    assert app["environment"]["HUBWATCH_DATABASE_URL"].startswith("postgresql+psycopg://")
    assert "@postgres:5432/" in app["environment"]["HUBWATCH_DATABASE_URL"]
    assert app["depends_on"]["postgres"]["condition"] == "service_healthy" and "healthcheck" in db
    assert (DEPLOY / app["build"]["context"] / app["build"]["dockerfile"]).resolve() == (DEPLOY / "Dockerfile")
    mounted = {v.split(":")[1] for v in app["volumes"]}
    assert "/etc/hubwatch/config.toml" in mounted
    assert int(app["stop_grace_period"].rstrip("s")) >= 30


def test_the_systemd_unit_runs_the_daemon_and_stops_it_with_sigterm() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string((DEPLOY / "hubwatch.service").read_text())
    service = unit["Service"]
    assert service["ExecStart"].split()[-1] == "run" and service["ExecStart"].split()[0].endswith("/hubwatch")
    assert service["User"] not in ("root", "0") and service["KillSignal"] == "SIGTERM"
    assert int(service["TimeoutStopSec"]) >= 30 and service["Restart"] == "on-failure"
    assert unit["Install"]["WantedBy"] == "multi-user.target"


def test_kubernetes_manifests_fit_the_application(tmp_path: Path) -> None:
    docs = manifests()
    assert {"Deployment", "Service", "ConfigMap", "Secret", "PodDisruptionBudget"} <= set(docs)
    deployment = docs["Deployment"]["spec"]
    assert deployment["replicas"] >= 2
    pod = deployment["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert pod["terminationGracePeriodSeconds"] >= 30
    (container,) = pod["containers"]
    assert container["args"] == ["run"] and container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["envFrom"][0]["secretRef"]["name"] == docs["Secret"]["metadata"]["name"]
    assert pod["volumes"][0]["configMap"]["name"] == docs["ConfigMap"]["metadata"]["name"]
    secret = docs["Secret"]["stringData"]
    assert {"HUBWATCH_DATABASE_URL", "HF_TOKEN", "HUBWATCH_API_TOKEN", "HUBWATCH_WEBHOOK_SECRET"} <= set(secret)

    config = tmp_path / "config.toml"
    config.write_text(docs["ConfigMap"]["data"]["config.toml"])
    settings = load_settings(config, env={k: str(v) for k, v in secret.items()})
    port = container["ports"][0]["containerPort"]
    assert settings.server.port == port and settings.server.host == "0.0.0.0"
    assert settings.storage.url == secret["HUBWATCH_DATABASE_URL"]
    assert docs["Service"]["spec"]["ports"][0]["targetPort"] == container["ports"][0]["name"]

    store = open_store(f"sqlite:///{tmp_path / 'hw.db'}")
    client = TestClient(create_app(store, settings, scheduler_alive=lambda: True))
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert client.get(container[probe]["httpGet"]["path"]).status_code == 200, probe
    annotations = deployment["template"]["metadata"]["annotations"]
    assert client.get(annotations["prometheus.io/path"]).status_code == 200
    store.close()
