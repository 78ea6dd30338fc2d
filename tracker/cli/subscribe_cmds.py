"""subscribe, subscriptions, unsubscribe: outbound webhooks from the command line.

The same rows and checks as ``/api/v1/subscriptions``: the destination is refused when it is
loopback or private unless ``[webhooks] allow_private_destinations = true``, the secret is
a Standard Webhooks ``whsec_`` secret (a new one by default, printed once).
"""

from __future__ import annotations

from datetime import UTC, datetime

from advisories.webhooks import DestinationRefused, new_secret, validate_subscription
from storage import subscriptions as subs
from tracker.api.rest_subscriptions import apply_patch
from tracker.api.views import iso, subscription_json
from tracker.cli.context import Context
from tracker.errors import HubwatchError, UsageError


def subscribe(ctx: Context) -> int:
    url, repos, secret = ctx.args.url, ctx.args.repos, ctx.args.secret
    try:
        validate_subscription(url, repos, secret, allow_private=ctx.settings.webhooks.allow_private_destinations)
    except DestinationRefused as e:
        raise HubwatchError(f"destination refused: {e}") from e
    except ValueError as e:
        raise UsageError(str(e)) from e
    sub = subs.create_subscription(ctx.store, url=url, repos=repos, secret=secret or new_secret(),
                                   now=datetime.now(UTC))
    if ctx.json:
        ctx.emit(subscription_json(sub, with_secret=True))
        return 0
    print(f"subscribed {sub.id}: {sub.url} ({'all repos' if sub.repos is None else ', '.join(sub.repos)})")
    print(f"secret: {sub.secret}")
    return 0


def subscriptions(ctx: Context) -> int:
    if ctx.args.action:
        return _change(ctx)
    rows = subs.list_subscriptions(ctx.store)
    if ctx.json:
        ctx.emit([subscription_json(s) for s in rows])
        return 0
    if not rows:
        print("no webhook subscriptions; add one with: hubwatch subscribe URL")
        return 0
    for s in rows:
        scope = "all repos" if s.repos is None else ", ".join(s.repos)
        print(f"{s.id}  {s.status:8}  {s.url}  [{scope}]  pending {s.pending}, delivered {s.delivered}, "
              f"failed {s.failed}, failures in a row {s.consecutive_failures}")
        if s.disabled_reason:
            print(f"    {s.disabled_reason}")
        elif s.last_error:
            print(f"    last error: {s.last_error}")
    return 0


def _change(ctx: Context) -> int:
    """subscriptions enable|disable|rotate-secret ID: what PATCH /api/v1/subscriptions/{id} does."""
    action, sub_id = ctx.args.action, ctx.args.id
    if not sub_id:
        raise UsageError(f"subscriptions {action} needs a subscription ID")
    if subs.get_subscription(ctx.store, sub_id) is None:
        raise HubwatchError(f"no subscription {sub_id!r}")
    rotate = action == "rotate-secret"
    status = None if rotate else ("active" if action == "enable" else "disabled")
    try:
        sub = apply_patch(ctx.store, ctx.settings, sub_id, status=status, rotate=rotate, secret=ctx.args.secret)
    except ValueError as e:
        raise UsageError(str(e)) from e
    if ctx.json:
        ctx.emit(subscription_json(sub, with_secret=rotate))
    elif rotate:
        print(f"{sub.id}: new secret {sub.secret}; the old one also signs until {iso(sub.previous_secret_until)}")
    else:
        print(f"{sub.id}: {sub.status}, {sub.pending} deliveries queued")
    return 0


def unsubscribe(ctx: Context) -> int:
    sub_id = ctx.args.id
    try:
        discarded = subs.delete_subscription(ctx.store, sub_id, discard_pending=ctx.args.discard_pending)
    except subs.PendingDeliveries as e:
        raise HubwatchError(f"{e.pending} deliveries are still queued for {sub_id}; enable it and let them go "
                            "out, or pass --discard-pending") from e
    if discarded is None:
        raise HubwatchError(f"no subscription {sub_id!r}")
    if ctx.json:
        ctx.emit({"id": sub_id, "removed": True, "discarded": discarded})
    else:
        print(f"removed {sub_id}" + (f" ({discarded} queued deliveries discarded)" if discarded else ""))
    return 0
