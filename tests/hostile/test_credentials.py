"""Credentials in git URLs are never stored or published (issue 16, point 10)."""

from __future__ import annotations

import pytest

from tracker.model.locations import strip_credentials, strip_credentials_in


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("https://user:TOKEN@host.example/org/x.git", "https://host.example/org/x.git"),
        ("https://TOKEN@host.example/org/x", "https://host.example/org/x"),
        ("https://u:p%40ss@host.example:8443/x", "https://host.example:8443/x"),
        ("ssh://git:pw@host.example/org/x", "ssh://host.example/org/x"),
        ("https://a@b:c@host.example/x", "https://host.example/x"),
        ("https://host.example/x.git?token=abc&ref=main", "https://host.example/x.git?token=REDACTED&ref=main"),
        ("git@host.example:org/x.git", "git@host.example:org/x.git"),  # scp-like: a user, no secret
        ("https://host.example/org/x@v1", "https://host.example/org/x@v1"),  # "@" after the host
        ("org/name", "org/name"),
    ],
)
def test_strip_credentials(given: str, kept: str) -> None:
    assert strip_credentials(given) == kept


def test_strip_credentials_in_free_text() -> None:
    text = "fatal: unable to access 'https://bob:hf_TOKEN@git.example/org/x.git/': Could not resolve host"
    assert strip_credentials_in(text) == "fatal: unable to access 'https://git.example/org/x.git/': Could not resolve host"
