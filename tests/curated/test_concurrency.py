"""Point 9: every read-modify-write holds an exclusive lock on ``<file>.lock`` and re-reads under it."""

from __future__ import annotations

import fcntl
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

from mnemo import Add, MemoryStore

from .conftest import loaded

# Each worker waits for a "go" file so all of them contend at once, then adds its own entries.
_WORKER = """
import sys, time
from pathlib import Path
from mnemo import Add, MemoryStore
directory, worker, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
store = MemoryStore(directory, memory_char_limit=1_000_000)
go = directory.parent / "go"
while not go.exists():
    time.sleep(0.005)
for i in range(count):
    store.apply("memory", Add(f"worker {worker} entry {i}"))
"""


def test_lock_file_is_separate_and_private(file_store: MemoryStore, memories: Path) -> None:
    file_store.apply("memory", Add("x"))
    lock = memories / "MEMORY.md.lock"
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600


def test_a_write_waits_while_another_holder_has_the_lock(memories: Path) -> None:
    store = loaded(memories)
    lock_fd = os.open(memories / "MEMORY.md.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock_fd, fcntl.LOCK_EX)
    writer = threading.Thread(target=store.apply, args=("memory", Add("waited")))
    try:
        writer.start()
        time.sleep(0.3)
        assert writer.is_alive(), "the write went ahead while the lock was held"
        assert not (memories / "MEMORY.md").exists()
    finally:
        os.close(lock_fd)
    writer.join(timeout=30)
    assert store.entries("memory") == ("waited",)


def test_two_stores_on_one_directory_do_not_lose_each_others_writes(memories: Path) -> None:
    first, second = loaded(memories), loaded(memories)
    first.apply("memory", Add("from first"))
    second.apply("memory", Add("from second"))
    first.apply("memory", Add("first again"))
    assert first.entries("memory") == ("from first", "from second", "first again")
    assert loaded(memories).entries("memory") == first.entries("memory")


def test_threads_sharing_one_store_lose_no_writes(memories: Path) -> None:
    store = MemoryStore(memories, memory_char_limit=100_000)

    def add_many(worker: int) -> None:
        for i in range(15):
            store.apply("memory", Add(f"thread {worker} entry {i}"))

    threads = [threading.Thread(target=add_many, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    expected = {f"thread {w} entry {i}" for w in range(8) for i in range(15)}
    assert set(loaded(memories).entries("memory")) == expected


def test_eight_processes_adding_concurrently_lose_no_entries(memories: Path) -> None:
    workers, per_worker = 8, 12
    procs = [
        subprocess.Popen([sys.executable, "-c", _WORKER, str(memories), str(w), str(per_worker)])
        for w in range(workers)
    ]
    (memories.parent / "go").touch()
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    entries = loaded(memories, memory_char_limit=1_000_000).entries("memory")
    assert len(entries) == workers * per_worker
    assert set(entries) == {f"worker {w} entry {i}" for w in range(workers) for i in range(per_worker)}
