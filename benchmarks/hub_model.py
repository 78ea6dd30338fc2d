"""The whole Hub, on paper and by simulation: how many repos one daemon (or D on PostgreSQL) sustains.

    .venv/bin/python benchmarks/hub_model.py                       # the figures of benchmarks/RESULTS.md
    .venv/bin/python benchmarks/hub_model.py --c-new 0.05 --rho 0.2 # other measured or assumed inputs

Inputs (defaults: the measured figures and stated assumptions of RESULTS.md, "The whole Hub"):

- the Hub's per-token budgets per 5-minute window, API bucket (model_info, commits, tree,
  paths-info, the model listing) and resolver bucket (file and Range reads), by plan;
- the firehose: one listing page lists up to 1,000 pushes, and each read reaches back an
  overlap of 120 s before the previous watermark (tracker/hub/firehose.py);
- per new revision: API and resolver requests, and CPU seconds (benchmarks/new_revision.py);
- per tracked repo per cycle: the firehose pass's CPU (benchmarks/firehose_cost.py);
- the change rates: Hub-wide pushes per day H and per tracked repo per day rho (assumptions).

On paper, per 5-minute window with interval T = 300 s:

    API:      ceil(H * (T + 120) / 86400 / 1000) + N * rho * T / 86400 * r_api  <=  B_api
    resolver: N * rho * T / 86400 * r_res                                        <=  B_res
    CPU:      c_cycle + c_repo * N + N * rho * T / 86400 * c_new                 <=  cores * T

so N_max = min over the three. The simulation replays days of 5-minute windows with Poisson
pushes (and, optionally, one burst a day: an organisation re-uploading many repos at once),
spends each window's budgets on the listing and then on the queued checks, oldest first, and
finds the largest N whose queue drains every day, with the delay from push to record.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections import deque
from dataclasses import dataclass, replace
from datetime import UTC, datetime

WINDOW = 300.0  # seconds: the Hub's rate-limit window, and the daemon's interval here
DAY = 86400.0
PLANS = {  # per 5-minute window: (API, resolvers); huggingface.co/docs/hub/rate-limits
    "free": (1000, 5000),
    "PRO": (2500, 12000),
    "Enterprise": (6000, 50000),
}


@dataclass(frozen=True)
class Inputs:
    hub_pushes_per_day: float = 100_000.0  # H, assumed (see RESULTS.md)
    rho: float = 0.067  # pushes per tracked repo per day: the corpus histories' active spans
    r_api: float = 6.0  # model_info, commits page, tree and the commit graph's 3 git requests (new_revision.py)
    r_res: float = 1.0  # the changed file (a config, template or tokenizer edit)
    c_new: float = 0.04  # CPU seconds per new revision (benchmarks/new_revision.py median; RESULTS.md)
    c_repo: float = 12.3e-6  # CPU seconds per tracked repo per cycle (firehose pass; firehose_cost.py, k = 0)
    c_cycle: float = 0.23  # CPU seconds per cycle, whatever N (firehose_cost.py, k = 0 at N = 1,000)
    cores: float = 1.0  # cores one daemon process can use (the GIL: about one for Python)
    page: int = 1000
    overlap: float = 120.0
    burst: int = 0  # pushes of one burst a day (an org re-uploading its repos), 0: none


def listing_pages(i: Inputs, pushes: float) -> int:
    return max(1, math.ceil(pushes / i.page))


def on_paper(i: Inputs, api: int, res: int, daemons: int = 1, tokens: int = 1) -> dict[str, float]:
    """N_max per bound for ``daemons`` daemons sharing ``tokens`` tokens (budget shared per token)."""
    per_repo = i.rho * WINDOW / DAY  # pushes per tracked repo per window
    pages = listing_pages(i, i.hub_pushes_per_day * (WINDOW + i.overlap) / DAY) * daemons  # each daemon reads it
    api_n = max(0.0, api * tokens - pages) / (per_repo * i.r_api)
    res_n = res * tokens / (per_repo * i.r_res)
    # CPU: every daemon runs the firehose pass over the whole tracked set; the checks are shared
    cpu_room = daemons * (i.cores * WINDOW - i.c_cycle)
    cpu_n = cpu_room / (daemons * i.c_repo + per_repo * i.c_new)
    return {"api": api_n, "resolver": res_n, "cpu": cpu_n, "pages": pages,
            "n_max": min(api_n, res_n, cpu_n)}


def _poisson(rng: random.Random, mean: float) -> int:
    if mean > 50:  # normal approximation, fine at these sizes
        return max(0, round(rng.gauss(mean, math.sqrt(mean))))
    limit, k, p = math.exp(-mean), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def simulate(i: Inputs, n: int, api: int, res: int, *, daemons: int = 1, tokens: int = 1, days: int = 3,
             seed: int = 17) -> dict[str, float]:
    """Windows of pushes and checks over ``days``; the queue at each day's end and the delays."""
    rng = random.Random(seed)
    queue: deque[list[int]] = deque()  # [window of the pushes, how many still pending], oldest first
    pending = 0
    waits: dict[int, int] = {}  # windows waited -> pushes
    per_window = n * i.rho * WINDOW / DAY
    cpu_room = daemons * (i.cores * WINDOW - i.c_cycle) - daemons * i.c_repo * n
    worst_end = 0
    per_day = int(DAY / WINDOW)
    for w in range(int(days * per_day)):
        hub = _poisson(rng, i.hub_pushes_per_day * (WINDOW + i.overlap) / DAY)
        arrivals = _poisson(rng, per_window) + (i.burst if i.burst and w % per_day == 0 else 0)
        if arrivals:
            queue.append([w, arrivals])
            pending += arrivals
        api_left = api * tokens - listing_pages(i, hub) * daemons
        room = 0
        if cpu_room > 0 and api_left > 0:
            room = int(min(api_left / i.r_api, res * tokens / i.r_res, cpu_room / i.c_new))
        while room and queue:
            take = min(room, queue[0][1])
            waits[w - queue[0][0]] = waits.get(w - queue[0][0], 0) + take
            queue[0][1] -= take
            room -= take
            pending -= take
            if not queue[0][1]:
                queue.popleft()
        if (w + 1) % per_day == 0:
            worst_end = max(worst_end, pending)
    served = sum(waits.values())
    p99, seen = 0, 0
    for wait in sorted(waits):
        seen += waits[wait]
        if seen >= 0.99 * served:
            p99 = wait
            break
    return {"left_at_day_end": worst_end, "backlog_end": pending, "p99_wait_windows": p99, "served": served}


def largest_stable(i: Inputs, api: int, res: int, *, daemons: int = 1, tokens: int = 1) -> tuple[int, dict[str, float]]:
    """The largest N (to 2 significant digits) whose queue is empty at the end of every day."""
    lo, hi = 0, 10**9
    best: dict[str, float] = {}
    while hi - lo > max(1, lo // 50):
        mid = (lo + hi) // 2
        out = simulate(i, mid, api, res, daemons=daemons, tokens=tokens)
        if out["left_at_day_end"] == 0 and out["backlog_end"] <= out["served"] / 288 + 1:
            lo, best = mid, out
        else:
            hi = mid
    return lo, best


def report(i: Inputs) -> str:
    lines = [
        f"Inputs: H = {i.hub_pushes_per_day:,.0f} Hub pushes/day, rho = {i.rho} pushes per tracked repo per day, "
        f"r_api = {i.r_api}, r_res = {i.r_res} requests and c_new = {i.c_new * 1e3:.0f} ms CPU per new revision, "
        f"c_repo = {i.c_repo * 1e6:.1f} us per tracked repo per cycle, c_cycle = {i.c_cycle} s, {i.cores} core(s) "
        f"per daemon, interval {WINDOW:.0f} s, burst {i.burst:,} pushes/day.",
        "",
        "| plan | daemons (tokens) | listing pages / window | N_max API | N_max resolver | N_max CPU "
        "| N_max on paper (bound by) | simulated: largest N that drains daily | p99 delay push -> record |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    answers = []
    for plan, (api, res) in PLANS.items():
        for daemons, tokens in ((1, 1), (4, 1), (4, 4)):
            paper = on_paper(i, api, res, daemons, tokens)
            bound = min(("API", "resolver", "CPU"), key=lambda b: paper[{"API": "api"}.get(b, b.lower())])
            n, sim = largest_stable(i, api, res, daemons=daemons, tokens=tokens)
            lines.append(
                f"| {plan} | {daemons} ({tokens}) | {paper['pages']:.0f} | {paper['api']:,.0f} | {paper['resolver']:,.0f} "
                f"| {paper['cpu']:,.0f} | {paper['n_max']:,.0f} ({bound}) | {n:,} "
                f"| {sim.get('p99_wait_windows', 0) * 5:.0f} min |")
            answers.append(f"{plan} {daemons} daemon(s) on {tokens} token(s) {n:,}")
    lines += ["", "Goal (issue 17): what one daemon and N daemons on PostgreSQL sustain within the Hub's per-token "
                  "budgets (1,000 / 2,500 / 6,000 API calls per 5 minutes) and the firehose. Answer (simulated, "
                  "largest N that drains daily): " + "; ".join(answers) + "."]
    lines += ["", "Sensitivity to the Hub's change rate (free plan, one daemon): listing pages per window and N_max:"]
    for h in (10_000, 100_000, 1_000_000, 10_000_000):
        paper = on_paper(replace(i, hub_pushes_per_day=h), *PLANS["free"])
        lines.append(f"- H = {h:,}/day: {paper['pages']:.0f} page(s), N_max {paper['n_max']:,.0f}")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    d = Inputs()
    for name, value in vars(d).items():
        p.add_argument("--" + name.replace("_", "-"), type=type(value), default=value)
    args = p.parse_args()
    print(f"Command: `.venv/bin/python {' '.join(['benchmarks/hub_model.py', *sys.argv[1:]])}` "
          f"({datetime.now(UTC):%Y-%m-%d %H:%M} UTC; deterministic: the model and a seeded simulation)\n")
    print(report(Inputs(**{k: getattr(args, k) for k in vars(d)})))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
