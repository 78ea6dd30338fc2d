"""advisory brief: each record's ``{"id","modified"}`` pre-encoded, what a querybatch answers
(issue 17): a 1,000-commit batch splices these instead of reading every record it names.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""
from alembic import op
import sqlalchemy as sa


revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('advisories', schema=None) as batch_op:
        batch_op.add_column(sa.Column('brief', sa.Text(), nullable=True))

    from storage import commit_rows

    commit_rows.fill_briefs(op.get_bind())


def downgrade() -> None:
    with op.batch_alter_table('advisories', schema=None) as batch_op:
        batch_op.drop_column('brief')
