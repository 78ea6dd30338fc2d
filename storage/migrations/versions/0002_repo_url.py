"""repos.repo_url: the canonical public URL given at track time (issue 15)

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""
from alembic import op
import sqlalchemy as sa


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('repos') as batch:
        batch.add_column(sa.Column('repo_url', sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('repos') as batch:
        batch.drop_column('repo_url')
