"""Stage 8 (read): which sources an API client may add (issue 16, point 2).

A Hub ``org/name`` always. A git URL only with ``[api] allow_git_sources``, only over
https, http, git or ssh, and only to a public address unless ``[webhooks]
allow_private_destinations`` (the webhooks' policy): the API token must not become a way to
make the daemon read a local repository or an internal service. Local paths, ``file://``,
bundles and git's ``<helper>::`` transports are never accepted here (the CLI, run by the
operator, still takes them). A source added here is stored as added by the API, and every
fetch of it checks the address again and is pinned to it (``tracker.hub._gitnet``): DNS may
answer otherwise by then.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from fastapi import HTTPException

from tracker.netio import forbidden_reason, system_resolver

_SCHEMES = ("https", "http", "git", "ssh")
_SCP = re.compile(r"^(?:[A-Za-z0-9._-]+@)?(?P<host>[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(?!/)")


def check_git_source(location: str, *, allow_git: bool, allow_private: bool) -> None:
    """HTTPException (400/403) unless an API client may add this git location."""
    if not allow_git:
        raise HTTPException(403, "only Hub repo ids (org/name) can be added over the API; "
                                 "set [api] allow_git_sources = true to allow git URLs")
    host = _host(location)
    if host is None:
        raise HTTPException(400, f"a git source over the API is an {', '.join(_SCHEMES)} URL; "
                                 "local paths and file:// are not accepted")
    for address in _addresses(host):
        reason = forbidden_reason(address)
        if reason is not None and not allow_private:
            raise HTTPException(403, f"{host} is a {reason} address; set [webhooks] "
                                     "allow_private_destinations = true to allow it")


def _host(location: str) -> str | None:
    if any(c.isspace() or ord(c) < 32 for c in location) or "::" in location.split("/", 1)[0]:
        return None
    if "://" in location:
        try:
            parts = urlsplit(location)
            parts.port  # noqa: B018  (raises on a bad port)
        except ValueError:
            return None
        return parts.hostname if parts.scheme.lower() in _SCHEMES and parts.hostname else None
    m = _SCP.match(location)
    return m.group("host").strip("[]") if m else None


def _addresses(host: str) -> list[str]:
    """The host's addresses; a name that does not resolve is refused (it cannot be checked)."""
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    if host.lower().rstrip(".") == "localhost" or host.lower().endswith(".localhost"):
        return ["127.0.0.1"]
    try:
        return system_resolver(host, 0)
    except (OSError, UnicodeError) as e:
        raise HTTPException(400, f"cannot resolve {host[:200]}") from e
