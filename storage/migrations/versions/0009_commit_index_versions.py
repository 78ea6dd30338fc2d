"""commit_index_versions: a per-repo counter raised with every write of its spans (issue 17)

The API keeps each chain's answers in memory and checks this counter, read in the same
statement as the commits' labels, before it answers from them. The sha index also covers
the labels (repo, chain, position), so that statement reads no revision row.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'commit_index_versions',
        sa.Column('repo_id', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column('version', sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint('repo_id'),
    )
    with op.batch_alter_table('revisions', schema=None) as batch_op:
        batch_op.create_index('ix_revisions_sha_label', ['sha', 'repo_id', 'chain', 'chain_pos'], unique=False)
        batch_op.drop_index('ix_revisions_sha')


def downgrade() -> None:
    with op.batch_alter_table('revisions', schema=None) as batch_op:
        batch_op.create_index('ix_revisions_sha', ['sha'], unique=False)
        batch_op.drop_index('ix_revisions_sha_label')
    op.drop_table('commit_index_versions')
