"""Audit: a Hub repo that is not tracked is read once, into a scratch store, not tracked.

``hubwatch audit`` must not need ``track`` first: for a repo the store lacks, the pipeline
reads its whole history once (as ``track`` would) into one SQLite database in a temporary
directory that lives as long as the audit. The user's store is never written. A repo the
Hub does not have, will not show us, or cannot be read from right now is reported unknown
with the reason (never "clean"), and ``--fail-on unknown`` fails on it.

Imports: stdlib, storage, tracker.errors, tracker.pipeline.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from storage.store import Store, open_store
from tracker.errors import GatedRepo, RepoNotFound, RevisionNotFound, SourceError
from tracker.pipeline import PipelineOptions, check_repo
from tracker.pipeline.sources import SourceFactory


class ScratchReader:
    """Callable ``repo_id -> (store or None, why)``; :meth:`close` drops the scratch store."""

    def __init__(self, sources: SourceFactory, options: PipelineOptions) -> None:
        self.sources = sources
        # related PyPI advisories change no audit answer: skip the OSV look-ups
        self.options = replace(options, advise=replace(options.advise, osv=None))
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._store: Store | None = None

    def __call__(self, repo_id: str) -> tuple[Store | None, str | None]:
        store = self._scratch()
        repo, _ = store.add_repo(repo_id, source=repo_id, source_kind="hub")
        src = self.sources.open(repo_id, repo_id, "hub")
        try:
            check_repo(store, src, repo, self.options)
        except (RepoNotFound, RevisionNotFound) as e:
            return None, f"not tracked, and not on the Hub ({e})"
        except GatedRepo as e:
            return None, f"not tracked, and gated on the Hub ({e})"
        except SourceError as e:  # unreachable, rate limited, 5xx: unknown, with the reason
            return None, f"not tracked, and the Hub could not be read ({e})"
        finally:
            src.close()
        return store, None

    def _scratch(self) -> Store:
        if self._store is None:
            self._dir = tempfile.TemporaryDirectory(prefix="hubwatch-audit-")
            self._store = open_store(f"sqlite:///{Path(self._dir.name) / 'scratch.db'}")
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
        if self._dir is not None:
            self._dir.cleanup()
