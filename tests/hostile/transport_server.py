"""The real app served as ``hubwatch serve`` serves it (``serve_cmds.serve_app``), on a chosen
HTTP parser and event loop, in a process of its own so that its memory can be read from /proc:

    python -m tests.hostile.transport_server DATABASE_URL HTTP LOOP [HEAD_TIMEOUT_SECONDS]

prints the port it listens on (127.0.0.1, picked by the kernel), then serves until killed.
``GET /_test/slow?seconds=S`` is answered 200 after S seconds (no route of the app is slow on
demand), to show that a slow answer is not cut off by the head timeout.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from storage import open_store
from tests.api.data import seed_history, settings
from tracker.api.app import create_app
from tracker.cli.serve_cmds import listen, serve_app
from tracker.cli.transport import HEAD_TIMEOUT_SECONDS, Stack


def with_slow_route(app: Any) -> Any:
    async def serve(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/_test/slow":
            return await app(scope, receive, send)
        await asyncio.sleep(float(scope["query_string"].decode().removeprefix("seconds=")))
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"4")]})
        await send({"type": "http.response.body", "body": b"slow"})

    return serve


def main(db_url: str, http: str, loop: str, head_timeout: str = str(HEAD_TIMEOUT_SECONDS)) -> None:
    store = open_store(db_url)
    seed_history(store, "org/model", n=3)
    sock = listen("127.0.0.1", 0)
    app = with_slow_route(create_app(store, settings()))
    print(sock.getsockname()[1], flush=True)
    serve_app(app, sock, stack=Stack(http, loop), head_timeout=float(head_timeout))


if __name__ == "__main__":
    main(*sys.argv[1:5])
