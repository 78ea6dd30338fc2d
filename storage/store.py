"""The Store: domain values in, domain values out; SQL rows never leave this package.

One ``Store`` per process; it is thread-safe (a session per call). Writes that belong
together (a revision, its changes, plan, blobs, advisory and the repo's new head) happen in
one transaction, so a crash leaves either all of a revision or none of it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from sqlalchemy import Engine, bindparam, func, or_, update
from sqlalchemy import select as core_select
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError, OperationalError, StatementError
from sqlmodel import Session, col, select

from storage import commit_rows, history_entries, history_rows, repairs, restore_rows, revision_rows
from storage.blob_cache import BlobCache
from storage.commit_answers import CommitAnswers
from storage.engine import make_engine, make_loop_engine, migrate, plan_once
from storage.records import AdvisoryRecord, NewRevision, RepoRecord, RevisionRecord
from storage.sanitise import bare, clean_text, storable
from storage.tables import (
    AdvisoryEditRow,
    AdvisoryRow,
    BlobRow,
    PlanRow,
    RepoAliasRow,
    RepoRow,
    RevisionAmendmentRow,
    RevisionRow,
)
from storage.trees import parse_tree
from tracker.errors import AlreadyTracked
from tracker.model import Change, Snapshot
from tracker.model.keys import content_key, digest_key, header_key, security_key
from tracker.model.locations import strip_credentials

R = RevisionRow.__table__.c  # type: ignore[attr-defined]
B = BlobRow.__table__.c  # type: ignore[attr-defined]


def open_store(url: str, *, run_migrations: bool = True) -> Store:
    """Open (and migrate) the database at ``url``."""
    engine = make_engine(url)
    if run_migrations:
        migrate(engine)
    return Store(engine)


def utcnow() -> datetime:
    return datetime.now(UTC)


T = TypeVar("T")
PAGE_CONNECTIONS = 8  # PostgreSQL connections kept for history pages
PAGE_READS_NAME = "hubwatch-pages"  # their application_name (pg_stat_activity)


def read_again_if_dropped(read: Callable[..., T]) -> Callable[..., T]:
    """``read(store, ...)`` (a history page: reads only), made once more on fresh connections
    when the first attempt found its PostgreSQL connection dropped (a restarted server, a
    proxy's idle cut): the page pool has no pre-ping to find it before."""

    @functools.wraps(read)
    def again(store: Store, *args: Any, **kwargs: Any) -> T:
        try:
            return read(store, *args, **kwargs)
        except Exception as exc:
            if store.page_reads is store.reads or not _dropped(exc):  # SQLite, a 404, ...: as raised
                raise
            store.page_reads.engine.dispose()  # every kept connection may be gone: connect anew
            return read(store, *args, **kwargs)

    return again


def _dropped(exc: Exception) -> bool:
    """Whether ``exc`` is PostgreSQL's connection gone (asked on PostgreSQL only: psycopg
    imported in a SQLite daemon's process made each new revision's worker answer ~100 ms
    slower to unpickle, benchmarks/new_revision.py)."""
    import psycopg

    if isinstance(exc, psycopg.OperationalError):  # from the driver's cursor (a page's statements)
        return True
    return isinstance(exc, DBAPIError) and (exc.connection_invalidated or isinstance(exc.orig, psycopg.OperationalError))


class LoopBusy(Exception):
    """A read on the event loop could not be made at once: make it in a worker thread."""


class Store:
    """Repos, revisions, blobs, plans and advisories (subscriptions live in storage.outbox)."""

    def __init__(self, engine: Engine):
        self.engine = engine
        # reads that need no transaction: no BEGIN / ROLLBACK round trips on PostgreSQL (on
        # SQLite, leaving autocommit costs a PRAGMA at every return to the pool)
        self.reads = engine if engine.dialect.name == "sqlite" else engine.execution_options(
            isolation_level="AUTOCOMMIT")
        # PostgreSQL: history pages on a pool of their own without the pre-ping round trip (a
        # quarter of a page's CPU, issue 17); a page that finds its connection dropped is read
        # once more on fresh ones (:func:`read_again_if_dropped`)
        # (each statement planned once per connection: :func:`storage.engine.plan_once`)
        self.page_reads = self.reads if engine.dialect.name == "sqlite" else plan_once(make_engine(
            engine.url.render_as_string(hide_password=False), pool_pre_ping=False, pool_size=PAGE_CONNECTIONS,
            connect_args={"application_name": PAGE_READS_NAME},
        )).execution_options(isolation_level="AUTOCOMMIT")
        # SQLite: one connection of its own for the history pages answered on the event loop
        self.loop_reads = make_loop_engine(engine.url.render_as_string(hide_password=False))
        self._loop_busy = threading.Lock()
        self.commit_answers = CommitAnswers()  # this process's kept commit answers (issue 17)
        self.blob_cache = BlobCache()  # blobs this process read or wrote (content-addressed: never stale)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def session(self) -> Iterator[Session]:
        with Session(self.engine, expire_on_commit=False) as s:
            yield s

    def close(self) -> None:
        if self.loop_reads is not None:
            self.loop_reads.dispose()
        if self.page_reads is not self.reads:
            self.page_reads.engine.dispose()
        self.engine.dispose()

    def ping(self) -> bool:
        with self.engine.connect() as c:
            c.exec_driver_sql("SELECT 1")
        return True

    def ping_write(self) -> bool:
        """A committed write that changes nothing: fails when the database cannot be written
        (read-only file or replica, full disk, a lock held for seconds), which ``ping`` misses."""
        with self.engine.connect() as c:
            if self.dialect == "sqlite":
                c.exec_driver_sql("PRAGMA busy_timeout=3000")  # readiness must answer quickly
            else:
                c.exec_driver_sql("SET LOCAL statement_timeout = 3000")  # this transaction only
            c.exec_driver_sql("UPDATE alembic_version SET version_num = version_num")
            c.commit()
        return True

    # ---------------------------------------------------------------- repos
    def add_repo(
        self, repo_id: str, *, source: str, source_kind: str, branch: str = "main", backfill: str = "all",
        now: datetime | None = None, repo_url: str | None = None, replace: bool = False,
        added_by: str = "operator",
    ) -> tuple[RepoRecord, bool]:
        """Track a repo (or re-activate an untracked one). Returns (record, created).

        A repo id already tracked (or once tracked) from another source raises
        :class:`AlreadyTracked` unless ``replace``: reading another repository's history into
        it would mark every earlier revision unreachable. ``repo_url`` (the public URL records
        name) replaces the stored one only when given. ``added_by="api"`` holds the source's
        fetches to public addresses; an active repo keeps that mark when the operator adds it
        again (the stricter one wins until it is untracked).
        Credentials in a URL source are stripped here, so no entry point can store them.
        """
        now = now or utcnow()
        source = strip_credentials(source)
        with self.session() as s:
            row = s.get(RepoRow, repo_id)
            created = row is None
            if row is None:
                row = RepoRow(
                    id=repo_id, source=source, source_kind=source_kind, branch=branch, backfill=backfill,
                    added_at=now, next_check_at=now, repo_url=repo_url, added_by=added_by,
                )
            else:
                if (row.source, row.source_kind) != (source, source_kind) and not replace:
                    raise AlreadyTracked(repo_id, f"{row.source} ({row.source_kind})", source)
                if not row.active or added_by == "api":
                    row.added_by = added_by
                row.active = True
                row.source, row.source_kind, row.branch = source, source_kind, branch
                row.next_check_at = now
                if repo_url:
                    row.repo_url = repo_url
            s.add(row)
            try:
                s.commit()
            except IntegrityError:  # a concurrent track of the same repo won
                s.rollback()
                created = False
            return self._repo(s, repo_id), created

    def untrack(self, repo_id: str) -> bool:
        with self.session() as s:
            row = s.get(RepoRow, repo_id)
            if row is None or not row.active:
                return False
            row.active = False
            row.lease_owner = row.lease_expires_at = None
            s.add(row)
            s.commit()
            return True

    def get_repo(self, repo_id: str) -> RepoRecord | None:
        """One statement, no ORM object: every page of a repo reads it (issue 17)."""
        with self.reads.connect() as conn:
            return _repo_on(conn, repo_id)

    def list_repos(self, *, include_inactive: bool = False) -> list[RepoRecord]:
        with self.session() as s:
            q = select(RepoRow).order_by(col(RepoRow.id))
            if not include_inactive:
                q = q.where(RepoRow.active == True)  # noqa: E712
            rows = s.exec(q).all()
            counts = dict(
                s.exec(select(RevisionRow.repo_id, func.max(RevisionRow.seq)).group_by(col(RevisionRow.repo_id))).all()
            )
            return [_repo_record(r, counts.get(r.id, 0)) for r in rows]

    def _repo(self, s: Session, repo_id: str) -> RepoRecord:
        row = s.get(RepoRow, repo_id)
        assert row is not None
        # seq runs 1, 2, ... per repo and revisions are never deleted: max(seq) is the count,
        # one probe of the (repo_id, seq) index instead of a COUNT(*) over every revision.
        newest = s.exec(select(func.max(RevisionRow.seq)).where(RevisionRow.repo_id == repo_id)).one()
        return _repo_record(row, int(newest or 0))

    def record_poll(
        self, repo_id: str, *, now: datetime, error: str | None = None, error_kind: str | None = None,
        next_check_at: datetime | None = None, changed: bool = False,
    ) -> None:
        """Remember the outcome of one check: the error (or its absence) and the next check time.

        ``repo_id`` may be the id the check began under, before it found the repo renamed."""
        with self.session() as s:
            row = s.get(RepoRow, repo_id)
            if row is None and (alias := s.get(RepoAliasRow, repo_id)) is not None:
                row = s.get(RepoRow, alias.repo_id)
            if row is None:
                return
            row.last_poll_at = now
            if error is None:
                row.last_success_at = now
                row.last_error = row.last_error_kind = None
                row.failures = 0
                if changed:
                    row.last_change_at = now
            else:
                row.last_error = clean_text(error, 2000)
                row.last_error_kind = error_kind
                row.failures += 1
            if next_check_at is not None:
                row.next_check_at = next_check_at
            s.add(row)
            s.commit()

    def mark_due(self, repo_id: str, now: datetime | None = None) -> bool:
        """Make a repo due at once (a Hub webhook or firehose said it moved)."""
        with self.session() as s:
            res = s.execute(
                update(RepoRow).where(col(RepoRow.id) == repo_id, col(RepoRow.active)).values(next_check_at=now or utcnow())
            )
            s.commit()
            return bool(res.rowcount)  # type: ignore[attr-defined]

    def claim_due(self, owner: str, *, now: datetime, limit: int, lease_seconds: int) -> list[RepoRecord]:
        """Lease up to ``limit`` due repos to ``owner``, soonest due first; expired leases are taken over.

        One statement: an UPDATE of the candidates (locked ``FOR UPDATE SKIP LOCKED`` on
        PostgreSQL, so daemons do not even wait on each other) that takes only the ones still
        unleased and RETURNs their rows. Two claimers can never both win a repo, on either
        database, and a batch costs one round trip and no ORM work (issue 17: the claim was the
        largest share of an unchanged repo's CPU after its request).
        """
        params = {"owner": owner, "now": now, "expires": now + timedelta(seconds=lease_seconds), "limit": limit}
        with self.engine.begin() as conn:
            rows = conn.execute(_claim_statement(self.dialect), params).all()
        won = [RepoRecord(**row._mapping, revisions=0) for row in rows]
        return sorted(won, key=lambda r: (r.next_check_at or now, r.id))

    def renew_lease(self, repo_id: str, owner: str, *, now: datetime, lease_seconds: int) -> bool:
        with self.session() as s:
            res = s.execute(
                update(RepoRow)
                .where(col(RepoRow.id) == repo_id, col(RepoRow.lease_owner) == owner)
                .values(lease_expires_at=now + timedelta(seconds=lease_seconds))
            )
            s.commit()
            return bool(res.rowcount)  # type: ignore[attr-defined]

    def release(self, repo_id: str, owner: str) -> None:
        with self.session() as s:
            s.execute(
                update(RepoRow)
                .where(col(RepoRow.id) == repo_id, col(RepoRow.lease_owner) == owner)
                .values(lease_owner=None, lease_expires_at=None)
            )
            s.commit()

    # ---------------------------------------------------------------- blobs
    def get_blob(self, key: str) -> bytes | None:
        return self.get_blobs([key]).get(key)

    def get_blobs(self, keys: Iterable[str]) -> dict[str, bytes]:
        """Several blobs in one query (none for those this process holds); missing keys are
        absent from the result."""
        keys = list(dict.fromkeys(keys))
        out = self.blob_cache.get_many(keys)
        wanted = [k for k in keys if k not in out]
        if wanted:
            with self.reads.connect() as db:
                for i in range(0, len(wanted), 500):
                    rows = db.execute(select(B.key, B.data).where(B.key.in_(wanted[i : i + 500]))).all()
                    found = {k: bytes(v) for k, v in rows}
                    self.blob_cache.put_many(found)
                    out.update(found)
        return out

    # ---------------------------------------------------------------- revisions
    def reachable_shas(self, repo_id: str) -> set[str]:
        """Stored revisions still on the tracked branch (not dropped by a history rewrite)."""
        with self.session() as s:
            return set(s.exec(
                select(RevisionRow.sha).where(RevisionRow.repo_id == repo_id, col(RevisionRow.reachable))
            ).all())

    def mark_unreachable(self, repo_id: str, shas: Iterable[str], *, head: str | None = None) -> None:
        """A history rewrite dropped ``shas`` from the branch; they stay stored, flagged."""
        shas = list(shas)
        with self.session() as s:
            moved: dict[str, Any] = {}
            if shas:
                s.execute(update(RevisionRow).where(
                    col(RevisionRow.repo_id) == repo_id, col(RevisionRow.sha).in_(shas)
                ).values(reachable=False))
                moved["history_version"] = col(RepoRow.history_version) + 1  # pages show reachability
            if head is not None:
                moved["head_sha"] = head
            if moved:
                s.execute(update(RepoRow).where(col(RepoRow.id) == repo_id).values(**moved))
            s.commit()

    def known_shas(self, repo_id: str) -> set[str]:
        # Core on the read connection: an ORM session for one column of rows cost more than the query
        with self.reads.connect() as db:
            return set(db.execute(core_select(R.sha).where(R.repo_id == repo_id)).scalars())

    def last_revision(self, repo_id: str) -> RevisionRecord | None:
        with self.session() as s:
            row = s.exec(
                select(RevisionRow).where(RevisionRow.repo_id == repo_id).order_by(col(RevisionRow.seq).desc()).limit(1)
            ).first()
            return None if row is None else _revision_record(row)

    def record_revision(self, rev: NewRevision, *, now: datetime | None = None) -> bool:
        """Write one revision and everything it produced in one transaction.

        Returns False (and writes nothing) when the revision is already stored: reprocessing,
        a crash and retry, or a second daemon are all no-ops. Text and JSON are cleaned first
        (:mod:`storage.sanitise`); when the database still refuses the content, the revision is
        recorded bare, with a change that says so, so the head moves on (issue 16, point 3).
        """
        now = now or utcnow()
        rev = storable(rev)
        try:
            return self._record_revision(rev, now)
        except (DataError, UnicodeError, ValueError) as e:  # the content, not the database
            why = type(getattr(e, "orig", None) or e).__name__
        except StatementError as e:
            if not isinstance(e.orig, (UnicodeError, ValueError)):
                raise  # the database is unwell: the check is retried
            why = type(e.orig).__name__
        return self._record_revision(bare(rev, why), now)

    def _record_revision(self, rev: NewRevision, now: datetime) -> bool:
        """The write itself, in Core statements (:mod:`storage.revision_rows`): one transaction."""
        with self.engine.connect() as db, db.begin() as transaction:
            stored, last_seq, last_hash, amended = db.execute(
                self._write_start, {"repo": rev.repo_id, "sha": rev.sha}).one()
            if stored is not None:
                return False
            seq, prev_hash = (last_seq + 1, last_hash) if last_seq is not None else (1, "")
            if last_seq is not None and amended:  # an amendment appended after the
                prev_hash = amended  # newest revision is the chain's tip (repairs.chain_tip)
            tree_key = None
            blobs = dict(rev.blobs)
            if rev.tree is not None:
                tree_key = "tree:" + hashlib.sha256(rev.tree).hexdigest()
                blobs[tree_key] = rev.tree
            self._put_blobs(db, blobs)
            chains = commit_rows.load_chains(db, rev.repo_id)
            label, reach, chain_point = commit_rows.label_commit(db, rev.repo_id, rev.parents, chains)
            if chain_point:
                commit_rows.add_chain_point(db, rev.repo_id, label, reach, chains)
            try:
                revision_id = revision_rows.insert_revision(db, {
                    "repo_id": rev.repo_id, "sha": rev.sha, "seq": seq, "parent": rev.parent,
                    "parents": list(rev.parents), "committed_at": rev.committed_at, "title": rev.title,
                    "message": rev.message, "authors": list(rev.authors), "severity": rev.severity,
                    "advisory_id": (rev.advisory or {}).get("id"), "tree_key": tree_key, "reachable": True,
                    "error": rev.error, "chain_hash": chain_hash(prev_hash, rev), "recorded_at": now,
                    "chain": label[0], "chain_pos": label[1],
                })
            except IntegrityError:  # another daemon recorded it between our check and this insert
                transaction.rollback()
                return False
            revision_rows.insert_changes(db, revision_id, rev.changes)
            history_entries.write(db, revision_id, revision_id, fresh=True)  # its page entry, kept
            if rev.plan is not None:
                revision_rows.insert_plan(db, revision_id, rev.plan, rev.plan_delta)
            if rev.unreadable:  # read again by later polls, and the revision amended (issue 10)
                repairs.add_pending(db, revision_id, rev, now)
            if rev.advisory is not None:
                revision_rows.insert_advisory(db, rev.repo_id, rev.sha, rev.advisory, now)
            for record, reason in rev.advisory_updates:
                revision_rows.edit_advisory(db, record, reason)
            if rev.advisory is not None:
                known = (rev.base_sha, rev.base_files) if rev.base_sha and rev.base_files is not None else None
                restore_rows.index_restore(db, rev.repo_id, rev.advisory, new=True, parent_files=known)
            for record, _ in rev.advisory_updates:
                restore_rows.index_restore(db, rev.repo_id, record, new=False)
            if chain_point:  # a branch, rewrite or merge: spans of the repo's advisories may move
                indexed = commit_rows.reindex_repo(db, rev.repo_id, chains)
            else:
                indexed = commit_rows.reindex_repo(db, rev.repo_id, chains, pending_only=True)
                if rev.advisory is not None:
                    commit_rows.index_new_advisory(db, rev.repo_id, rev.advisory, rev.sha, label, chains)
                commit_rows.index_advisories(
                    db, rev.repo_id, {str(r["id"]): r for r, _ in rev.advisory_updates}, chains
                )
            if indexed or rev.advisory is not None or rev.advisory_updates:
                commit_rows.bump_index_version(db, [rev.repo_id])
            if rev.unreachable:
                db.execute(update(RevisionRow.__table__).where(  # type: ignore[arg-type]
                    R.repo_id == rev.repo_id, R.sha.in_(rev.unreachable)).values(reachable=False))
            repos = RepoRow.__table__.c  # type: ignore[attr-defined]
            moved: dict[str, Any] = {"history_version": repos.history_version + 1}  # pages kept per version
            if rev.new_head is not None:
                moved["head_sha"] = rev.new_head
            db.execute(update(RepoRow.__table__).where(repos.id == rev.repo_id).values(**moved))  # type: ignore[arg-type]
            try:
                transaction.commit()
            except IntegrityError:  # another daemon recorded it between our check and commit
                transaction.rollback()
                return False
            self.blob_cache.put_many(blobs)  # stored now (by this write, or one before it)
            return True

    @functools.cached_property
    def _write_start(self) -> Any:
        """What a revision's write reads first, in one statement: whether it is stored already,
        the repo's newest revision (seq, chain hash) and the newest amendment appended after
        that one (:func:`storage.repairs.chain_tip`). Three round trips were one each."""
        repo, sha = bindparam("repo"), bindparam("sha")
        newest = core_select(R.seq).where(R.repo_id == repo).order_by(R.seq.desc()).limit(1).scalar_subquery()
        M = RevisionAmendmentRow.__table__.c  # type: ignore[attr-defined]
        return core_select(
            core_select(R.id).where(R.repo_id == repo, R.sha == sha).scalar_subquery(),
            newest,
            core_select(R.chain_hash).where(R.repo_id == repo).order_by(R.seq.desc()).limit(1).scalar_subquery(),
            core_select(M.chain_hash).where(M.repo_id == repo, M.after_seq >= newest)
            .order_by(M.id.desc()).limit(1).scalar_subquery(),
        )

    def set_head(self, repo_id: str, sha: str | None) -> None:
        with self.session() as s:
            s.execute(update(RepoRow).where(col(RepoRow.id) == repo_id).values(head_sha=sha))
            s.commit()

    def _put_blobs(self, s: Any, blobs: dict[str, bytes]) -> None:
        """Insert content-addressed blobs; one another writer stored first is simply kept.

        ``INSERT ... ON CONFLICT DO NOTHING``: two daemons (or two repos sharing a README)
        writing the same blob at once never fail each other's transaction. Blobs this process
        read or wrote are stored already: not sent again (a tokenizer.json of megabytes).
        """
        blobs = {k: v for k, v in blobs.items() if not self.blob_cache.holds(k)}
        if not blobs:
            return
        rows = [{"key": k, "size": len(v), "data": v} for k, v in blobs.items()]
        for i in range(0, len(rows), 200):
            s.execute(self._blob_insert, rows[i : i + 200])

    @functools.cached_property
    def _blob_insert(self) -> Any:
        """One INSERT, its rows as parameters (an executemany): the statement is compiled once
        per process, where a multi-row VALUES of each revision's blob count was compiled anew
        at every revision (benchmarks/new_revision.py)."""
        if self.dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as dialect_insert
        else:
            from sqlalchemy.dialects.sqlite import insert as dialect_insert  # type: ignore[assignment]
        return dialect_insert(BlobRow.__table__).on_conflict_do_nothing(index_elements=["key"])  # type: ignore[arg-type]

    def history(
        self, repo_id: str, *, limit: int | None = None, before_seq: int | None = None, with_changes: bool = True
    ) -> list[RevisionRecord]:
        """Revisions newest first; ``before_seq`` is the cursor (stable under new arrivals)."""
        with self.engine.connect() as conn:
            return history_rows.history(conn, repo_id, limit=limit, before_seq=before_seq, with_changes=with_changes)

    def history_version(self, repo_id: str) -> tuple[Any, ...] | None:
        """What a page of the repo's history depends on; None when it is not tracked."""
        return self.probe_repo(repo_id).version

    def probe_repo(self, repo_id: str) -> history_rows.RepoProbe:
        """The repo's history version, or the id a former id moved to (see :func:`history_rows.probe`)."""
        with self.reads.connect() as conn:
            return history_rows.probe(conn, repo_id)

    @contextmanager
    def history_reader(self, *, on_loop: bool = False) -> Iterator[history_entries.KeptReader]:
        """A request's probe, repo and page on one connection (one pool checkout). ``on_loop``
        (the caller is the event loop): on :attr:`loop_reads`, which waits at most
        ``LOOP_BUSY_MS`` for a lock; :class:`LoopBusy` when there is none, or it is in use or
        locked (the caller reads in a worker thread instead)."""
        if not on_loop:
            with self.page_reads.connect() as conn:
                yield history_entries.KeptReader(conn, REPO_LOOKUP)
            return
        if self.loop_reads is None or not self._loop_busy.acquire(blocking=False):
            raise LoopBusy("no connection for the event loop")
        try:
            with self.loop_reads.connect() as conn:
                yield history_entries.KeptReader(conn, REPO_LOOKUP)
        except (OperationalError, sqlite3.OperationalError) as exc:  # locked past LOOP_BUSY_MS
            raise LoopBusy(str(exc)) from exc
        finally:
            self._loop_busy.release()

    def history_page(self, repo_id: str, *, before_seq: int | None, limit: int) -> list[history_rows.PageRevision]:
        """What a history page shows of up to ``limit`` revisions (see :func:`history_rows.page`)."""
        with self.reads.connect() as conn:
            return history_rows.page(conn, repo_id, before_seq=before_seq, limit=limit)

    def history_choices(self, repo_id: str, *, limit: int) -> list[tuple[str, str | None, str]]:
        """The newest revisions' (sha, RFC 3339 time, title) (see :func:`history_rows.choices`)."""
        with self.reads.connect() as conn:
            return history_rows.choices(conn, repo_id, limit=limit)

    def history_page_json(self, repo_id: str, *, before_seq: int | None, limit: int) -> list[tuple[int, str]]:
        """The same, as the revisions API's entries, encoded (see :func:`history_rows.page_json`)."""
        with self.reads.connect() as conn:
            return history_rows.page_json(conn, repo_id, before_seq=before_seq, limit=limit)

    def get_revision(self, repo_id: str, rev: str) -> RevisionRecord | None:
        """One revision by full sha or a unique prefix (at least 4 hex digits), with plan."""
        rev = rev.strip().lower()
        if not rev or rev.strip("0123456789abcdef"):
            return None  # never a LIKE pattern: "%" or "_" must not match (issue 16)
        with self.session() as s:
            q = select(RevisionRow).where(RevisionRow.repo_id == repo_id)
            if len(rev) >= 40:
                q = q.where(RevisionRow.sha == rev)
            elif len(rev) >= 4:
                q = q.where(col(RevisionRow.sha).startswith(rev))
            else:
                return None
            rows = s.exec(q.limit(2)).all()
            if len(rows) != 1:
                return None
            row = rows[0]
            assert row.id is not None
            plan_row = s.get(PlanRow, row.id)
            return _revision_record(
                row, self._changes(s, [row.id]).get(row.id, ()),
                plan=plan_row.plan if plan_row else None, delta=plan_row.delta if plan_row else None,
            )

    def snapshot(self, repo_id: str, sha: str) -> Snapshot | None:
        """Rebuild a stored revision's snapshot (tree + stored contents), no source access."""
        rev = self.get_revision(repo_id, sha)
        if rev is None or rev.tree_key is None:
            return None
        tree_bytes = self.get_blob(rev.tree_key)
        if tree_bytes is None:
            return None
        files = parse_tree(tree_bytes)
        found = self.get_blobs([*(content_key(f) for f in files), *(header_key(f) for f in files if f.lfs_sha256 or f.path.endswith(".safetensors"))])
        contents = {f.path: found[content_key(f)] for f in files if content_key(f) in found}
        headers = {f.path: found[header_key(f)] for f in files if header_key(f) in found}
        inside = self.get_blobs([k(f) for f in files if f.lfs_sha256 or f.size for k in (digest_key, security_key)])
        digests = {f.path: inside[digest_key(f)] for f in files if digest_key(f) in inside}
        security = {f.path: inside[security_key(f)] for f in files if security_key(f) in inside}
        return Snapshot(sha=rev.sha, files=files, contents=contents, safetensors_headers=headers,
                        weight_digests=digests, security=security)

    def plan_at(self, repo_id: str, seq: int) -> dict[str, Any] | None:
        """The plan in force at revision ``seq``: the newest stored plan at or before it."""
        with self.session() as s:
            row = s.exec(
                select(PlanRow.plan)
                .join(RevisionRow, col(RevisionRow.id) == col(PlanRow.revision_id))
                .where(RevisionRow.repo_id == repo_id, RevisionRow.seq <= seq)
                .order_by(col(RevisionRow.seq).desc())
                .limit(1)
            ).first()
            return row

    def commit_graph(self, repo_id: str) -> dict[str, tuple[str, ...]]:
        """sha -> parents of every stored revision of the repo (for OSV range queries)."""
        with self.session() as s:
            return {sha: tuple(p or ()) for sha, p in s.exec(
                select(RevisionRow.sha, RevisionRow.parents).where(RevisionRow.repo_id == repo_id)
            ).all()}

    def repos_with_commit(self, sha: str) -> list[str]:
        with self.session() as s:
            return list(s.exec(select(RevisionRow.repo_id).where(RevisionRow.sha == sha)).all())

    def _changes(self, s: Session, revision_ids: list[int]) -> dict[int, tuple[Change, ...]]:
        return history_rows.changes_of(s, revision_ids)

    # ---------------------------------------------------------------- advisories
    def _insert_advisory(self, s: Any, repo_id: str, sha: str, record: dict[str, Any], now: datetime) -> None:
        revision_rows.insert_advisory(s, repo_id, sha, record, now)

    def _edit_advisory(self, s: Any, record: dict[str, Any], reason: str) -> str | None:
        """Store one edit; returns the advisory's repo (None: no such advisory)."""
        return revision_rows.edit_advisory(s, record, reason)

    def update_advisories(self, updates: Iterable[tuple[dict[str, Any], str]]) -> None:
        """Store edited records (each bumps ``modified``); a new version row keeps the old one."""
        with self.session() as s:
            by_repo: dict[str, dict[str, dict[str, Any]]] = {}
            for record, reason in updates:
                repo_id = self._edit_advisory(s, record, reason)
                if repo_id is not None:
                    by_repo.setdefault(repo_id, {})[str(record["id"])] = record
            s.flush()
            for repo_id, records in by_repo.items():
                commit_rows.index_advisories(s, repo_id, records, commit_rows.load_chains(s, repo_id))
                for record in records.values():
                    restore_rows.index_restore(s, repo_id, record, new=False)
            commit_rows.bump_index_version(s, by_repo)
            s.commit()

    def advisories_affecting(self, shas: Iterable[str], *, full: bool = True) -> dict[str, list[dict[str, Any]]]:
        """``sha -> records whose GIT ranges hold it``, from the commit index (no graph walk);
        ``full=False``: only ``{"id", "modified"}`` of each (see :func:`commit_rows.affecting`)."""
        with self.engine.connect() as conn:
            return commit_rows.affecting(conn, shas, full=full)

    def advisories_affecting_json(self, shas: Iterable[str], *, brief: bool,
                                  deadline: float | None = None) -> dict[str, Sequence[str]] | None:
        """``sha -> JSON texts`` of the live records holding it, as stored (no decode, no
        encode; ``brief``: their ``{"id","modified"}``): from the chains' answers kept in
        memory and checked against the index version (:mod:`storage.commit_answers`), the
        same as :func:`commit_rows.affecting_json`. None once past ``deadline``."""
        with self.engine.connect() as conn:
            if self.dialect == "postgresql":  # reads only: no BEGIN, no ROLLBACK round trip
                conn = conn.execution_options(isolation_level="AUTOCOMMIT")
            return self.commit_answers.answer(conn, shas, brief=brief, deadline=deadline)

    def commits_held(self, advisory_id: str, *, limit: int) -> list[str]:
        """Stored commits the advisory's GIT ranges hold (at most ``limit``), from the index."""
        with self.session() as s:
            return commit_rows.held_commits(s, advisory_id, limit=limit)

    def restore_candidates(self, repo_id: str, touched: Iterable[str],
                           head: Mapping[str, tuple[str | None, str | None]] | None = None,
                           ) -> dict[str, dict[str, str | None]]:
        """Open advisories naming a path in ``touched``: ``id -> {path: content at its parent}``;
        with ``head`` (``path -> (content id, meaning key)`` at the revision), only those it may
        restore (:func:`restore_rows.candidates`)."""
        with self.reads.connect() as db:  # paths are stored cleaned (storage.sanitise): so are the keys
            return restore_rows.candidates(db, repo_id, [clean_text(p) for p in touched],
                                           None if head is None else {clean_text(p): v for p, v in head.items()})

    def get_advisory(self, advisory_id: str) -> AdvisoryRecord | None:
        with self.session() as s:
            row = s.get(AdvisoryRow, advisory_id)
            return None if row is None else _advisory_record(row)

    def list_advisories(self, repo_id: str | None = None, *, limit: int | None = None) -> list[AdvisoryRecord]:
        """Advisories, most recently modified first."""
        with self.session() as s:
            q = select(AdvisoryRow)
            if repo_id is not None:
                q = q.where(AdvisoryRow.repo_id == repo_id)
            q = q.order_by(col(AdvisoryRow.modified).desc(), col(AdvisoryRow.id))
            if limit is not None:
                q = q.limit(limit)
            return [_advisory_record(r) for r in s.exec(q).all()]

    def count_advisories(self) -> int:
        with self.session() as s:
            return int(s.exec(select(func.count()).select_from(AdvisoryRow)).one())

    def advisory_versions(self, advisory_id: str) -> list[tuple[int, datetime, str]]:
        with self.session() as s:
            rows = s.exec(
                select(AdvisoryEditRow).where(AdvisoryEditRow.advisory_id == advisory_id).order_by(col(AdvisoryEditRow.version))
            ).all()
            return [(r.version, r.modified, r.reason) for r in rows]


def chain_hash(prev: str, rev: NewRevision) -> str:
    """A hash chaining each revision to the one recorded before it: tampering shows."""
    body = json.dumps(
        [prev, rev.sha, rev.parent, rev.severity, [(c.kind.value, c.path, c.summary) for c in rev.changes]],
        sort_keys=True,
    )
    return hashlib.sha256(body.encode()).hexdigest()


#: The columns of ``repos`` a RepoRecord holds (the lease is the scheduler's, not the record's).
_REPO_FIELDS = (
    "id", "source", "source_kind", "branch", "backfill", "active", "head_sha", "added_at", "last_poll_at",
    "last_success_at", "last_change_at", "last_error", "last_error_kind", "failures", "next_check_at",
    "repo_url", "added_by", "repair_due_at",
)


@functools.cache
def _claim_statement(dialect: str) -> Any:
    """``claim_due``'s UPDATE ... RETURNING, built once per dialect (its parameters are bound)."""
    repos = RepoRow.__table__
    c = repos.c  # type: ignore[attr-defined]
    now = bindparam("now")
    free = or_(c.lease_expires_at.is_(None), c.lease_expires_at < now)
    due = select(c.id).where(c.active, c.next_check_at <= now, free).order_by(c.next_check_at)
    due = due.limit(bindparam("limit"))
    if dialect == "postgresql":
        due = due.with_for_update(skip_locked=True)
    picked = due.subquery("due")
    return (
        update(repos)  # type: ignore[arg-type]
        .where(c.id == picked.c.id, free)  # re-checked: another claimer may have won it meanwhile
        .values(lease_owner=bindparam("owner"), lease_expires_at=bindparam("expires"))
        .returning(*[c[name] for name in _REPO_FIELDS])
    )


_REPO_READ = select(  # type: ignore[call-overload]
    *[RepoRow.__table__.c[name] for name in _REPO_FIELDS],  # type: ignore[attr-defined]
    # seq runs 1, 2, ... per repo: max(seq) is the count, one probe of the (repo_id, seq) index
    select(func.max(RevisionRow.seq)).where(col(RevisionRow.repo_id) == col(RepoRow.id))
    .scalar_subquery().label("newest"),
).where(col(RepoRow.id) == bindparam("id"))


def _repo_on(conn: Any, repo_id: str) -> RepoRecord | None:
    row = conn.execute(_REPO_READ, {"id": repo_id}).first()
    if row is None:
        return None
    fields = dict(row._mapping)
    newest = fields.pop("newest")
    return RepoRecord(**fields, revisions=int(newest or 0))


_REPO_PROCESSORS: dict[str, tuple[Callable[[Any], Any] | None, ...]] = {}


def _repo_processors(dialect: Any) -> tuple[Callable[[Any], Any] | None, ...]:
    """Each of :data:`_REPO_FIELDS`' column types' own conversion of the driver's value (SQLite
    keeps times as text and booleans as integers), per dialect; None where it is the driver's."""
    found = _REPO_PROCESSORS.get(dialect.name)
    if found is None:
        columns = RepoRow.__table__.c  # type: ignore[attr-defined]
        found = _REPO_PROCESSORS.setdefault(dialect.name, tuple(
            columns[name].type.dialect_impl(dialect).result_processor(dialect, None) for name in _REPO_FIELDS))
    return found


def _repo_of_values(dialect: Any, row: Sequence[Any]) -> tuple[RepoRecord, int]:
    """:data:`REPO_LOOKUP`'s row as the record and history counter, each value as the ORM gives
    it back (:func:`_repo_on`)."""
    *values, newest, counter = row
    fields = {name: value if convert is None else convert(value)
              for name, value, convert in zip(_REPO_FIELDS, values, _repo_processors(dialect), strict=True)}
    return RepoRecord(**fields, revisions=int(newest or 0)), counter


#: what :data:`_REPO_READ` reads and the repo's history version, on the driver's cursor: a repo
#: page reads it at every request, and the engine's statement and row machinery cost as much
#: as the read (issue 17)
REPO_LOOKUP = history_rows.RepoLookup(
    (*_REPO_FIELDS, "(SELECT max(seq) FROM revisions WHERE repo_id = repos.id)", "history_version"), _repo_of_values)


def _repo_record(row: RepoRow, revisions: int) -> RepoRecord:
    return RepoRecord(
        id=row.id, source=row.source, source_kind=row.source_kind, branch=row.branch, backfill=row.backfill,
        active=row.active, head_sha=row.head_sha, added_at=row.added_at, last_poll_at=row.last_poll_at,
        last_success_at=row.last_success_at, last_change_at=row.last_change_at, last_error=row.last_error,
        last_error_kind=row.last_error_kind, failures=row.failures, next_check_at=row.next_check_at,
        revisions=revisions, repo_url=row.repo_url, added_by=row.added_by, repair_due_at=row.repair_due_at,
    )


_revision_record = history_rows.revision_record


def _advisory_record(row: AdvisoryRow) -> AdvisoryRecord:
    return AdvisoryRecord(
        id=row.id, repo_id=row.repo_id, sha=row.sha, severity=row.severity, published=row.published,
        modified=row.modified, withdrawn=row.withdrawn, record=row.record,
    )
