"""Built once per process, whichever thread asks first: for costly constants (compiled patterns) that a
background warm-up may be building while a caller needs them, so the caller waits for that build instead of
repeating it (``functools.cache`` alone lets both threads compute, each holding the GIL the other needs)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def once(build: Callable[[], T]) -> Callable[[], T]:
    """``build``'s result, computed on the first call and returned to every later one; concurrent first
    callers wait for the one computing it. A build that raises is tried again by the next call."""
    lock = threading.Lock()
    cached = functools.cache(build)

    @functools.wraps(build)
    def get() -> T:
        with lock:
            return cached()

    get.cache_info = cached.cache_info  # type: ignore[attr-defined] # as functools.cache offers it
    return get
