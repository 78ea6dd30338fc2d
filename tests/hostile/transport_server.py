"""The real app served as ``hubwatch serve`` serves it (``serve_cmds.serve_app``), on a chosen
HTTP parser and event loop, in a process of its own so that its memory can be read from /proc:

    python -m tests.hostile.transport_server DATABASE_URL HTTP LOOP

prints the port it listens on (127.0.0.1, picked by the kernel), then serves until killed.
"""

from __future__ import annotations

import sys

from storage import open_store
from tests.api.data import seed_history, settings
from tracker.api.app import create_app
from tracker.cli.serve_cmds import listen, serve_app
from tracker.cli.transport import Stack


def main(db_url: str, http: str, loop: str) -> None:
    store = open_store(db_url)
    seed_history(store, "org/model", n=3)
    sock = listen("127.0.0.1", 0)
    app = create_app(store, settings())
    print(sock.getsockname()[1], flush=True)
    serve_app(app, sock, stack=Stack(http, loop))


if __name__ == "__main__":
    main(*sys.argv[1:4])
