"""Layer 0: the project's exception tree. Adapters translate foreign errors into these."""

from __future__ import annotations


class HubwatchError(Exception):
    """Base of every error hubwatch raises on purpose."""


class ConfigError(HubwatchError):
    """The configuration file or environment is invalid."""


class UsageError(HubwatchError):
    """The user asked for something that cannot be done as asked (exit code 2)."""


class NotTrackedError(HubwatchError):
    """A command named a repo that is not tracked."""


class AlreadyTracked(HubwatchError):
    """A repo id is tracked from another source; re-pointing it needs an explicit replace."""

    def __init__(self, repo_id: str, existing: str, wanted: str):
        super().__init__(
            f"{repo_id} is already tracked from {existing}; not reading {wanted} into it "
            "(--replace re-points it, marking what the new source lacks unreachable)"
        )
        self.repo_id, self.existing, self.wanted = repo_id, existing, wanted


class RevisionUnknownError(HubwatchError):
    """A command named a revision that is not stored."""


class SourceError(HubwatchError):
    """Base of errors raised while reading a repository (git or Hub)."""

    kind = "source"

    def __init__(self, message: str, *, repo_id: str | None = None, revision: str | None = None):
        super().__init__(message)
        self.repo_id = repo_id
        self.revision = revision


class RepoNotFound(SourceError):
    """The repo does not exist, was deleted, or is private to us."""

    kind = "not_found"


class GatedRepo(SourceError):
    """The repo is gated and our token has no access."""

    kind = "gated"


class RevisionNotFound(SourceError):
    """The branch, tag or commit does not exist in the repo."""

    kind = "revision_not_found"


class EntryNotFound(SourceError):
    """A file does not exist at that revision."""

    kind = "entry_not_found"


class ObjectNotHeld(EntryNotFound):
    """The source lists the file but does not hold its bytes at all (a git clone with only the
    LFS pointer, or an object that does not match it): asking again cannot help."""


class ReadIncomplete(SourceError):
    """A revision could not be read completely (a transient failure outlasted the retries): it
    stays pending, the repo's head does not move past it, and a later poll reads it again."""

    kind = "incomplete"


class RateLimited(SourceError):
    """The source asked us to slow down; retry_after is in seconds when it said so."""

    kind = "rate_limited"

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        repo_id: str | None = None,
        revision: str | None = None,
    ):
        super().__init__(message, repo_id=repo_id, revision=revision)
        self.retry_after = retry_after


class SourceRefused(SourceError):
    """A fetch hubwatch will not make: the source's address is not allowed (now)."""

    kind = "refused"


class SourceUnavailable(SourceError):
    """Transient failure: 5xx, timeout, connection reset, truncated body."""

    kind = "unavailable"


class TooLarge(SourceError):
    """A file or header is bigger than the configured cap; it was not read."""

    kind = "too_large"


class InvalidContent(HubwatchError):
    """Repo content could not be parsed (bad JSON, bad safetensors header, ...)."""
