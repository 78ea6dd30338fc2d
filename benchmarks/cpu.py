"""CPU time of this process and of its analysis workers, for benchmarks that report CPU beside wall."""

from __future__ import annotations

import multiprocessing
import os
import resource
import time
from pathlib import Path


def process_cpu() -> float:
    """User + system seconds of every thread of this process."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def worker_cpu() -> float:
    """CPU seconds of this process's live multiprocessing children: the analysis workers (forked
    and kept, so RUSAGE_CHILDREN never sees them). Read from each one's process CPU clock (Linux
    lets a process read another's; nanoseconds: an analysis of a few milliseconds shows), else
    from /proc in 10 ms ticks."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for child in multiprocessing.active_children():
        if child.pid is None:
            continue
        try:
            total += time.clock_gettime(_process_clock(child.pid))
            continue
        except OSError:
            pass
        try:
            fields = Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _process_clock(pid: int) -> int:
    """The clock id of ``pid``'s CPU time, as glibc's clock_getcpuclockid makes it (CPUCLOCK_SCHED)."""
    return ((~pid) << 3) | 2
