"""advisory_restore.meaning_key: the meaning key of a keyed document at the advisory's parent,
indexed with the content id by repo and path (issue 17)

The lifecycle's lookup returned every open advisory naming a touched path (in a long history
nearly all of them name generation_config.json) and compared them in Python; with the keys
stored it leaves out by index those whose document means something else at the revision.
Existing rows get their keys here, a bounded batch of rows and blobs at a time.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    columns = {c['name'] for c in sa.inspect(op.get_bind()).get_columns('advisory_restore')}
    if 'meaning_key' not in columns:  # a database stamped back to an earlier version keeps its column
        _add_column()

    from storage import restore_rows

    restore_rows.backfill_keys(op.get_bind())


def _add_column() -> None:
    with op.batch_alter_table('advisory_restore', schema=None) as batch_op:
        batch_op.add_column(sa.Column('meaning_key', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True))
        batch_op.drop_index('ix_advisory_restore_repo_path')
        batch_op.create_index('ix_advisory_restore_repo_path_content', ['repo_id', 'path', 'content_id'], unique=False)
        batch_op.create_index('ix_advisory_restore_repo_path_key', ['repo_id', 'path', 'meaning_key'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('advisory_restore', schema=None) as batch_op:
        batch_op.drop_index('ix_advisory_restore_repo_path_key')
        batch_op.drop_index('ix_advisory_restore_repo_path_content')
        batch_op.create_index('ix_advisory_restore_repo_path', ['repo_id', 'path'], unique=False)
        batch_op.drop_column('meaning_key')
