"""Stage 1 (source) helper: hold a git source's fetches to public addresses (issue 16, point 2).

A git URL added over the API is checked against the private-address policy when it is added,
but DNS may answer otherwise by the time it is fetched (a rebinding resolver answers a public
address to the check and 127.0.0.1 to the fetch). So :class:`PublicFetchPolicy` resolves the
host again before every network call of git, refuses when any address is not public, and pins
git's connection to the addresses it checked, so git resolves nothing itself:

- ``http(s)``: curl's resolve list (``http.curloptResolve``, git 2.37+; older git is refused,
  since it would ignore the key), redirects off (a redirect would go to a host nobody
  checked), no proxy (a proxy resolves the name itself);
- ``git://``: the checked address in place of the name in the URL;
- ``ssh`` (URL or ``user@host:path``): ``ssh -oHostName=<address>``, host keys still looked
  up under the name, no ``ProxyCommand``.

Local paths, ``file://`` and bundles are refused outright: an API client never names them.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from tracker.errors import SourceRefused
from tracker.netio import Resolver, forbidden_reason, system_resolver

_SCP = re.compile(r"^(?:(?P<user>[A-Za-z0-9._-]+)@)?(?P<host>[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(?!/)(?P<path>.*)$")
_DEFAULT_PORTS = {"http": 80, "https": 443, "git": 9418, "ssh": 22}
_PROXY_ENV = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
CURL_RESOLVE_SINCE = (2, 37)


@dataclass(frozen=True, slots=True)
class FetchPin:
    """How to run one git network call so that it reaches only the checked addresses."""

    location: str  # the URL git is given
    addresses: tuple[str, ...]  # what was checked (and is connected to)
    config: tuple[str, ...] = ()  # extra ``-c key=value`` arguments
    ssh_command: str | None = None
    drop_env: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PublicFetchPolicy:
    """Re-check and pin every fetch of a source that an API client added."""

    resolve: Resolver = system_resolver
    refuse_reason: Callable[[str], str | None] = forbidden_reason  # why an address is refused

    def pin(self, location: str, repo_id: str) -> FetchPin:
        """The pinned form of a fetch of ``location`` now; SourceRefused when it may not be made."""
        scheme, host, port = _split(location, repo_id)
        addresses = self._checked(host, port, repo_id)
        if scheme in ("http", "https"):
            if _git_version() < CURL_RESOLVE_SINCE:
                raise SourceRefused(f"{repo_id}: git {'.'.join(map(str, CURL_RESOLVE_SINCE))} or newer is needed "
                                    "to pin an http(s) fetch to its checked address", repo_id=repo_id)
            # an empty value first: resolve entries from the user's git config are dropped
            config = ["http.followRedirects=false", "http.proxy=", "http.curloptResolve="]
            if not _is_literal(host):
                config.append(f"http.curloptResolve={host}:{port}:{','.join(_bracket(a) for a in addresses)}")
            return FetchPin(location, addresses, tuple(config), drop_env=_PROXY_ENV)
        if scheme == "git":  # the address in the URL: even a proxy command is handed the address
            parts = urlsplit(location)
            netloc = _bracket(addresses[0]) + (f":{parts.port}" if parts.port else "")
            return FetchPin(parts._replace(netloc=netloc).geturl(), addresses[:1])
        ssh = (f"ssh -oBatchMode=yes -oHostName={addresses[0]} -oHostKeyAlias={host} "
               "-oProxyCommand=none -oCanonicalizeHostname=no")
        return FetchPin(location, addresses[:1], ssh_command=ssh)

    def _checked(self, host: str, port: int, repo_id: str) -> tuple[str, ...]:
        if _is_literal(host):
            addresses = [str(ipaddress.ip_address(host))]
        else:
            try:
                addresses = self.resolve(host, port)
            except (OSError, UnicodeError) as e:
                raise SourceRefused(f"{repo_id}: cannot resolve {host}: {e}", repo_id=repo_id) from e
        if not addresses:
            raise SourceRefused(f"{repo_id}: {host} has no address", repo_id=repo_id)
        for address in addresses:
            reason = self.refuse_reason(address)
            if reason is not None:
                raise SourceRefused(f"{repo_id}: {host} now resolves to a {reason} address ({address}); "
                                    "a source added over the API is fetched from public addresses only",
                                    repo_id=repo_id)
        return tuple(addresses)


def _split(location: str, repo_id: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a network git location; SourceRefused for anything else."""
    if "://" in location:
        try:
            parts = urlsplit(location)
            port = parts.port
        except ValueError as e:
            raise SourceRefused(f"{repo_id}: not a valid git URL", repo_id=repo_id) from e
        scheme = parts.scheme.lower()
        if scheme in ("git+ssh", "ssh+git"):
            scheme = "ssh"
        if scheme not in _DEFAULT_PORTS or not parts.hostname:
            raise SourceRefused(f"{repo_id}: a source added over the API is fetched over "
                                "http(s), git or ssh only", repo_id=repo_id)
        return scheme, parts.hostname, port or _DEFAULT_PORTS[scheme]
    m = _SCP.match(location)
    if m is None:
        raise SourceRefused(f"{repo_id}: a source added over the API is never a local path", repo_id=repo_id)
    return "ssh", m.group("host").strip("[]"), 22


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _bracket(address: str) -> str:
    return f"[{address}]" if ":" in address else address


@functools.cache
def _git_version() -> tuple[int, int]:
    try:
        out = subprocess.run(["git", "--version"], capture_output=True, timeout=10, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return (0, 0)
    m = re.search(rb"(\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)
