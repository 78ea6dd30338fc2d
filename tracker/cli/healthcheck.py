"""``python -m tracker.cli.healthcheck``: the container's HEALTHCHECK.

Asks ``/healthz`` on the port the daemon really listens on: ``[server] port`` of the config
(``HUBWATCH_CONFIG``) or ``HUBWATCH_SERVER_PORT``, the same settings ``hubwatch run`` reads,
never a port written into the image. Exit 0 healthy, 1 not.
"""

from __future__ import annotations

import sys
import urllib.request
from collections.abc import Sequence

from tracker.config import load_settings

_ANY = ("", "0.0.0.0", "::", "[::]")


def health_url(host: str, port: int) -> str:
    """Where to ask: loopback when the server listens on every address."""
    if host in _ANY:
        host = "127.0.0.1"
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}/healthz"


def main(argv: Sequence[str] | None = None) -> int:
    try:
        settings = load_settings(None)
        url = health_url(settings.server.host, settings.server.port)
        with urllib.request.urlopen(url, timeout=4) as answer:
            ok = answer.status == 200
    except Exception as e:  # any failure is "unhealthy", said in one line
        print(f"unhealthy: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
