"""The thread machinery behind the registry: one reusable worker per provider and purpose.

A dedicated worker per provider (rather than a shared pool) means a provider stuck in a call holds only
its own thread: the others keep being served, and the registry can see that the stuck one is still busy.
Workers are daemon threads, so a stuck provider never holds up interpreter exit. Nothing here refers back to the registry, so a registry nobody holds can be collected.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any

log = logging.getLogger("mnemo.providers")

_Job = Callable[[], Any]
_Done = Callable[[Any], None]


class Lane:
    """A daemon worker running submitted jobs one at a time, in order."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: SimpleQueue[tuple[_Job, _Done | None] | None] = SimpleQueue()
        self._lock = threading.Lock()
        self._pending = 0
        self._thread: threading.Thread | None = None
        self._stopped = False

    @property
    def pending(self) -> int:
        """Jobs submitted and not yet finished, the running one included."""
        return self._pending

    def submit(self, job: _Job, done: _Done | None = None, *, limit: int | None = None) -> bool:
        """Queue ``job``; ``done(result)`` runs after it, once the lane no longer counts it as pending.

        Returns False (and queues nothing) once the lane is stopped or ``limit`` jobs are pending.
        """
        with self._lock:
            if self._stopped or (limit is not None and self._pending >= limit):
                return False
            self._start()
            self._pending += 1
        self._jobs.put((job, done))
        return True

    def start(self) -> None:
        """Start the worker now rather than on first use (threads cannot be started at exit on 3.12)."""
        with self._lock:
            self._start()

    def _start(self) -> None:
        if self._thread is None:
            thread = threading.Thread(target=self._work, name=self._name, daemon=True)
            thread.start()
            self._thread = thread

    def stop(self) -> None:
        """Refuse new jobs; the worker exits once the queued ones are done."""
        with self._lock:
            self._stopped = True
            if self._thread is not None:
                self._jobs.put(None)

    def _work(self) -> None:
        while (item := self._jobs.get()) is not None:
            job, done = item
            result = None
            try:
                result = job()
            except BaseException:  # jobs guard themselves; this keeps the worker alive whatever slips through
                log.exception("%s: job failed", self._name)
            with self._lock:
                self._pending -= 1
            # Only now, with the lane no longer busy, may the waiter learn the result: it may submit
            # the next job at once and must not find this one still counted.
            if done is not None:
                done(result)


class Gather:
    """Collects the results of ``size`` parallel jobs for one waiter with a deadline."""

    __slots__ = ("_lock", "_left", "_all_done", "_results", "_finished", "_closed")

    def __init__(self, size: int) -> None:
        self._lock = threading.Lock()
        self._left = size
        self._all_done = threading.Event()
        self._results: list[Any] = [None] * size
        self._finished = [False] * size
        self._closed = False
        if size == 0:
            self._all_done.set()

    def record(self, index: int, result: Any) -> None:
        """Store job ``index``'s result; ignored once the waiter has given up."""
        with self._lock:
            if self._closed or self._finished[index]:
                return
            self._results[index] = result
            self._finished[index] = True
            self._left -= 1
            if self._left == 0:
                self._all_done.set()

    def collect(self, deadline: float) -> list[tuple[bool, Any]]:
        """Wait until every job finished or ``deadline`` passes; then ``(finished, result)`` per job."""
        self._all_done.wait(max(0.0, deadline - time.monotonic()))
        with self._lock:
            self._closed = True
            return list(zip(self._finished, self._results))


def join_all(threads: list[threading.Thread], deadline: float) -> list[threading.Thread]:
    """Join ``threads`` against one overall monotonic ``deadline``; return those still running."""
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [thread for thread in threads if thread.is_alive()]
