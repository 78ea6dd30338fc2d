"""hubwatch's tracking core: sources, snapshots, extraction, diffs, planning, orchestration."""
