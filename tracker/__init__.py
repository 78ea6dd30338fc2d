"""hubwatch's tracking core: sources, snapshots, extraction, diffs, planning, orchestration."""

__version__ = "0.1.0"  # the distribution's version (pyproject.toml); a test keeps them equal
