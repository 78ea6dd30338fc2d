"""repos.added_by: who added the repo, "operator" or "api" (issue 16, point 2)

A git source an API client added is fetched from public addresses only, its address checked
again at every fetch. Repos stored before this column are the operator's.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""
from alembic import op
import sqlalchemy as sa


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('repos') as batch:
        batch.add_column(sa.Column('added_by', sa.String(length=8), nullable=False, server_default='operator'))


def downgrade() -> None:
    with op.batch_alter_table('repos') as batch:
        batch.drop_column('added_by')
