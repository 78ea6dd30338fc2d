"""Alembic environment: runs against the engine the caller passes in config.attributes."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine
from sqlmodel import SQLModel

import storage.tables  # noqa: F401  (registers the tables on SQLModel.metadata)

target_metadata = SQLModel.metadata


def run_migrations_online() -> None:
    engine = context.config.attributes.get("engine")
    if engine is None:
        engine = create_engine(context.config.get_main_option("sqlalchemy.url"))
    with engine.begin() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=connection.dialect.name == "sqlite",
            compare_type=True,
            transactional_ddl=True,  # one transaction, version row included (storage.engine.migrate)
        )
        # One daemon migrates at a time on PostgreSQL; the others wait on the lock.
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql("SELECT pg_advisory_xact_lock(4242001)")
        context.run_migrations()


run_migrations_online()
