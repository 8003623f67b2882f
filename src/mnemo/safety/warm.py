"""The safety layer's patterns compiled ahead of their first use, on a background thread.

A session fences its first turn's context, and scans its first write, bulletin line or extraction soon after
it opens; compiling the patterns for that costs the first caller in a process ~130 ms (the scan's rules
and errand cues) and ~10 ms (the fence). :func:`preload` starts that work while the session opens its stores
and the host gets ready; a caller that arrives first waits for the build in progress (see
:func:`mnemo._once.once`) rather than repeating it.
"""

from __future__ import annotations

import logging
import threading

from . import errands, fence, rules

log = logging.getLogger(__name__)

_started = False
_lock = threading.Lock()


def preload() -> None:
    """Start compiling the scan's and the fence's patterns in the background, once per process; returns at
    once."""
    global _started
    with _lock:
        if _started:
            return
        _started = True
    threading.Thread(target=_compile, name="mnemo-safety-preload", daemon=True).start()


def _compile() -> None:
    try:
        rules.compiled()
        errands._compiled()
        fence._sanitizer()
    except Exception as exc:  # noqa: BLE001 - the first real use compiles again and raises it there
        log.debug("preloading the safety patterns failed: %s", exc)
