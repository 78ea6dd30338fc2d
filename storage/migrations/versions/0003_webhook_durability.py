"""webhook durability: failure streaks by time, secret rotation, outbox pruning (issue 10)

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('subscriptions', sa.Column('failing_since', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
    op.add_column('subscriptions', sa.Column('last_success_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
    op.add_column('subscriptions', sa.Column('previous_secret', sqlmodel.sql.sqltypes.AutoString(length=200),
                                             nullable=True))
    op.add_column('subscriptions', sa.Column('previous_secret_until', sqlmodel.sql.sqltypes.UTCDateTime(),
                                             nullable=True))
    op.create_index('ix_deliveries_done', 'deliveries', ['status', 'delivered_at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_deliveries_done', table_name='deliveries')
    with op.batch_alter_table('subscriptions', schema=None) as batch_op:
        batch_op.drop_column('previous_secret_until')
        batch_op.drop_column('previous_secret')
        batch_op.drop_column('last_success_at')
        batch_op.drop_column('failing_since')
