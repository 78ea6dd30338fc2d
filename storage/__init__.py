"""Layer 2: durable state. SQLModel tables, the Store (domain <-> rows), Alembic migrations.

SQLite by default (one file, WAL), PostgreSQL by URL for several daemons.
"""

from storage.engine import make_engine, migrate
from storage.records import AdvisoryRecord, RepoRecord, RevisionRecord
from storage.store import Store, open_store

__all__ = [
    "AdvisoryRecord",
    "RepoRecord",
    "RevisionRecord",
    "Store",
    "make_engine",
    "migrate",
    "open_store",
]
