"""Layer 3: orchestration of stages 1-7 for one repo (``check_repo``)."""

from tracker.pipeline.check import CheckResult, PipelineOptions, check_repo
from tracker.pipeline.stored import parse_tree, serialise_tree, stored_artifacts

__all__ = [
    "CheckResult",
    "PipelineOptions",
    "check_repo",
    "parse_tree",
    "serialise_tree",
    "stored_artifacts",
]
