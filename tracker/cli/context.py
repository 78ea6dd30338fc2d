"""What every command needs: the settings, the store, and how to open a repo's source."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from storage import Store, open_store
from storage.records import RepoRecord
from tracker.api.compute import cost_assumptions
from tracker.config import Settings, load_settings
from tracker.errors import NotTrackedError
from tracker.hub.connections import HubConnections
from tracker.pipeline import PipelineOptions
from tracker.pipeline.advise_step import AdviseStep
from tracker.pipeline.analysis import AnalysisBudget, shared_pool
from tracker.pipeline.plan_step import PlanStep
from tracker.pipeline.repair import RepairPolicy
from tracker.pipeline.sources import SourceFactory, is_git_location
from tracker.snapshot import SnapshotLimits


@dataclass
class Context:
    args: argparse.Namespace
    settings: Settings = field(init=False)

    def __post_init__(self) -> None:
        self.settings = load_settings(self.args.config)

    @cached_property
    def store(self) -> Store:
        return open_store(self.settings.storage.url)

    @cached_property
    def sources(self) -> SourceFactory:
        hub = self.settings.hub
        # a connection for each of the daemon's checks, none waiting for one
        pool = HubConnections(max_connections=max(10, self.settings.schedule.concurrency))
        return SourceFactory(endpoint=hub.endpoint, token=hub.token, timeout=hub.timeout_seconds,
                             allow_private=self.settings.webhooks.allow_private_destinations, connections=pool)

    @cached_property
    def pipeline_options(self) -> PipelineOptions:
        return pipeline_options(self.settings)

    @property
    def json(self) -> bool:
        return bool(getattr(self.args, "json", False))

    def resolve_repo(self, source: str) -> RepoRecord:
        """A tracked repo by id (a former id of a renamed repo too), or by the git location it
        was tracked from."""
        from storage.renames import canonical_id

        repo = self.store.get_repo(source) or self.store.get_repo(canonical_id(self.store, source))
        if repo is not None:
            return repo
        if is_git_location(source):
            from tracker.hub.localgit import default_repo_id

            for r in self.store.list_repos(include_inactive=True):
                if r.source == source or r.source.rstrip("/") == _abspath(source):
                    return r
            try:
                repo = self.store.get_repo(default_repo_id(source))
            except ValueError:
                repo = None
            if repo is not None:
                return repo
        raise NotTrackedError(f"not tracked: {source}")

    def sync_config_repos(self) -> int:
        """Track the repos listed in config.toml; returns how many were added.

        Idempotent, and safe when several daemons start at once (``add_repo`` lets one win); a
        repo someone untracked stays untracked. ``repos``, ``poll`` and ``untrack`` call it
        too, so the file's repos are there before any daemon ran.
        """
        added = 0
        for entry in self.settings.repos:
            if self.store.get_repo(entry.id) is not None:
                continue
            source = entry.source or entry.id
            kind = "git" if entry.source and is_git_location(entry.source) else "hub"
            _repo, created = self.store.add_repo(entry.id, source=source, source_kind=kind, branch=entry.branch)
            added += created
        return added

    def emit(self, doc: Any) -> None:
        """Print one JSON document on stdout."""
        json.dump(doc, sys.stdout, indent=2, ensure_ascii=False, default=str)
        sys.stdout.write("\n")


def pipeline_options(settings: Settings) -> PipelineOptions:
    lim, sched = settings.limits, settings.schedule
    return PipelineOptions(
        limits=SnapshotLimits(
            max_file_bytes=lim.max_file_bytes, max_tokenizer_bytes=lim.max_tokenizer_bytes,
            max_header_bytes=lim.max_header_bytes, max_files=lim.max_files,
            max_gguf_header_bytes=lim.max_gguf_header_bytes, max_pickle_bytes=lim.max_pickle_bytes,
            max_revision_bytes=lim.max_revision_bytes,
        ),
        max_json_depth=lim.max_json_depth,
        plan=PlanStep(assumptions=cost_assumptions(settings)),
        advise=AdviseStep.from_settings(settings.advisories.id_prefix, settings.advisories.osv_api,
                                        timeout=min(10.0, settings.hub.timeout_seconds),
                                        hub_endpoint=settings.hub.endpoint),
        analysis=shared_pool(AnalysisBudget(seconds=lim.analysis_seconds,
                                            memory_bytes=lim.analysis_memory_mb * 2**20)),
        repair=RepairPolicy(first_delay_seconds=float(sched.repair_backoff_seconds),
                            max_delay_seconds=float(sched.repair_max_backoff_seconds),
                            give_up_after_seconds=sched.repair_give_up_hours * 3600.0),
    )


def _abspath(source: str) -> str:
    from pathlib import Path

    p = Path(source).expanduser()
    return str(p.resolve()) if p.exists() else source
