"""Hub emulator: the git smart-HTTP protocol the Hub serves beside its API (``git clone
https://huggingface.co/org/name``), so a client can read the commit graph (parents) that the
API's commit listing leaves out.

Answered by git's own ``git http-backend`` (CGI), as a git server would: protocol v0 and v2
(the ``Git-Protocol`` header), shallow fetches and object filters (``uploadpack.allowFilter``),
gzip request bodies. Only the read side (upload-pack) is served.
"""

from __future__ import annotations

import os
import subprocess
from typing import TYPE_CHECKING

from tests.hubemu.routes import HubError, Request, Response

if TYPE_CHECKING:
    from tests.hubemu.server import HubEmulator

_CONFIG = {"uploadpack.allowFilter": "true", "uploadpack.allowAnySHA1InWant": "false"}


def _backend(hub: HubEmulator, req: Request, tail: str) -> Response:
    if not hub.git_protocol:
        raise HubError(404, "EntryNotFound", f"no git repository at {req.raw_path}")
    state = hub.state(req.repo, files=True)  # deleted/private: 401; gated: 403, as for downloads
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
        "LC_ALL": "C",
        "GIT_PROJECT_ROOT": "/",
        "GIT_HTTP_EXPORT_ALL": "1",
        "PATH_INFO": f"{state.git.path}/{tail}",
        "REQUEST_METHOD": req.method,
        "QUERY_STRING": "&".join(f"{k}={v}" for k, vs in req.query.items() for v in vs),
        "CONTENT_TYPE": req.headers.get("content-type", ""),
        "CONTENT_LENGTH": str(len(req.body)),
        "GIT_CONFIG_COUNT": str(len(_CONFIG)),
    }
    for i, (key, value) in enumerate(_CONFIG.items()):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    if "git-protocol" in req.headers:
        env["GIT_PROTOCOL"] = req.headers["git-protocol"]
    if "content-encoding" in req.headers:
        env["HTTP_CONTENT_ENCODING"] = req.headers["content-encoding"]
    proc = subprocess.run(
        ["git", "-c", "safe.directory=*", "http-backend"],
        input=req.body, capture_output=True, timeout=60, env=env, check=False,
    )
    head, sep, body = proc.stdout.partition(b"\r\n\r\n")
    if not sep:
        raise HubError(500, "InternalError", f"git http-backend: {proc.stderr[:300]!r}")
    status, headers = 200, []
    for line in head.decode("latin-1").split("\r\n"):
        name, _, value = line.partition(":")
        if name.lower() == "status":
            status = int(value.split()[0])
        elif name:
            headers.append((name.strip(), value.strip()))
    return Response(status, headers, body)


def git_refs(hub: HubEmulator, req: Request) -> Response:
    """``GET /{repo}[.git]/info/refs?service=git-upload-pack``: the ref advertisement."""
    if req.query.get("service") != ["git-upload-pack"]:
        raise HubError(403, "Forbidden", "only git-upload-pack is served")
    return _backend(hub, req, "info/refs")


def git_upload_pack(hub: HubEmulator, req: Request) -> Response:
    """``POST /{repo}[.git]/git-upload-pack``: a fetch (wants, shallow, filter) answered as a pack."""
    return _backend(hub, req, "git-upload-pack")


GIT_HANDLERS = {"git_refs": git_refs, "git_upload_pack": git_upload_pack}
GIT_ALLOWED = {"git_upload_pack": ("POST",)}
