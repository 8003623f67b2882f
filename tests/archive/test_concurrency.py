"""Several processes append to one archive at once (one SQLite file, or one PostgreSQL database standing for
several hosts): nothing is lost, everything is searchable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mnemo.storage import open_archive

_WORKERS = 4
_MESSAGES = 500

# Each worker waits for a "go" file so all of them contend at once, then appends its messages one
# transaction at a time (the hardest case for the write lock), a few per batch.
_WORKER = """
import sys, time
from pathlib import Path
from mnemo.storage import open_archive
db, worker, count, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
while not go.exists():
    time.sleep(0.005)
with open_archive(db) as archive:
    sid = archive.start_session(f"worker-{worker}")
    for start in range(0, count, 5):
        archive.append_many(sid, [
            {"role": "user", "content": f"worker{worker} note{n} about concurrency"} for n in range(start, start + 5)
        ])
"""


def test_four_processes_appending_lose_nothing(tmp_path: Path, archive_target):
    db = archive_target
    open_archive(db).close()  # schema in place before the race
    go = tmp_path / "go"
    procs = [
        subprocess.Popen([sys.executable, "-c", _WORKER, str(db), str(w), str(_MESSAGES), str(go)])
        for w in range(_WORKERS)
    ]
    go.touch()
    assert [p.wait(timeout=120) for p in procs] == [0] * _WORKERS
    with open_archive(db) as archive:
        assert archive.count_messages() == _WORKERS * _MESSAGES
        for w in range(_WORKERS):
            assert archive.get_session(f"worker-{w}").message_count == _MESSAGES
            hits = archive.search_messages(f"worker{w}", limit=1000)
            assert len(hits) == _MESSAGES
        assert archive.check_index(repair=False)


def test_processes_creating_the_schema_at_once_all_succeed(archive_target):
    db = archive_target
    code = "import sys; from mnemo.storage import open_archive; open_archive(sys.argv[1]).close()"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(db)]) for _ in range(4)]
    assert [p.wait(timeout=60) for p in procs] == [0] * 4
