"""history entries (issue 17): each revision's entry in the revisions API and its row in the
repo page, made when it is written, so a page of history is one indexed statement over them

The stored revisions' entries are made here, a thousand revisions at a time, by the code that
makes a new revision's (storage.history_entries).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02
"""
from alembic import op
import sqlalchemy as sa


revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    from storage.history_entries import backfill

    if not sa.inspect(op.get_bind()).has_table('history_entries'):  # a rerun (a test's stamp) keeps it
        _create()
    backfill(op.get_bind())


def _create() -> None:
    op.create_table('history_entries',
    sa.Column('revision_id', sa.Integer(), nullable=False),
    sa.Column('entry', sa.Text(), nullable=False),
    sa.Column('row_head', sa.Text(), nullable=False),
    sa.Column('row_tail', sa.Text(), nullable=False),
    sa.Column('row_advisory', sa.Text(), nullable=True),
    sa.Column('row_option', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['revision_id'], ['revisions.id'], ),
    sa.PrimaryKeyConstraint('revision_id')
    )


def downgrade() -> None:
    op.drop_table('history_entries')
