"""repos.history_version: a counter every write that changes a repo's history pages bumps

History pages are kept per repo version (issue 17); one primary-key probe of this counter
(with ``added_at``, which tells a repo tracked anew under a former id from the old one)
replaces the newest-revision and newest-rename look-ups.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""
from alembic import op
import sqlalchemy as sa


revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('repos', sa.Column('history_version', sa.BigInteger(), server_default='0', nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('repos') as batch:
        batch.drop_column('history_version')
