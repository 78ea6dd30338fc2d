"""repo_aliases: former ids of renamed repos (issue 10 point 8)

A repo renamed on the Hub moves to its new id with its history; its old id stays findable.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'repo_aliases',
        sa.Column('old_id', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column('repo_id', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column('renamed_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(['repo_id'], ['repos.id']),
        sa.PrimaryKeyConstraint('old_id'),
    )
    op.create_index('ix_repo_aliases_repo_id', 'repo_aliases', ['repo_id'])


def downgrade() -> None:
    op.drop_index('ix_repo_aliases_repo_id', table_name='repo_aliases')
    op.drop_table('repo_aliases')
