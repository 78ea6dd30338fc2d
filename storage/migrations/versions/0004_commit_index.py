"""commit and restore indexes: chain labels on revisions, chain points, advisory spans,
open advisories by path and content (issue 17)

Commit queries (``/v1/query`` by commit, ``/v1/querybatch``) answer from these instead of
walking the stored history; the advisory lifecycle finds the advisories a revision may fix
by path and content. Existing revisions and advisories are indexed here.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('revisions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('chain', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('chain_pos', sa.Integer(), nullable=True))
        batch_op.create_index('ix_revisions_sha', ['sha'], unique=False)
        batch_op.create_index('ix_revisions_chain', ['repo_id', 'chain', 'chain_pos'], unique=False)
    op.create_table('chain_points',
    sa.Column('repo_id', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('chain', sa.Integer(), nullable=False),
    sa.Column('pos', sa.Integer(), nullable=False),
    sa.Column('reach', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['repo_id'], ['repos.id'], ),
    sa.PrimaryKeyConstraint('repo_id', 'chain', 'pos')
    )
    op.create_table('advisory_spans',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('advisory_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('repo_id', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('chain', sa.Integer(), nullable=False),
    sa.Column('level', sa.Integer(), nullable=False),
    sa.Column('bucket', sa.Integer(), nullable=False),
    sa.Column('start_pos', sa.BigInteger(), nullable=False),
    sa.Column('end_pos', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['advisory_id'], ['advisories.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('advisory_spans', schema=None) as batch_op:
        batch_op.create_index('ix_advisory_spans_advisory_id', ['advisory_id'], unique=False)
        batch_op.create_index('ix_advisory_spans_probe', ['repo_id', 'chain', 'level', 'bucket'], unique=False)

    op.create_table('advisory_restore',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('advisory_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('repo_id', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('path', sa.Text(), nullable=False),
    sa.Column('content_id', sqlmodel.sql.sqltypes.AutoString(length=80), nullable=False),
    sa.ForeignKeyConstraint(['advisory_id'], ['advisories.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('advisory_restore', schema=None) as batch_op:
        batch_op.create_index('ix_advisory_restore_advisory_id', ['advisory_id'], unique=False)
        batch_op.create_index('ix_advisory_restore_repo_path', ['repo_id', 'path'], unique=False)

    from storage import commit_rows, restore_rows

    commit_rows.rebuild(op.get_bind())
    restore_rows.rebuild(op.get_bind(), meaning_keys=False)  # 0013 adds the keys


def downgrade() -> None:
    op.drop_table('advisory_restore')
    op.drop_table('advisory_spans')
    op.drop_table('chain_points')
    with op.batch_alter_table('revisions', schema=None) as batch_op:
        batch_op.drop_index('ix_revisions_chain')
        batch_op.drop_index('ix_revisions_sha')
        batch_op.drop_column('chain_pos')
        batch_op.drop_column('chain')
