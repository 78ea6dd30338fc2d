"""Which parser and loop ``serve`` and ``run`` configure uvicorn with (issue 17)."""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from tracker.cli import transport
from tracker.cli.serve_cmds import uvicorn_config
from tracker.cli.timed_h11 import TimedH11Protocol
from tracker.cli.timed_httptools import TimedHttpToolsProtocol


@pytest.fixture(autouse=True)
def fresh_choice() -> Iterator[None]:
    transport.preferred.cache_clear()
    yield
    transport.preferred.cache_clear()


def _without(monkeypatch: pytest.MonkeyPatch, *missing: str) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *a: Any) -> Any:
        return None if name in missing else real(name, *a)

    monkeypatch.setattr(transport.importlib.util, "find_spec", find_spec)


def test_httptools_and_uvloop_are_chosen_explicitly(caplog: pytest.LogCaptureFixture) -> None:
    config = uvicorn_config(object())
    assert config.http.func is TimedHttpToolsProtocol and config.loop == "uvloop"
    assert config.http.keywords == {"head_timeout": transport.HEAD_TIMEOUT_SECONDS}
    assert config.h11_max_incomplete_event_size == transport.MAX_HEAD_BYTES
    assert not [r for r in caplog.records if r.name == "hubwatch"]


def test_h11_and_asyncio_serve_where_those_cannot_import_said_once(monkeypatch: pytest.MonkeyPatch,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    _without(monkeypatch, "uvloop", "httptools")
    with caplog.at_level(logging.WARNING, logger="hubwatch"):
        configs = [uvicorn_config(object()) for _ in range(3)]
    assert {(c.http.func, c.loop) for c in configs} == {(TimedH11Protocol, "asyncio")}
    assert {c.h11_max_incomplete_event_size for c in configs} == {transport.MAX_HEAD_BYTES}
    said = [r.getMessage() for r in caplog.records if r.name == "hubwatch"]
    assert len(said) == 1 and "h11+asyncio" in said[0] and "httptools and uvloop could not be imported" in said[0]


def test_each_is_replaced_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    _without(monkeypatch, "uvloop")
    assert transport.preferred() == transport.Stack("httptools", "asyncio")


def test_a_stack_can_be_forced_and_must_exist() -> None:
    config = uvicorn_config(object(), stack=transport.PURE, lifespan="off", head_timeout=0.5)
    assert (config.http.func, config.loop, config.lifespan) == (TimedH11Protocol, "asyncio", "off")
    assert config.http.keywords == {"head_timeout": 0.5}
    with pytest.raises(ValueError, match="no such stack"):
        transport.Stack("httptools", "trio")
