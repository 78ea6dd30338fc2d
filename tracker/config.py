"""Settings: config.toml, then environment overrides, loaded once by an entry point.

Nothing below the entry points reads the environment; everything gets a ``Settings`` (or the
values it needs) as arguments. Tokens come only from the environment and are redacted from
``repr``.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from tracker.errors import ConfigError

DEFAULT_CONFIG_NAME = "config.toml"


@dataclass(frozen=True, slots=True)
class StorageSettings:
    url: str = "sqlite:///hubwatch.db"


@dataclass(frozen=True, slots=True)
class HubSettings:
    endpoint: str = "https://huggingface.co"
    timeout_seconds: float = 30.0
    requests_per_5min: int = 1000
    token: str | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class ScheduleSettings:
    interval_seconds: int = 900
    jitter_seconds: int = 60
    concurrency: int = 8
    lease_seconds: int = 120
    firehose: bool = False
    max_backoff_seconds: int = 21600
    # a revision recorded with files the source kept failing to serve is read again (issue 10):
    # first at the repo's next check, then after this, doubling up to the max, given up past the horizon
    repair_backoff_seconds: int = 900
    repair_max_backoff_seconds: int = 86400
    repair_give_up_hours: float = 168.0


@dataclass(frozen=True, slots=True)
class ServerSettings:
    host: str = "127.0.0.1"
    port: int = 8080
    workers: int = 1  # `serve`'s API processes on one socket (`run` serves from one: its scheduler runs once)
    api_token: str | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class ApiSettings:
    """What the HTTP API accepts from its clients (issue 16)."""

    allow_git_sources: bool = False  # POST /api/v1/repos takes Hub ids only unless true
    public_url: str = ""  # absolute links and redirects use this, never the client's Host
    max_body_bytes: int = 1_048_576  # request bodies past this are refused before they are read


@dataclass(frozen=True, slots=True)
class LimitSettings:
    max_file_bytes: int = 2_000_000
    max_tokenizer_bytes: int = 25_165_824
    max_header_bytes: int = 25_000_000
    max_gguf_header_bytes: int = 33_554_432
    max_pickle_bytes: int = 16_777_216
    max_json_depth: int = 32
    max_files: int = 100_000
    max_revision_bytes: int = 67_108_864  # bytes read for one revision across all its files
    analysis_seconds: float = 60.0  # wall clock for one revision's extract, diff, renders and plan; 0: no worker
    analysis_memory_mb: int = 2048  # address space of the worker that analyses it


@dataclass(frozen=True, slots=True)
class WebhookSettings:
    allow_private_destinations: bool = False
    max_attempts: int = 8  # the Standard Webhooks schedule: 8 attempts over ~27 h
    disable_after_days: float = 5.0  # failing without a success this long disables a subscription
    timeout_seconds: float = 15.0  # one delivery, connect to status line, wall clock
    secret_rotation_hours: float = 24.0  # the old secret still signs this long after a rotation
    retention_days: float = 7.0  # delivered outbox rows are pruned after this


@dataclass(frozen=True, slots=True)
class HookSettings:
    secret: str = field(default="", repr=False)
    allow_query_secret: bool = False  # accept ?secret= besides the X-Webhook-Secret header


@dataclass(frozen=True, slots=True)
class AdvisorySettings:
    id_prefix: str = "x_HUBWATCH"
    osv_api: str = "https://api.osv.dev"


@dataclass(frozen=True, slots=True)
class PlannerSettings:
    """Cost assumptions; names match tracker.model.plan.CostAssumptions (None: its default)."""

    card_name: str | None = None
    price_per_hour: float | None = None
    peak_flops: float | None = None
    achievable_fraction: float | None = None
    epochs: int | None = None
    batch_size: int | None = None
    samples: int | None = None


@dataclass(frozen=True, slots=True)
class RepoEntry:
    """A repo tracked from the config file."""

    id: str
    source: str | None = None  # a git location; None = the Hub repo of that id
    branch: str = "main"


@dataclass(frozen=True, slots=True)
class Settings:
    storage: StorageSettings = StorageSettings()
    hub: HubSettings = HubSettings()
    schedule: ScheduleSettings = ScheduleSettings()
    server: ServerSettings = ServerSettings()
    api: ApiSettings = ApiSettings()
    limits: LimitSettings = LimitSettings()
    webhooks: WebhookSettings = WebhookSettings()
    hooks: HookSettings = HookSettings()
    advisories: AdvisorySettings = AdvisorySettings()
    planner: PlannerSettings = PlannerSettings()
    repos: tuple[RepoEntry, ...] = ()
    config_path: str | None = None


_SECTIONS: dict[str, type[Any]] = {
    "storage": StorageSettings,
    "hub": HubSettings,
    "schedule": ScheduleSettings,
    "server": ServerSettings,
    "api": ApiSettings,
    "limits": LimitSettings,
    "webhooks": WebhookSettings,
    "hooks": HookSettings,
    "advisories": AdvisorySettings,
    "planner": PlannerSettings,
}
_SECRET_KEYS = {("hub", "token"), ("server", "api_token")}


def _coerce(section: str, key: str, value: Any, target: Any) -> Any:
    """Convert a TOML or environment value to the field's declared type."""
    kind = str(target)
    try:
        if "bool" in kind:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in {"1", "true", "yes", "on"}:
                return True
            if text in {"0", "false", "no", "off", ""}:
                return False
            raise ValueError(value)
        if "int" in kind and "float" not in kind:
            return None if value in ("", None) and "None" in kind else int(value)
        if "float" in kind:
            return None if value in ("", None) and "None" in kind else float(value)
        return None if value is None else str(value)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"[{section}] {key}: invalid value {value!r}") from e


def _section(name: str, raw: Mapping[str, Any], env: Mapping[str, str]) -> Any:
    cls = _SECTIONS[name]
    known = {f.name: f.type for f in fields(cls)}
    unknown = set(raw) - set(known)
    if unknown:
        raise ConfigError(f"[{name}]: unknown key(s) {', '.join(sorted(unknown))}")
    values: dict[str, Any] = {}
    for key, typ in known.items():
        if (name, key) in _SECRET_KEYS and key in raw:
            raise ConfigError(f"[{name}] {key}: tokens belong in the environment, not the file")
        if key in raw:
            values[key] = _coerce(name, key, raw[key], typ)
        env_key = f"HUBWATCH_{name.upper()}_{key.upper()}"
        if env_key in env:
            values[key] = _coerce(name, key, env[env_key], typ)
    return cls(**values)


#: A Hub repo id, as the Hub allows them (huggingface_hub's validate_repo_id, org/name form).
REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
_BRANCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,254}")


def _repos(raw: Any) -> tuple[RepoEntry, ...]:
    """``[[repos]]``, checked when the settings load: every command refuses a bad entry."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError("[[repos]] must be an array of tables")
    out: list[RepoEntry] = []
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise ConfigError("each [[repos]] entry needs an id = 'org/name'")
        rid = item["id"]
        extra = set(item) - {"id", "source", "branch"}
        if extra:
            raise ConfigError(f"[[repos]] {rid!r}: unknown key(s) {', '.join(sorted(extra))}")
        if not REPO_ID.fullmatch(rid) or ".." in rid or rid.endswith(".git"):
            raise ConfigError(f"[[repos]] id {rid!r}: not an org/name repo id")
        branch, source = item.get("branch", "main"), item.get("source")
        if not isinstance(branch, str) or not _BRANCH.fullmatch(branch) or ".." in branch:
            raise ConfigError(f"[[repos]] {rid}: invalid branch {branch!r}")
        if source is not None and (not isinstance(source, str) or not source.strip()):
            raise ConfigError(f"[[repos]] {rid}: source must be a git location or absent")
        if any(e.id == rid for e in out):
            raise ConfigError(f"[[repos]] {rid}: listed twice")
        out.append(RepoEntry(id=rid, source=source, branch=branch))
    return tuple(out)


def load_settings(path: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Read the config file (explicit path, HUBWATCH_CONFIG, ./config.toml, or none) and the environment."""
    env = dict(os.environ if env is None else env)
    chosen = path or env.get("HUBWATCH_CONFIG")
    raw: dict[str, Any] = {}
    if chosen:
        p = Path(chosen)
        if not p.is_file():
            raise ConfigError(f"config file not found: {p}")
    else:
        p = Path(DEFAULT_CONFIG_NAME)
    if p.is_file():
        try:
            raw = tomllib.loads(p.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise ConfigError(f"{p}: {e}") from e
    unknown = set(raw) - set(_SECTIONS) - {"repos"}
    if unknown:
        raise ConfigError(f"{p}: unknown section(s) {', '.join(sorted(unknown))}")
    sections = {name: _section(name, raw.get(name, {}) or {}, env) for name in _SECTIONS}
    s = Settings(**sections, repos=_repos(raw.get("repos")), config_path=str(p) if p.is_file() else None)
    if env.get("HUBWATCH_DATABASE_URL"):
        s = replace(s, storage=replace(s.storage, url=env["HUBWATCH_DATABASE_URL"]))
    if env.get("HF_ENDPOINT"):
        s = replace(s, hub=replace(s.hub, endpoint=env["HF_ENDPOINT"].rstrip("/")))
    token = env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN")
    if token:
        s = replace(s, hub=replace(s.hub, token=token))
    if env.get("HUBWATCH_API_TOKEN"):
        s = replace(s, server=replace(s.server, api_token=env["HUBWATCH_API_TOKEN"]))
    if env.get("HUBWATCH_WEBHOOK_SECRET"):
        s = replace(s, hooks=replace(s.hooks, secret=env["HUBWATCH_WEBHOOK_SECRET"]))
    _validate(s)
    return s


#: Values that ship in examples: a deployment that still carries one refuses to start.
PLACEHOLDERS = frozenset({"change-me", "changeme", "change_me", "replace-me", "replaceme", "secret",
                          "password", "token", "xxx", "todo", "example"})
_GENERATE = "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"


def _placeholder_errors(s: Settings) -> None:
    """Refuse a known default secret (issue 15 point 8) rather than run with it."""
    named = {"HUBWATCH_API_TOKEN": s.server.api_token, "HUBWATCH_WEBHOOK_SECRET": s.hooks.secret}
    for var, value in named.items():
        if value and value.strip().lower() in PLACEHOLDERS:
            raise ConfigError(f"{var} is the placeholder {value.strip()!r}: set a real one ({_GENERATE})")
    password = urlsplit(s.storage.url).password if "://" in s.storage.url else None
    if password and unquote(password).lower() in PLACEHOLDERS:
        raise ConfigError(f"the database URL's password is the placeholder {unquote(password)!r}: set the real one")


def _validate(s: Settings) -> None:
    _placeholder_errors(s)
    if s.schedule.concurrency < 1:
        raise ConfigError("[schedule] concurrency must be at least 1")
    if s.schedule.interval_seconds < 1:
        raise ConfigError("[schedule] interval_seconds must be at least 1")
    if not 1 <= s.server.workers <= 64:
        raise ConfigError("[server] workers must be between 1 and 64")
    if s.hub.timeout_seconds <= 0:
        raise ConfigError("[hub] timeout_seconds must be positive")
    hooks = s.webhooks
    if hooks.max_attempts < 1 or hooks.timeout_seconds <= 0 or hooks.disable_after_days <= 0:
        raise ConfigError("[webhooks] max_attempts, timeout_seconds and disable_after_days must be positive")
    if s.api.public_url and not s.api.public_url.startswith(("http://", "https://")):
        raise ConfigError("[api] public_url must be an http(s) URL")
    if s.api.max_body_bytes < 1024:
        raise ConfigError("[api] max_body_bytes must be at least 1024")
    if not s.advisories.id_prefix.startswith("x_"):
        raise ConfigError("[advisories] id_prefix must start with x_ (OSV's local-database prefix)")
