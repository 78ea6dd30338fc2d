"""Hub emulator: fault injection, matched per route / repo / method.

    hub.faults.add("status", route="commits", status=503)            # 5xx
    hub.faults.add("rate_limit", route="model_info", retry_after=7)  # 429 + Retry-After + RateLimit
    hub.faults.add("hang", route="tree", seconds=30)                 # no answer until the client gives up
    hub.faults.add("truncate", route="resolve", keep=10)             # full Content-Length, short body
    hub.faults.add("short", route="resolve", keep=3)                 # a short but well-formed answer
    hub.faults.add("trickle", route="tree", every=0.5)               # the body one byte per `every` s
    hub.faults.add("reset")                                          # connection closed, no response
    hub.faults.add("gated") / add("not_found")                       # 403 GatedRepo / 401 RepoNotFound
    hub.faults.add("slow", seconds=0.2)                              # answer normally, late

``route`` is one of ROUTES or "*"; ``repo`` None matches every repo; ``times`` None = forever.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

ROUTES = (
    "model_info",
    "refs",
    "commits",
    "tree",
    "paths_info",
    "resolve",
    "cdn",
    "list_models",
    "agent",
    "git_refs",
    "git_upload_pack",
)
KINDS = ("status", "rate_limit", "hang", "truncate", "short", "trickle", "reset", "gated", "not_found", "slow")


@dataclass
class Fault:
    kind: str
    route: str = "*"
    repo: str | None = None
    method: str | None = None
    times: int | None = None
    params: dict[str, Any] = field(default_factory=dict)
    hits: int = 0

    def matches(self, route: str, repo: str | None, method: str) -> bool:
        return (
            (self.route == "*" or self.route == route)
            and (self.repo is None or self.repo == repo)
            and (self.method is None or self.method == method)
            and (self.times is None or self.hits < self.times)
        )


class FaultSet:
    """Thread-safe list of active faults; the first match wins and is counted."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    def add(
        self,
        kind: str,
        *,
        route: str = "*",
        repo: str | None = None,
        method: str | None = None,
        times: int | None = None,
        **params: Any,
    ) -> Fault:
        if kind not in KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; one of {KINDS}")
        if route != "*" and route not in ROUTES:
            raise ValueError(f"unknown route {route!r}; one of {ROUTES}")
        fault = Fault(kind, route, repo, method, times, dict(params))
        with self._lock:
            self._faults.append(fault)
        return fault

    def remove(self, fault: Fault) -> None:
        with self._lock:
            self._faults = [f for f in self._faults if f is not fault]

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def take(self, route: str, repo: str | None, method: str) -> Fault | None:
        with self._lock:
            for f in self._faults:
                if f.matches(route, repo, method):
                    f.hits += 1
                    return f
        return None
