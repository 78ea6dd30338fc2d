"""Settings: the shipped config.toml loads, environment overrides win, tokens stay secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.corpus import REPO_ROOT
from tracker.config import load_settings
from tracker.errors import ConfigError


def test_shipped_config_loads_with_documented_defaults() -> None:
    s = load_settings(REPO_ROOT / "config.toml", env={})
    assert s.storage.url == "sqlite:///hubwatch.db"
    assert s.hub.endpoint == "https://huggingface.co"
    assert s.schedule.interval_seconds == 900 and s.schedule.concurrency == 8
    assert s.advisories.id_prefix == "x_HUBWATCH"
    assert [r.id for r in s.repos] == ["distilbert/distilbert-base-uncased"]


def test_environment_overrides() -> None:
    env = {
        "HUBWATCH_DATABASE_URL": "postgresql+psycopg://u@h/db",
        "HF_ENDPOINT": "http://127.0.0.1:9999/",
        "HF_TOKEN": "hf_secret_token",
        "HUBWATCH_API_TOKEN": "api-secret",
        "HUBWATCH_SCHEDULE_INTERVAL_SECONDS": "60",
        "HUBWATCH_SCHEDULE_FIREHOSE": "true",
    }
    s = load_settings(REPO_ROOT / "config.toml", env=env)
    assert s.storage.url == "postgresql+psycopg://u@h/db"
    assert s.hub.endpoint == "http://127.0.0.1:9999"
    assert s.schedule.interval_seconds == 60 and s.schedule.firehose is True
    assert s.hub.token == "hf_secret_token" and s.server.api_token == "api-secret"
    assert "hf_secret_token" not in repr(s) and "api-secret" not in repr(s)


def test_tokens_are_refused_in_the_file(tmp_path: Path) -> None:
    p = tmp_path / "c.toml"
    p.write_text('[hub]\ntoken = "hf_x"\n')
    with pytest.raises(ConfigError):
        load_settings(p, env={})


def test_unknown_keys_and_bad_values_are_errors(tmp_path: Path) -> None:
    p = tmp_path / "c.toml"
    p.write_text("[schedule]\ninterval_secs = 5\n")
    with pytest.raises(ConfigError, match="unknown key"):
        load_settings(p, env={})
    p.write_text('[schedule]\ninterval_seconds = "soon"\n')
    with pytest.raises(ConfigError):
        load_settings(p, env={})
