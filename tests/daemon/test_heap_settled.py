"""A daemon freezes its startup heap out of the cyclic collector after its first cycle (issue 17):
a full collection of what a daemon holds costs ~80 ms on the benchmark machine, and one that
fell inside a new revision's analysis answer made it 20x slower. A fresh interpreter for each
case: the collector's state is the process's."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.corpus import REPO_ROOT

_DAEMON = textwrap.dedent("""
    import gc, json, sys, tempfile
    from pathlib import Path
    from tests.hubemu import hf_test_env
    hf_test_env()
    from storage import open_store
    from tests.daemon.helpers import make_daemon, tiny_repo
    from tests.hubemu import HubEmulator

    work = Path(tempfile.mkdtemp())
    seen = {"before": gc.get_freeze_count(), "threshold_before": gc.get_threshold()[0]}
    with HubEmulator() as hub:
        store = open_store(f"sqlite:///{work / 'hubwatch.db'}")
        d = make_daemon(store, hub.url)
        seen["idle"] = (len(d.run_once()), gc.get_freeze_count())  # nothing tracked: nothing checked
        hub.add_repo("org/m", tiny_repo(work / "m.git", commits=2).path)
        store.add_repo("org/m", source="org/m", source_kind="hub", backfill="all")
        results = d.run_once()
        seen["first"] = ([r.status for r in results], gc.get_freeze_count(), gc.get_threshold()[0])
        store.mark_due("org/m")  # checked again: settle is called again and does nothing
        seen["second"] = (len(d.run_once()), gc.get_freeze_count())
        store.close()
    print(json.dumps(seen))
""")


def test_the_first_cycle_that_checked_a_repo_freezes_the_heap_once() -> None:
    out = subprocess.run([sys.executable, "-c", _DAEMON], cwd=REPO_ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["before"] == 0 and seen["threshold_before"] == 700
    assert seen["idle"] == [0, 0], "a cycle that checked nothing has not made the check path's imports"
    statuses, frozen, threshold = seen["first"]
    assert statuses == ["ok"]
    assert frozen > 50_000, frozen  # the interpreter, the store, huggingface_hub, the pipeline
    assert threshold == 20_000
    checked, still_frozen = seen["second"]
    assert checked == 1
    # not frozen again (that would add the second cycle's survivors): frozen objects can only go
    assert still_frozen <= frozen, "settled once: later cycles' survivors stay collectable"
