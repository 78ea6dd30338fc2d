"""Stage 7 (emit): outbound webhooks per the Standard Webhooks spec (standardwebhooks.com).

- Secrets are ``whsec_`` + base64 of 24-64 random bytes; the HMAC key is the decoded bytes.
- A message is signed as ``v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`` and sent
  with ``webhook-id``, ``webhook-timestamp`` (Unix seconds) and ``webhook-signature``.
- Destinations are resolved and refused when any address is loopback, private, link-local,
  multicast, unspecified or otherwise not global, unless the caller allows private ones.
  The check runs again at every delivery (DNS answers change) and the POST goes to the
  addresses that passed it (:mod:`advisories.webhook_http`); redirects are never followed.
- During a secret rotation a message carries two signatures (new, then old), space-separated
  as the spec allows, so a receiver verifying with either secret accepts it.

Settings arrive as arguments (layer 2). Imports: stdlib, httpx, advisories.webhook_http, tracker.netio.
"""

from __future__ import annotations

import base64
import binascii
import email.utils
import hashlib
import hmac
import ipaddress
import json
import re
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from advisories.webhook_http import pinned_client
from tracker.netio import Resolver, deadline, forbidden_reason, system_resolver

SECRET_PREFIX = "whsec_"
SECRET_MIN_BYTES, SECRET_MAX_BYTES = 24, 64
URL_MAX = 2000
USER_AGENT = "hubwatch-webhooks/0.1"


class DestinationRefused(ValueError):
    """A webhook URL that hubwatch will not POST to (bad scheme, private address, ...)."""


def new_secret() -> str:
    """A fresh Standard Webhooks secret (32 random bytes)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def secret_key(secret: str) -> bytes:
    """The HMAC key of a ``whsec_`` secret; ValueError when it is not one."""
    if not isinstance(secret, str) or not secret.startswith(SECRET_PREFIX):
        raise ValueError("a webhook secret starts with whsec_")
    body = secret[len(SECRET_PREFIX) :]
    try:
        key = base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except (binascii.Error, ValueError) as e:
        raise ValueError("a webhook secret is whsec_ followed by base64") from e
    if not SECRET_MIN_BYTES <= len(key) <= SECRET_MAX_BYTES:
        raise ValueError(f"a webhook secret holds {SECRET_MIN_BYTES} to {SECRET_MAX_BYTES} bytes")
    return key


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value of one message."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def signed_headers(secrets: Sequence[str], msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The headers of one message, signed with every secret in ``secrets`` (rotation: new, old)."""
    if isinstance(secrets, str):
        secrets = (secrets,)
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(sign(s, msg_id, timestamp, body) for s in secrets),
        "content-type": "application/json",
        "user-agent": USER_AGENT,
    }


def encode_body(payload: Mapping[str, Any]) -> bytes:
    """The exact bytes that are signed and sent."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str).encode(
        "utf-8"
    )


# ---------------------------------------------------------------- destinations
def split_url(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an http(s) URL; DestinationRefused for anything else."""
    if not isinstance(url, str) or not url or len(url) > URL_MAX:
        raise DestinationRefused(f"a webhook URL is an http(s) URL of at most {URL_MAX} characters")
    if any(c.isspace() or ord(c) < 32 for c in url):
        raise DestinationRefused("a webhook URL may not contain whitespace or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:
        raise DestinationRefused(f"not a valid URL: {e}") from e
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise DestinationRefused("a webhook URL must use http or https")
    host = parts.hostname
    if not host:
        raise DestinationRefused("a webhook URL needs a host")
    return scheme, host, port or (443 if scheme == "https" else 80)


def check_destination(
    url: str,
    *,
    allow_private: bool,
    resolve: Resolver | None = None,
    require_resolution: bool = True,
) -> list[str]:
    """Resolve ``url``'s host and refuse it unless every address is public (or allowed).

    Returns the addresses checked (none for a name when private ones are allowed: nothing
    is resolved then). ``require_resolution=False`` accepts a name that does not resolve
    now (subscribing ahead of DNS); the check at delivery time always requires it.
    """
    _, host, port = split_url(url)
    try:
        literal = ipaddress.ip_address(host.strip("[]"))
        addresses = [str(literal)]
    except ValueError:
        if host.lower().rstrip(".") == "localhost" or host.lower().endswith(".localhost"):
            addresses = ["127.0.0.1"]
        elif allow_private:
            return []  # nothing to refuse: the connection itself finds out whether it resolves
        else:
            try:
                addresses = (resolve or system_resolver)(host, port)
            except (OSError, UnicodeError) as e:
                if require_resolution:
                    raise DestinationRefused(f"cannot resolve {host}: {e}") from e
                return []
    if not addresses and require_resolution:
        raise DestinationRefused(f"cannot resolve {host}")
    if not allow_private:
        for address in addresses:
            reason = forbidden_reason(address)
            if reason is not None:
                raise DestinationRefused(
                    f"{host} resolves to a {reason} address ({address}); "
                    "set [webhooks] allow_private_destinations = true to allow it"
                )
    return addresses


_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


def validate_subscription(url: str, repos: Sequence[str] | None, secret: str | None, *, allow_private: bool) -> None:
    """ValueError (DestinationRefused for the URL) when a subscription request is unacceptable.

    A host that does not resolve yet is accepted here; every delivery checks again.
    """
    check_destination(url, allow_private=allow_private, require_resolution=False)
    for r in repos or ():
        if not isinstance(r, str) or not _REPO_ID.match(r):
            raise ValueError(f"invalid repo id {str(r)[:200]!r}: want org/name")
    if secret is not None:
        secret_key(secret)


# ---------------------------------------------------------------- delivery
RETRY_AFTER_MAX_SECONDS = 24 * 3600.0


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one POST achieved: ok only for a 2xx answer; ``retry_after`` from a 429/503."""

    ok: bool
    status_code: int | None = None
    error: str | None = None
    retry_after: float | None = None

    @property
    def busy(self) -> bool:
        """The receiver said it is overloaded: wait before sending it anything else."""
        return self.status_code in (429, 503)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date), capped at a day."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        seconds = float(value)
    else:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, min(seconds, RETRY_AFTER_MAX_SECONDS))


def post(
    url: str,
    *,
    secrets: Sequence[str],
    msg_id: str,
    timestamp: int,
    body: bytes,
    addresses: Sequence[str] = (),
    deadline_seconds: float = 15.0,
) -> Outcome:
    """One signed POST to ``addresses`` (those the destination check passed), all of it within
    ``deadline_seconds``; never follows redirects, never reads more than the status line."""
    headers = signed_headers(secrets, msg_id, timestamp, body)
    client = pinned_client(addresses, timeout=deadline_seconds)
    try:
        with client, deadline(deadline_seconds):
            request = client.build_request("POST", url, content=body, headers=headers)
            response = client.send(request, stream=True, follow_redirects=False)
            try:
                code = response.status_code
                retry_after = parse_retry_after(response.headers.get("retry-after"))
            finally:
                response.close()
    except httpx.HTTPError as e:
        return Outcome(False, None, f"{type(e).__name__}: {e}"[:500])
    if 200 <= code < 300:
        return Outcome(True, code)
    return Outcome(False, code, f"HTTP {code}", retry_after if code in (429, 503) else None)
