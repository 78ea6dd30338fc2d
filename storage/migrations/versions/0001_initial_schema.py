"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-11-30
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table('blobs',
    sa.Column('key', sqlmodel.sql.sqltypes.AutoString(length=120), nullable=False),
    sa.Column('size', sa.Integer(), nullable=False),
    sa.Column('data', sa.LargeBinary(), nullable=False),
    sa.PrimaryKeyConstraint('key')
    )
    op.create_table('repos',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('source', sa.Text(), nullable=False),
    sa.Column('source_kind', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
    sa.Column('branch', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
    sa.Column('backfill', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('active', sa.Boolean(), nullable=False),
    sa.Column('head_sha', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    sa.Column('added_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('last_poll_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('last_success_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('last_change_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('last_error_kind', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=True),
    sa.Column('failures', sa.Integer(), nullable=False),
    sa.Column('next_check_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('lease_owner', sqlmodel.sql.sqltypes.AutoString(length=120), nullable=True),
    sa.Column('lease_expires_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('repos', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_repos_active'), ['active'], unique=False)
        batch_op.create_index(batch_op.f('ix_repos_next_check_at'), ['next_check_at'], unique=False)

    op.create_table('subscriptions',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('url', sa.Text(), nullable=False),
    sa.Column('repos', sa.JSON(), nullable=True),
    sa.Column('secret', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('active', sa.Boolean(), nullable=False),
    sa.Column('consecutive_failures', sa.Integer(), nullable=False),
    sa.Column('disabled_reason', sa.Text(), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('advisories',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('repo_id', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('sha', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('severity', sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
    sa.Column('published', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('modified', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('withdrawn', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('record', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['repo_id'], ['repos.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('advisories', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_advisories_modified'), ['modified'], unique=False)
        batch_op.create_index('ix_advisories_repo_modified', ['repo_id', 'modified'], unique=False)

    op.create_table('deliveries',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('subscription_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('webhook_id', sqlmodel.sql.sqltypes.AutoString(length=120), nullable=False),
    sa.Column('event_type', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('payload', sa.JSON(), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=12), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('next_attempt_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('last_status_code', sa.Integer(), nullable=True),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('delivered_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('lease_owner', sqlmodel.sql.sqltypes.AutoString(length=120), nullable=True),
    sa.Column('lease_expires_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.ForeignKeyConstraint(['subscription_id'], ['subscriptions.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('subscription_id', 'webhook_id', name='uq_deliveries_sub_event')
    )
    with op.batch_alter_table('deliveries', schema=None) as batch_op:
        batch_op.create_index('ix_deliveries_due', ['status', 'next_attempt_at'], unique=False)

    op.create_table('revisions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('repo_id', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('sha', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('parent', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    sa.Column('parents', sa.JSON(), nullable=False),
    sa.Column('committed_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('title', sa.Text(), nullable=False),
    sa.Column('message', sa.Text(), nullable=False),
    sa.Column('authors', sa.JSON(), nullable=False),
    sa.Column('severity', sqlmodel.sql.sqltypes.AutoString(length=10), nullable=True),
    sa.Column('advisory_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    sa.Column('tree_key', sqlmodel.sql.sqltypes.AutoString(length=80), nullable=True),
    sa.Column('reachable', sa.Boolean(), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('chain_hash', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('recorded_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['repo_id'], ['repos.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('repo_id', 'sha', name='uq_revisions_repo_sha')
    )
    with op.batch_alter_table('revisions', schema=None) as batch_op:
        batch_op.create_index('ix_revisions_repo_seq', ['repo_id', 'seq'], unique=False)

    op.create_table('advisory_edits',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('advisory_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('modified', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('reason', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('record', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['advisory_id'], ['advisories.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('advisory_id', 'version', name='uq_advisory_edits_version')
    )
    with op.batch_alter_table('advisory_edits', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_advisory_edits_advisory_id'), ['advisory_id'], unique=False)

    op.create_table('changes',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('revision_id', sa.Integer(), nullable=False),
    sa.Column('idx', sa.Integer(), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
    sa.Column('path', sa.Text(), nullable=False),
    sa.Column('summary', sa.Text(), nullable=False),
    sa.Column('severity', sqlmodel.sql.sqltypes.AutoString(length=10), nullable=True),
    sa.Column('topics', sa.JSON(), nullable=False),
    sa.Column('detail', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['revision_id'], ['revisions.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('revision_id', 'idx', name='uq_changes_revision_idx')
    )
    with op.batch_alter_table('changes', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_changes_revision_id'), ['revision_id'], unique=False)

    op.create_table('plans',
    sa.Column('revision_id', sa.Integer(), nullable=False),
    sa.Column('plan', sa.JSON(), nullable=False),
    sa.Column('delta', sa.JSON(), nullable=True),
    sa.ForeignKeyConstraint(['revision_id'], ['revisions.id'], ),
    sa.PrimaryKeyConstraint('revision_id')
    )



def downgrade() -> None:

    op.drop_table('plans')
    with op.batch_alter_table('changes', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_changes_revision_id'))

    op.drop_table('changes')
    with op.batch_alter_table('advisory_edits', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_advisory_edits_advisory_id'))

    op.drop_table('advisory_edits')
    with op.batch_alter_table('revisions', schema=None) as batch_op:
        batch_op.drop_index('ix_revisions_repo_seq')

    op.drop_table('revisions')
    with op.batch_alter_table('deliveries', schema=None) as batch_op:
        batch_op.drop_index('ix_deliveries_due')

    op.drop_table('deliveries')
    with op.batch_alter_table('advisories', schema=None) as batch_op:
        batch_op.drop_index('ix_advisories_repo_modified')
        batch_op.drop_index(batch_op.f('ix_advisories_modified'))

    op.drop_table('advisories')
    op.drop_table('subscriptions')
    with op.batch_alter_table('repos', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_repos_next_check_at'))
        batch_op.drop_index(batch_op.f('ix_repos_active'))

    op.drop_table('repos')
    op.drop_table('blobs')

