"""deploy/: the files parse, agree with each other and with the application (config keys that
load, probe paths that answer, a non-root user, the secrets the Deployment reads)."""

from __future__ import annotations

import configparser
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from storage import open_store
from tests.api.data import serve_app
from tests.corpus import REPO_ROOT
from tracker.api.app import create_app
from tracker.cli.healthcheck import main as healthcheck
from tracker.config import PLACEHOLDERS, load_settings
from tracker.errors import ConfigError

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
    with pytest.raises(ConfigError, match="placeholder"):  # as shipped: refuses until edited
        load_settings(config, env={k: str(v) for k, v in secret.items()})
    assert secret["HUBWATCH_API_TOKEN"] == secret["HUBWATCH_WEBHOOK_SECRET"] == ""  # nothing guessable
    secret = {**secret, "HUBWATCH_DATABASE_URL": secret["HUBWATCH_DATABASE_URL"].replace("change-me", "s3cr3t-pw")}
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


def test_known_default_secrets_refuse_to_start() -> None:
    """Issue 15 point 8: a deployment that kept a placeholder does not run with it."""
    for var in ("HUBWATCH_API_TOKEN", "HUBWATCH_WEBHOOK_SECRET"):
        for value in ("change-me", "CHANGE-ME", " changeme "):
            with pytest.raises(ConfigError, match=f"{var} is the placeholder"):
                load_settings(DEPLOY / "config.toml", env={**ENV, var: value})
    with pytest.raises(ConfigError, match="password is the placeholder"):
        load_settings(DEPLOY / "config.toml", env={**ENV, "HUBWATCH_DATABASE_URL": "postgresql://u:change-me@db/x"})
    assert "change-me" in PLACEHOLDERS
    ok = load_settings(DEPLOY / "config.toml", env={**ENV, "HUBWATCH_API_TOKEN": "Zq9-long-random-token"})
    assert ok.server.api_token == "Zq9-long-random-token"
    text = (DEPLOY / "compose.yaml").read_text()
    services = yaml.safe_load(text)["services"]
    values = [str(v) for svc in services.values() for v in (svc.get("environment") or {}).values()]
    assert values and not any("change-me" in v or ":-hubwatch}" in v for v in values)  # no default password
    assert "${POSTGRES_PASSWORD:?" in services["postgres"]["environment"]["POSTGRES_PASSWORD"]
    assert "Compose v2" in text


def test_the_healthcheck_asks_the_configured_port(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    check = " ".join(text[text.index("\nHEALTHCHECK"):].splitlines()[1:3])
    assert "8080" not in check and "tracker.cli.healthcheck" in check
    store = open_store(f"sqlite:///{tmp_path / 'hw.db'}")
    monkeypatch.setenv("HUBWATCH_CONFIG", str(DEPLOY / "config.toml"))
    monkeypatch.setenv("HUBWATCH_DATABASE_URL", f"sqlite:///{tmp_path / 'hw.db'}")
    for var in ("HUBWATCH_API_TOKEN", "HUBWATCH_WEBHOOK_SECRET"):
        monkeypatch.delenv(var, raising=False)
    with serve_app(create_app(store, load_settings(DEPLOY / "config.toml", env=ENV))) as url:
        port = url.rsplit(":", 1)[1]
        monkeypatch.setenv("HUBWATCH_SERVER_PORT", port)
        assert healthcheck([]) == 0
    assert healthcheck([]) == 1  # nothing listens there any more
    store.close()


def test_the_systemd_unit_is_hardened() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string((DEPLOY / "hubwatch.service").read_text())
    service = unit["Service"]
    for key, value in {"CapabilityBoundingSet": "", "ProtectClock": "yes", "ProtectKernelLogs": "yes",
                       "RestrictSUIDSGID": "yes", "UMask": "0077", "NoNewPrivileges": "yes"}.items():
        assert service[key] == value, key
    assert "@system-service" in (DEPLOY / "hubwatch.service").read_text()
    if shutil.which("systemd-analyze"):
        done = subprocess.run(["systemd-analyze", "security", "--offline=yes", str(DEPLOY / "hubwatch.service")],
                              capture_output=True, text=True, timeout=60)
        level = float(done.stdout.rsplit("Overall exposure level for hubwatch.service:", 1)[1].split()[0])
        assert level <= 2.0, done.stdout[-500:]
