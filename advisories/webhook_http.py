"""Stage 7 (emit) helper: the connection a webhook POST goes over (issue 10, shared with 16).

- **Pinned addresses.** The destination check resolves the host and refuses private
  addresses; a second lookup at connect time could answer differently (DNS rebinding). The
  connection goes to the addresses that passed the check, while TLS still verifies the
  certificate against the host name (SNI), as httpcore starts TLS with the request's host.
- **A total wall-clock deadline** per delivery (:mod:`tracker.netio`): a receiver trickling one
  byte per read cannot hold a delivery past it.

Imports: httpx, tracker.netio.
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from tracker.netio import DeadlineTransport


def pinned_client(addresses: Sequence[str], *, timeout: float) -> httpx.Client:
    """A client for one delivery that connects only to ``addresses`` (none: the host, resolved as
    usual); run its request under ``tracker.netio.deadline``."""
    return httpx.Client(transport=DeadlineTransport(addresses, max_connections=1), timeout=httpx.Timeout(timeout),
                        follow_redirects=False, trust_env=False)
