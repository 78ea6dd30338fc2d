"""backfill repairs (issue 10): revisions recorded with files unreadable before 0010 get a
pending repair, so a database upgraded from an older release repairs them too

Found by the words their changes carry ("not readable from the source after several polls");
their next check reads the files again.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""
from datetime import UTC, datetime

from alembic import op


revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    from storage.repairs import backfill

    backfill(op.get_bind(), datetime.now(UTC))


def downgrade() -> None:
    pass  # the repairs stay: they are data, and 0010's tables hold them
