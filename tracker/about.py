"""The installed hubwatch version (read from the package metadata when asked, never at import)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def hubwatch_version() -> str:
    """``hubwatch --version`` and the API's version: the installed distribution's."""
    try:
        return version("hubwatch")
    except PackageNotFoundError:
        return "0+unknown"
