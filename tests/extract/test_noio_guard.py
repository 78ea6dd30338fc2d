"""The I/O guard these folders run under does catch I/O from the pure packages."""

from __future__ import annotations

import socket

import pytest

from tests.extract.noio import IOAttempt


def _as_pure_module(source: str) -> None:
    exec(compile(source, "<pure>", "exec"), {"__name__": "tracker.diff.fake_module"})


def test_open_from_pure_code_is_refused() -> None:
    with pytest.raises(IOAttempt, match=r"tracker\.diff\.fake_module"):
        _as_pure_module("open('/etc/hostname').read()")


def test_pathlib_from_pure_code_is_refused() -> None:
    with pytest.raises(IOAttempt):
        _as_pure_module("import pathlib; pathlib.Path('/etc/hostname').read_bytes()")


def test_sockets_are_refused() -> None:
    with pytest.raises(IOAttempt):
        socket.socket()


def test_test_code_itself_may_open_files() -> None:
    with open(__file__, "rb") as f:
        assert f.read(3) == b'"""'
