"""Layer 4 (under the CLI): ``hubwatch audit``, the scanner side of hubwatch's advisories.

inputs (pins from SBOMs, HF caches, models.lock, Python sources) -> an answer (the local
store, :mod:`tracker.audit.local`, or a server, :mod:`tracker.audit.remote`) -> verdicts
(:mod:`tracker.audit.verdicts`) -> a report (:mod:`tracker.audit.formats`).

It may import the read API's query code (to give ``/v1/query``'s answer) and the pipeline
(to read an untracked repo once); only the CLI imports it.
"""

from tracker.audit.pins import Pin
from tracker.audit.verdicts import Found, Verdict, fails, parse_fail_on

__all__ = ["Found", "Pin", "Verdict", "fails", "parse_fail_on"]
