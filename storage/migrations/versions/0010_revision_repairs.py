"""revision repairs and amendments (issue 10): a revision recorded with files unreadable for now
is read again by later polls and amended; amendments are appended to the repo's hash chain

``repos.repair_due_at`` (the soonest pending repair, NULL when none) comes with the claim, so
an unchanged repo with nothing pending costs no query more than before.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('repos') as batch:
        batch.add_column(sa.Column('repair_due_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
    op.create_table(
        'revision_repairs',
        sa.Column('revision_id', sa.Integer(), nullable=False),
        sa.Column('repo_id', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column('base_sha', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column('paths', sa.JSON(), nullable=False),
        sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=12), nullable=False),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('recorded_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column('next_attempt_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column('last_error', sa.Text(), nullable=True),
        sa.Column('done_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(['revision_id'], ['revisions.id']),
        sa.PrimaryKeyConstraint('revision_id'),
    )
    op.create_index('ix_revision_repairs_due', 'revision_repairs', ['repo_id', 'status', 'next_attempt_at'])
    op.create_table(
        'revision_amendments',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('revision_id', sa.Integer(), nullable=False),
        sa.Column('repo_id', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column('after_seq', sa.Integer(), nullable=False),
        sa.Column('reason', sa.Text(), nullable=False),
        sa.Column('before', sa.JSON(), nullable=False),
        sa.Column('severity', sqlmodel.sql.sqltypes.AutoString(length=10), nullable=True),
        sa.Column('chain_hash', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('recorded_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(['revision_id'], ['revisions.id']),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_revision_amendments_repo', 'revision_amendments', ['repo_id', 'id'])
    op.create_index('ix_revision_amendments_revision_id', 'revision_amendments', ['revision_id'])


def downgrade() -> None:
    op.drop_index('ix_revision_amendments_revision_id', table_name='revision_amendments')
    op.drop_index('ix_revision_amendments_repo', table_name='revision_amendments')
    op.drop_table('revision_amendments')
    op.drop_index('ix_revision_repairs_due', table_name='revision_repairs')
    op.drop_table('revision_repairs')
    with op.batch_alter_table('repos') as batch:
        batch.drop_column('repair_due_at')
