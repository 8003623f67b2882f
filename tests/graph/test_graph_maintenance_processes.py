"""Maintenance across processes: concurrent passes never do the same work twice, and a pass killed midway
(SIGKILL) resumes where it stopped once its lease runs out."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mnemo.graph.maintenance import LEASE_SECONDS
from mnemo.storage import open_graph

DAY = 86_400.0
T0 = 1_700_000_000.0
NOW = T0 + 10 * DAY
EXPECTED = 0.6 * 0.95**10

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _fill(path: Path, count: int) -> None:
    with open_graph(path, clock=lambda: T0) as graph:
        for start in range(0, count, 1_000):
            graph.remember_many({"content": f"fact number {i}", "memory_type": "fact"} for i in range(start, min(count, start + 1_000)))


def _script(path: Path, *, batch: int, pause: float) -> str:
    # A smaller batch and a pause per batch stretch the pass, so that passes overlap and a kill lands midway.
    return textwrap.dedent(
        f"""
        import json, sys, time
        from mnemo.storage import open_graph
        from mnemo.graph import maintenance as m
        m.DECAY_BATCH = {batch}
        phase = m._decay_phase
        def slow(*args, **kwargs):
            time.sleep({pause})
            return phase(*args, **kwargs)
        m._decay_phase = slow
        with open_graph({str(path)!r}) as graph:
            print(json.dumps(graph.maintain(now={NOW}).as_dict()), flush=True)
        """
    )


def _importances(path: Path) -> list[float]:
    conn = sqlite3.connect(path)
    try:
        return [row[0] for row in conn.execute("SELECT importance FROM graph_memories")]
    finally:
        conn.close()


def _state(path: Path) -> tuple:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT pass_at, decay_cursor, lease_owner FROM graph_maintenance").fetchone()
    finally:
        conn.close()


def test_concurrent_passes_from_several_processes_decay_each_memory_once(tmp_path):
    path = tmp_path / "state.db"
    _fill(path, 2_000)
    processes = [
        subprocess.Popen([sys.executable, "-c", _script(path, batch=200, pause=0.05)], stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    reports = [json.loads(p.communicate(timeout=120)[0]) for p in processes]
    assert all(p.returncode == 0 for p in processes)
    ran = [r for r in reports if r["skipped"] is None]
    assert ran and all(r["skipped"] in (None, "busy") for r in reports)
    assert sum(r["decayed"] for r in reports) == 2_000
    assert _importances(path) == pytest.approx([EXPECTED] * 2_000)


def test_a_pass_killed_midway_resumes_where_it_stopped(tmp_path):
    path = tmp_path / "state.db"
    _fill(path, 2_000)
    process = subprocess.Popen([sys.executable, "-c", _script(path, batch=100, pause=0.1)], stdout=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = _state(path) if path.exists() else None
        if state is not None and state[1] > 0:
            break
        time.sleep(0.01)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    pass_at, cursor, owner = _state(path)
    assert pass_at is not None and 0 < cursor < 2_000 and owner is not None  # killed midway, lease left behind
    done = sum(1 for value in _importances(path) if value == pytest.approx(EXPECTED))
    assert 0 < done < 2_000

    with open_graph(path, clock=lambda: time.time()) as graph:
        assert graph.maintain(now=NOW).skipped == "busy"  # the dead process's lease has not run out yet
    with open_graph(path, clock=lambda: time.time() + LEASE_SECONDS + 1) as graph:
        report = graph.maintain(now=NOW, due_only=True)  # a pass in progress is due
    assert report.complete and report.decayed == 2_000 - done
    assert _importances(path) == pytest.approx([EXPECTED] * 2_000)
    assert _state(path)[0] is None and _state(path)[2] is None
