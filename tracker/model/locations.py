"""Layer 0: repository locations as they may be stored and shown.

A git URL can carry credentials (``https://user:TOKEN@host/org/x.git``); they are stripped
before a location is stored or published (issue 16, point 10), so a token in a URL never
reaches the repo list, pages, OSV records, feeds or webhooks. Credentials for private git
servers belong in git's credential helper or ``~/.netrc``, not in the location.
"""

from __future__ import annotations

import re

# scheme://[userinfo@]host... : userinfo ends at the last "@" before the first "/", "?" or "#".
_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#]*)@")
_SECRET_QUERY = re.compile(r"([?&](?:access_token|token|private_token|password|secret|sig|signature)=)[^&#]*", re.I)


def strip_credentials(location: str) -> str:
    """``location`` without the user:password part of a URL or secret-looking query values."""
    m = _USERINFO.match(location)
    if m:
        location = m.group("scheme") + location[m.end():]
    return _SECRET_QUERY.sub(r"\1REDACTED", location) if "?" in location else location


_USERINFO_ANYWHERE = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s'\"<>]*@")


def strip_credentials_in(text: str) -> str:
    """Free text (an error message) with the credentials of every URL in it taken out."""
    return _SECRET_QUERY.sub(r"\1REDACTED", _USERINFO_ANYWHERE.sub(r"\g<scheme>", text))
