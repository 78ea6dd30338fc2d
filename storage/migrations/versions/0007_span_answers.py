"""span answers: each advisory span carries its advisory's brief (NULL while withdrawn), and
one index holds the probe, the position range and the answer (issue 17): a querybatch
reads its answer from the index alone. ``advisories.brief`` (0006) is superseded.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""
from alembic import op
import sqlalchemy as sa


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('advisory_spans', schema=None) as batch_op:
        batch_op.add_column(sa.Column('brief', sa.Text(), nullable=True))
        batch_op.drop_index('ix_advisory_spans_probe')
    op.execute(
        "UPDATE advisory_spans SET brief = (SELECT a.brief FROM advisories a"
        " WHERE a.id = advisory_spans.advisory_id AND a.withdrawn IS NULL)"
    )
    with op.batch_alter_table('advisory_spans', schema=None) as batch_op:
        batch_op.create_index('ix_advisory_spans_answer', ['repo_id', 'chain', 'level', 'bucket', 'start_pos',
                                                           'end_pos', 'advisory_id', 'brief'], unique=False)
    # in place (SQLite >= 3.35 too): a batch copy of the table would trip its foreign keys
    op.execute("ALTER TABLE advisories DROP COLUMN brief")


def downgrade() -> None:
    with op.batch_alter_table('advisories', schema=None) as batch_op:
        batch_op.add_column(sa.Column('brief', sa.Text(), nullable=True))
    from storage import commit_rows

    commit_rows.fill_briefs(op.get_bind())
    with op.batch_alter_table('advisory_spans', schema=None) as batch_op:
        batch_op.drop_index('ix_advisory_spans_answer')
        batch_op.create_index('ix_advisory_spans_probe', ['repo_id', 'chain', 'level', 'bucket'], unique=False)
        batch_op.drop_column('brief')
