"""Stage 8 (read): the revision, advisory and compare pages as view objects for people.

Each page is one frozen object built from stored records (never from a re-diff): the
templates lay it out and add nothing. Links are root-relative and ``root_path`` aware.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote

from storage.records import AdvisoryRecord, RepoRecord, RevisionRecord
from tracker.api.change_views import (
    Block,
    ChangeView,
    cut,
    group_changes,
    plan_delta_blocks,
    reasons_of,
    sentence,
)
from tracker.api.markdown import render_markdown
from tracker.api.plan_views import Link, gb, short_count
from tracker.model import Change

HUB = "https://huggingface.co"
SEVERITY_WORDS = {
    "CRITICAL": "Critical: loading this revision can run code nobody has reviewed, or known history vanished.",
    "HIGH": "High: the model's weights, tokens or prompts are not what they were.",
    "MODERATE": "Moderate: how the model is built or generates changed.",
    "LOW": "Low: a default or a setting changed.",
}


class Urls:
    """Root-relative URLs of the pages and routes the pages link to."""

    def __init__(self, root: str):
        self.root = root

    def repo(self, repo_id: str) -> str:
        return f"{self.root}/repos/{quote(repo_id)}"

    def revision(self, repo_id: str, sha: str) -> str:
        return f"{self.repo(repo_id)}/{quote(sha)}"

    def model(self, repo_id: str, sha: str | None = None) -> str:
        return f"{self.revision(repo_id, sha) if sha else self.repo(repo_id)}/plan"

    def compare(self, repo_id: str, base: str, head: str) -> str:
        return f"{self.repo(repo_id)}/compare/{quote(base)}...{quote(head)}"

    def advisory(self, advisory_id: str) -> str:
        return f"{self.root}/advisories/{quote(advisory_id)}"

    def advisory_json(self, advisory_id: str) -> str:
        return f"{self.root}/v1/vulns/{quote(advisory_id)}"

    def feed(self, repo_id: str) -> str:
        return f"{self.root}/feeds/{quote(repo_id)}.atom"

    def badge(self, repo_id: str) -> str:
        return f"{self.api_repo(repo_id)}/badge.json"

    def api_repo(self, repo_id: str) -> str:
        return f"{self.root}/api/v1/repos/{quote(repo_id)}"


def when(ts: datetime | None) -> str:
    return ts.strftime("%Y-%m-%d %H:%M UTC") if ts is not None else "—"


def upstream_commit(repo: RepoRecord, sha: str) -> str | None:
    """The commit's upstream web page, named as the advisories name the repo.

    ``--repo-url`` wins, then a git remote on the web, then the Hub page of the repo id (a
    local mirror of a Hub repo keeps the Hub's commit ids).
    """
    url = repo.repo_url or (repo.source if repo.source.startswith(("https://", "http://")) else f"{HUB}/{repo.id}")
    if not url.startswith(("https://", "http://")):
        return None
    return f"{url.rstrip('/').removesuffix('.git')}/commit/{sha}"


@dataclass(frozen=True, slots=True)
class RevisionChoice:
    sha: str
    label: str


@dataclass(frozen=True, slots=True)
class RevisionPage:
    repo_id: str
    sha: str
    title: str
    message: str
    committed: str
    authors: str
    severity: str | None
    severity_words: str
    headline: str
    changes: tuple[ChangeView, ...]
    quiet: tuple[str, ...]  # changes with no severity, one sentence each
    plan_line: str
    plan_blocks: tuple[Block, ...]
    warnings: tuple[str, ...]
    links: tuple[Link, ...]
    prev_url: str | None
    next_url: str | None
    repo_url: str
    compare_action: str
    choices: tuple[RevisionChoice, ...] = field(default_factory=tuple)


def plan_line(plan: Mapping[str, Any] | None) -> str:
    """One sentence of a plan document: parameters and batch-1 memory."""
    if not isinstance(plan, Mapping):
        return "No plan: no readable config.json up to this revision."
    params, memory = plan.get("params") or {}, plan.get("memory_bytes") or {}
    total = params.get("total") if isinstance(params, Mapping) else None
    if not isinstance(total, int):
        return "The planner could not size this config."
    return (f"{short_count(total)} parameters; a full fine-tune at batch 1 takes {gb(memory.get('full_finetune'))}, "
            f"LoRA r=16 {gb(memory.get('lora'))}, serving {gb(memory.get('serve_weights'))} of bf16 weights.")


def revision_page(u: Urls, repo: RepoRecord, rev: RevisionRecord, *, plan: Mapping[str, Any] | None,
                  advisory_ok: bool, parent_stored: bool, child: str | None,
                  choices: Sequence[RevisionChoice]) -> RevisionPage:
    flagged = [c for c in rev.changes if c.severity is not None]
    quiet_changes = [c for c in rev.changes if c.severity is None and "plan.delta" not in c.topics]
    views = tuple(group_changes(flagged))
    if views:
        top = views[0]
        headline = (f"{len(flagged)} change{'s' if len(flagged) != 1 else ''} that matter"
                    f"{'s' if len(flagged) == 1 else ''}; the most serious: {top.sentence}")
    elif rev.parent is None:
        headline = "The first revision read: the baseline every later change is compared with."
    else:
        headline = "Nothing that decides how the model loads or behaves changed in this revision."
    links: list[Link] = []
    hub = upstream_commit(repo, rev.sha)
    if hub:
        links.append(Link("Upstream commit" if not hub.startswith(HUB) else "Commit on the Hub", hub))
    if advisory_ok and rev.advisory_id:
        links.append(Link(f"Advisory {rev.advisory_id}", u.advisory(rev.advisory_id)))
    links.append(Link("Model page at this revision", u.model(repo.id, rev.sha)))
    links.append(Link("This revision as JSON", f"{u.api_repo(repo.id)}/revisions/{rev.sha}"))
    warnings = []
    if not rev.reachable:
        warnings.append("This commit is no longer on the branch: upstream rewrote its history.")
    if rev.error:
        warnings.append(f"Reading this revision failed: {rev.error}")
    delta = rev.plan_delta if isinstance(rev.plan_delta, Mapping) else None
    blocks = tuple(plan_delta_blocks(delta)) if delta else ()
    line = plan_line(plan)
    if delta and delta.get("summary"):
        line = f"The plan moved: {sentence(str(delta['summary']))} Now: {line}"
    return RevisionPage(
        repo_id=repo.id, sha=rev.sha, title=rev.title,
        message=rev.message.strip() if rev.message.strip() != rev.title.strip() else "",
        committed=when(rev.committed_at), authors=", ".join(rev.authors), severity=rev.severity,
        severity_words=SEVERITY_WORDS.get(rev.severity or "", "No severity: no advisory for this revision."),
        headline=headline, changes=views, quiet=tuple(quiet_sentence(c) for c in quiet_changes),
        plan_line=line, plan_blocks=blocks, warnings=tuple(warnings), links=tuple(links),
        prev_url=u.revision(repo.id, rev.parent) if rev.parent and parent_stored else None,
        next_url=u.revision(repo.id, child) if child else None, repo_url=u.repo(repo.id),
        compare_action=f"{u.repo(repo.id)}/compare",
        choices=tuple(choices),
    )


def choices_of(revs: Sequence[tuple[str, str | None, str]]) -> tuple[RevisionChoice, ...]:
    """The compare picker's options from ``(sha, committed_at in RFC 3339, title)``: short sha,
    date, title."""
    return tuple(RevisionChoice(sha, f"{sha[:12]} · {(committed or '—')[:10]} · {cut(title, 60)}")
                 for sha, committed, title in revs)


def quiet_sentence(c: Change) -> str:
    return f"{c.path}: {sentence(c.summary)}" if c.path and c.path not in c.summary else sentence(c.summary)


# -- advisory ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reference:
    type: str
    url: str


@dataclass(frozen=True, slots=True)
class AdvisoryPage:
    id: str
    summary: str
    severity: str
    severity_words: str
    changes: tuple[tuple[str | None, str, tuple[str, ...]], ...]  # (severity, sentence, reasons)
    withdrawn: str
    repo_id: str
    repo_url: str | None
    purl: str
    branch: str
    introduced: tuple[Link, ...]
    fixed: tuple[Link, ...]
    references: tuple[Reference, ...]
    related: tuple[Link, ...]
    published: str
    modified: str
    details_html: str
    json_url: str
    revision_url: str | None


def _commit_link(u: Urls, repo_id: str, sha: str, stored: set[str], hub_url: str | None) -> Link:
    if sha in stored:
        return Link(sha[:12], u.revision(repo_id, sha))
    return Link(sha[:12], f"{hub_url}/commit/{sha}" if hub_url else "")


def advisory_page(u: Urls, adv: AdvisoryRecord, repo: RepoRecord | None, stored: set[str]) -> AdvisoryPage:
    record = adv.record
    affected = next((a for a in record.get("affected") or [] if isinstance(a, Mapping)), {})
    ds = affected.get("database_specific") if isinstance(affected.get("database_specific"), Mapping) else {}
    rng = next((r for r in affected.get("ranges") or [] if isinstance(r, Mapping) and r.get("type") == "GIT"), {})
    hub_url = str(rng.get("repo")) if str(rng.get("repo", "")).startswith(HUB + "/") else None
    events = [e for e in rng.get("events") or [] if isinstance(e, Mapping)]
    intro = tuple(_commit_link(u, adv.repo_id, str(e["introduced"]), stored, hub_url) for e in events if "introduced" in e)
    fixed = tuple(_commit_link(u, adv.repo_id, str(e["fixed"]), stored, hub_url) for e in events if "fixed" in e)
    refs = tuple(Reference(str(r.get("type", "WEB")), str(r["url"])) for r in record.get("references") or []
                 if isinstance(r, Mapping) and str(r.get("url", "")).startswith(("https://", "http://")))
    related = tuple(Link(str(i), f"https://osv.dev/vulnerability/{quote(str(i))}") for i in record.get("related") or [])
    changes = ((record.get("database_specific") or {}).get("changes") or [])
    listed = []
    for entry in changes[:50]:
        if isinstance(entry, Mapping) and entry.get("severity"):
            change = _entry_change(entry)
            listed.append((str(entry["severity"]), sentence(change.summary), reasons_of(change)))
    return AdvisoryPage(
        id=adv.id, summary=str(record.get("summary", "")), severity=adv.severity,
        severity_words=SEVERITY_WORDS.get(adv.severity, ""), changes=tuple(listed),
        withdrawn=str(record.get("withdrawn") or ""), repo_id=adv.repo_id,
        repo_url=u.repo(adv.repo_id) if repo is not None else None, purl=str(ds.get("purl", "")),
        branch=str(ds.get("branch", "")), introduced=intro, fixed=fixed, references=refs, related=related,
        published=str(record.get("published", "")), modified=str(record.get("modified", "")),
        details_html=render_markdown(str(record.get("details") or "")), json_url=u.advisory_json(adv.id),
        revision_url=u.revision(adv.repo_id, adv.sha) if adv.sha in stored else None,
    )


def _entry_change(entry: Mapping[str, Any]) -> Change:
    """A stored ``database_specific.changes`` entry as a Change (for its rules' reasons)."""
    from tracker.model import ChangeKind

    try:
        kind = ChangeKind(str(entry.get("kind")))
    except ValueError:
        kind = ChangeKind.OTHER
    topics = tuple(str(t) for t in entry.get("topics") or [])
    return Change(kind, str(entry.get("path", "")), str(entry.get("summary", "")), topics)


# -- compare -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompareStep:
    sha: str
    url: str
    title: str
    committed: str
    severity: str | None
    changes: tuple[ChangeView, ...]
    quiet: int


@dataclass(frozen=True, slots=True)
class ComparePage:
    repo_id: str
    base: str
    head: str
    headline: str
    severity: str | None
    steps: tuple[CompareStep, ...]
    note: str
    repo_url: str
    json_url: str
    compare_action: str
    choices: tuple[RevisionChoice, ...]
    base_url: str
    head_url: str


def compare_page(u: Urls, repo: RepoRecord, base: RevisionRecord, head: RevisionRecord,
                 between: Sequence[RevisionRecord], choices: Sequence[RevisionChoice], note: str) -> ComparePage:
    """The stored changes of every revision after ``base`` up to ``head`` (newest first)."""
    from tracker.model import max_severity

    steps = []
    all_flagged: list[Change] = []
    for r in between:
        flagged = [c for c in r.changes if c.severity is not None]
        all_flagged += flagged
        steps.append(CompareStep(r.sha, u.revision(repo.id, r.sha), r.title, when(r.committed_at), r.severity,
                                 tuple(group_changes(flagged)), len(r.changes) - len(flagged)))
    worst = max_severity(c.severity for c in all_flagged)
    n = len(between)
    headline = (f"{n} revision{'s' if n != 1 else ''} from {base.sha[:12]} to {head.sha[:12]}, "
                f"{len(all_flagged)} change{'s' if len(all_flagged) != 1 else ''} that matter"
                + (f"; the highest severity is {worst.value}." if worst else "."))
    return ComparePage(
        repo_id=repo.id, base=base.sha, head=head.sha, headline=headline, severity=worst.value if worst else None,
        steps=tuple(steps), note=note, repo_url=u.repo(repo.id),
        json_url=f"{u.api_repo(repo.id)}/compare/{base.sha}...{head.sha}", compare_action=f"{u.repo(repo.id)}/compare",
        choices=tuple(choices), base_url=u.revision(repo.id, base.sha), head_url=u.revision(repo.id, head.sha),
    )
